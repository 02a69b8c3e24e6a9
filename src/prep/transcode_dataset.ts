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
  for (const r of all) {
    const clash = Object.keys(r.extra).find((k) => RESERVED_COLUMNS.includes(k));
    if (clash !== undefined) {
      throw new DatasetError(
        `${opts.input}: column "${clash}" is one the prepared manifest writes itself; rename it ` +
          `(reserved: ${RESERVED_COLUMNS.join(", ")})`,
      );
    }
  }
  const rows = takeShard(all, shard);
  const failures: { path: string; error: string }[] = [];
  const planned: { row: SourceRow; rel: string }[] = [];
  // Two inputs that would write the same output (a.mkv and a.mp4) are both refused: neither may win silently.
  // The check covers every input, not only this shard's, so that all shards agree.
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
  await Deno.mkdir(outDir, { recursive: true });

  const tracker = new ProgressTracker("transcode", rows.length);
  for (const _ of failures) tracker.add({ status: "failed", bytesIn: 0, bytesOut: 0 });
  const pool = new WorkerPool(new URL("./transcode_worker.ts", import.meta.url), {
    size: Math.max(1, Math.min(opts.jobs ?? navigator.hardwareConcurrency ?? 1, planned.length || 1)),
  });
  const results = new Map<number, { rel: string; row: SourceRow; outcome: TaskOutcome }>();
  const redone: { path: string; reason: string }[] = [];
  const encoders = new Set<string>();
  const damaged: { path: string; corruptPackets: number }[] = [];
  const { input: _i, outDir: _o, jobs: _j, shard: _s, onProgress, ...encode } = opts;
  const runOne = async ({ row, rel }: { row: SourceRow; rel: string }) => {
    const task: TranscodeTask = {
      index: row.index,
      source: row.source,
      output: `${outDir}/${rel}`,
      options: { ...encode, start: row.start, end: row.end },
    };
    const outcome = await pool.call<TaskOutcome>("prepareVideo", [task]);
    results.set(row.index, { rel, row, outcome });
    if (outcome.status === "failed") {
      failures.push({ path: row.source, error: outcome.error ?? "unknown error" });
    } else if (outcome.error) redone.push({ path: rel, reason: outcome.error });
    if (outcome.encoder) encoders.add(outcome.encoder);
    tracker.add({ ...outcome, mediaSec: outcome.status === "done" ? outcome.facts?.duration ?? 0 : 0 });
    onProgress?.(tracker.snapshot(), { path: row.source, outcome });
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

  const manifestRows = [...results.values()]
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
  const tag = shardTag(shard);
  const manifest = `${outDir}/manifest${tag}.jsonl`;
  await writeJsonl(manifest, manifestRows);
  const failureFile = `${outDir}/failures${tag}.jsonl`;
  failures.sort((a, b) => a.path.localeCompare(b.path));
  if (failures.length > 0) await writeJsonl(failureFile, failures);
  else await Deno.remove(failureFile).catch(() => {});
  damaged.sort((a, b) => a.path.localeCompare(b.path));
  return { progress: tracker.snapshot(), manifest, failures, redone, damaged, encoders: [...encoders] };
}
