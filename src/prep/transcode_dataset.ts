/**
 * `transcodeDataset`: a whole dataset re-encoded at one size, frame rate, codec and keyframe interval.
 * @module
 */

import { WorkerPool } from "../pipeline/worker_pool.ts";
import { readSourceRows, RESERVED_COLUMNS, type SourceRow, writeJsonl } from "./manifest.ts";
import { DatasetError } from "../errors.ts";
import { type ProgressSnapshot, ProgressTracker } from "./progress.ts";
import type { TranscodeOptions } from "./transcode.ts";
import { validateTranscodeOptions } from "./transcode.ts";
import type { TaskOutcome, TranscodeTask } from "./transcode_worker.ts";
import { shardTag, takeShard, type WorkShard } from "./work_shard.ts";
import { findEncoder } from "./encoder.ts";

/** Options of {@link transcodeDataset}. */
export interface TranscodeDatasetOptions extends Omit<TranscodeOptions, "start" | "end"> {
  /** A directory tree `root/<label>/<video>` or a CSV/JSONL manifest (path or URL). */
  input: string;
  /** Where outputs and the manifest go (created if needed). */
  outDir: string;
  /** Videos transcoded at once, one Worker each (default: the number of cores). */
  jobs?: number;
  /** This run's share of the inputs (default: all). */
  shard?: WorkShard;
  /** Called with a snapshot after each video, and with every failure. */
  onProgress?: (s: ProgressSnapshot, last: { path: string; outcome: TaskOutcome }) => void;
}

/** What {@link transcodeDataset} did. */
export interface TranscodeSummary {
  /** Counts, bytes and speed of the run. */
  progress: ProgressSnapshot;
  /** The prepared manifest written (rows of the videos done or kept, in input order). */
  manifest: string;
  /** Inputs that failed, with the reason. */
  failures: { path: string; error: string }[];
  /** Existing outputs that did not match the request and were redone. */
  redone: { path: string; reason: string }[];
  /** Inputs transcoded although the decoder rejected some of their packets (frames held over the gap). */
  damaged: { path: string; corruptPackets: number }[];
  /** Encoders used. */
  encoders: string[];
}

/** The output path (relative to the output directory) of a row. */
export function outputRelative(row: Pick<SourceRow, "relative" | "start" | "end">): string {
  const slash = row.relative.lastIndexOf("/");
  const dot = row.relative.lastIndexOf(".");
  const stem = dot > slash + 1 ? row.relative.slice(0, dot) : row.relative;
  const range = row.start !== undefined || row.end !== undefined
    ? `_${row.start ?? 0}-${row.end ?? "end"}`
    : "";
  return `${stem}${range}.mp4`;
}

/** Refuses an input whose extra columns include one the prepared manifest writes itself. */
function checkReservedColumns(input: string, rows: readonly SourceRow[]): void {
  for (const r of rows) {
    const clash = Object.keys(r.extra).find((k) => RESERVED_COLUMNS.includes(k));
    if (clash !== undefined) {
      throw new DatasetError(
        `${input}: column "${clash}" is one the prepared manifest writes itself; rename it ` +
          `(reserved: ${RESERVED_COLUMNS.join(", ")})`,
      );
    }
  }
}

/** A row to transcode, with its output path relative to the output directory. */
interface PlannedRow {
  row: SourceRow;
  rel: string;
}

/**
 * This shard's rows with their outputs; a row whose output another input would also write (a.mkv and a.mp4) is
 * a failure instead: neither may win silently. The check covers every input, not only this shard's, so that all
 * shards agree.
 */
function planOutputs(
  all: readonly SourceRow[],
  rows: readonly SourceRow[],
): { planned: PlannedRow[]; failures: { path: string; error: string }[] } {
  const failures: { path: string; error: string }[] = [];
  const planned: PlannedRow[] = [];
  const owners = new Map<string, number>();
  for (const r of all) owners.set(outputRelative(r), (owners.get(outputRelative(r)) ?? 0) + 1);
  for (const row of rows) {
    const rel = outputRelative(row);
    if (owners.get(rel)! > 1) {
      failures.push({ path: row.source, error: `another input also maps to ${rel}; rename one of them` });
      continue;
    }
    planned.push({ row, rel });
  }
  return { planned, failures };
}

/** What the run's videos came to, kept as each finishes: outcomes, failures, redone outputs, encoders, progress. */
class TranscodeTally {
  readonly tracker: ProgressTracker;
  readonly results = new Map<number, PlannedRow & { outcome: TaskOutcome }>();
  readonly failures: { path: string; error: string }[];
  readonly redone: { path: string; reason: string }[] = [];
  readonly encoders = new Set<string>();
  readonly damaged: { path: string; corruptPackets: number }[] = [];
  readonly #onProgress: TranscodeDatasetOptions["onProgress"];

  /** Starts the count of `total` videos, `failures` (refused before any ran) already counted. */
  constructor(
    total: number,
    failures: { path: string; error: string }[],
    onProgress: TranscodeDatasetOptions["onProgress"],
  ) {
    this.tracker = new ProgressTracker("transcode", total);
    this.failures = failures;
    for (const _ of failures) this.tracker.add({ status: "failed", bytesIn: 0, bytesOut: 0 });
    this.#onProgress = onProgress;
  }

  /** Records one video's outcome and reports progress. */
  add({ row, rel }: PlannedRow, outcome: TaskOutcome): void {
    this.results.set(row.index, { rel, row, outcome });
    if (outcome.status === "failed") {
      this.failures.push({ path: row.source, error: outcome.error ?? "unknown error" });
    } else if (outcome.error) this.redone.push({ path: rel, reason: outcome.error });
    if (outcome.encoder) this.encoders.add(outcome.encoder);
    this.tracker.add({ ...outcome, mediaSec: outcome.status === "done" ? outcome.facts?.duration ?? 0 : 0 });
    this.#onProgress?.(this.tracker.snapshot(), { path: row.source, outcome });
  }

  /** The prepared manifest's rows: each video done or kept, in input order, with its output's facts. */
  manifestRows(): Record<string, unknown>[] {
    return [...this.results.values()]
      .filter((r) => r.outcome.facts !== undefined)
      .sort((a, b) => a.row.index - b.row.index)
      .map(({ rel, row, outcome }) => {
        const f = outcome.facts!;
        return {
          path: rel,
          label: row.label,
          ...row.extra,
          duration: f.duration,
          frames: f.frames,
          fps: f.fps,
          width: f.width,
          height: f.height,
          codec: f.codec,
          keyframes: f.keyframes,
          source: row.source,
          source_index: row.index,
        };
      });
  }
}

/** Transcodes the planned rows in a pool of Workers (`jobs` of them), recording each outcome in `tally`. */
async function transcodeRows(
  planned: readonly PlannedRow[],
  outDir: string,
  encode: Omit<TranscodeOptions, "start" | "end">,
  jobs: number | undefined,
  tally: TranscodeTally,
): Promise<void> {
  const pool = new WorkerPool(new URL("./transcode_worker.ts", import.meta.url), {
    size: Math.max(1, Math.min(jobs ?? navigator.hardwareConcurrency ?? 1, planned.length || 1)),
  });
  const runOne = async (p: PlannedRow) => {
    const task: TranscodeTask = {
      index: p.row.index,
      source: p.row.source,
      output: `${outDir}/${p.rel}`,
      options: { ...encode, start: p.row.start, end: p.row.end },
    };
    tally.add(p, await pool.call<TaskOutcome>("prepareVideo", [task]));
  };
  // A bounded number of videos in flight (the queue of a million-video shard stays in the plan, not in the pool).
  let next = 0;
  const lane = async () => {
    while (next < planned.length) await runOne(planned[next++]);
  };
  try {
    await Promise.all(Array.from({ length: pool.size * 2 }, lane));
  } finally {
    await pool.close();
  }
}

/**
 * Re-encodes a whole dataset (a directory tree or a CSV/JSONL manifest) into an output
 * directory at one size, frame rate, codec and keyframe interval, `jobs` videos at a time (one Worker each),
 * and writes the prepared manifest (`manifest.jsonl`, or `manifest.shard-I-of-N.jsonl` for shard `I` of `N`;
 * join those with `mergeManifests`). Each output keeps its input's relative path (extension `.mp4`; a row with
 * a `start`/`end` range gets `_<start>-<end>` added), label and extra columns.
 *
 * Resumable: outputs that exist and probe as the request are kept (see `transcode_worker.ts`). Failures are
 * listed (in the summary, and in `failures[.shard-I-of-N].jsonl`) and skipped, never fatal.
 * @param opts the input, the output directory, the target and the jobs ({@link TranscodeDatasetOptions})
 * @returns the counts, the prepared manifest written and the failures
 */
export async function transcodeDataset(opts: TranscodeDatasetOptions): Promise<TranscodeSummary> {
  validateTranscodeOptions(opts);
  findEncoder(opts.codec, opts.encoder); // a missing encoder fails here, once, not once per video
  const shard = opts.shard ?? { index: 0, count: 1, from: "default" };
  const outDir = opts.outDir.replace(/\/+$/, "") || "/";
  const all = await readSourceRows(opts.input);
  checkReservedColumns(opts.input, all);
  const rows = takeShard(all, shard);
  const { planned, failures } = planOutputs(all, rows);
  await Deno.mkdir(outDir, { recursive: true });

  const tally = new TranscodeTally(rows.length, failures, opts.onProgress);
  const { input: _i, outDir: _o, jobs, shard: _s, onProgress: _p, ...encode } = opts;
  await transcodeRows(planned, outDir, encode, jobs, tally);

  const tag = shardTag(shard);
  const manifest = `${outDir}/manifest${tag}.jsonl`;
  await writeJsonl(manifest, tally.manifestRows());
  const failureFile = `${outDir}/failures${tag}.jsonl`;
  failures.sort((a, b) => a.path.localeCompare(b.path));
  if (failures.length > 0) await writeJsonl(failureFile, failures);
  else await Deno.remove(failureFile).catch(() => {});
  const { redone, encoders, damaged } = tally;
  damaged.sort((a, b) => a.path.localeCompare(b.path));
  return { progress: tally.tracker.snapshot(), manifest, failures, redone, damaged, encoders: [...encoders] };
}
