/**
 * One differential configuration run end to end: its videos made (or found in ../shared/media), its manifest
 * written, the loader run over its epochs as a trainer runs it (with a resume point: stopped, its state saved,
 * a new loader resumed from it), every delivered clip taken from its batch and compared with the oracle
 * (`oracle.ts`), and the accounting checked: per epoch `planned = delivered + failed + dropped + skipped`,
 * every failure listed with its cause, batches full where `onClipError: "replace"` keeps them full, each
 * position once. A failure is allowed only for the causes a clean file can have (the window runs past the
 * stream's end by more than `maxPadFraction`, or nothing is on screen in it); any other failure, a wrong clip,
 * or a loader that throws is a {@link Mismatch}.
 * @module
 */
import { videoClassificationLoader } from "../../src/loader/loader.ts";
import type { VideoClassificationLoader } from "../../src/loader/loader.ts";
import type { Batch } from "../../src/loader/batch/collate.ts";
import type { ClipEpochStats } from "../../src/loader/batch/clip_stats.ts";
import type { ClipSpec } from "../../src/loader/clip/clip_spec.ts";
import { resolveLoaderOptions } from "../../src/loader/loader_options.ts";
import { compareAudio, compareClip, type Difference, type TakenClip, videoFacts } from "./oracle.ts";
import type { DiffConfig } from "./config.ts";
import { sourceName, sourcePath } from "./sources.ts";

/** A clip, by what names it in its run. */
export interface ClipRef {
  epoch: number;
  position: number;
  path: string;
  start: number;
  end: number;
}

/** One way a configuration's run differs from the oracle (or breaks the loader's accounting). */
export interface Mismatch {
  kind: Difference["kind"] | "accounting" | "failure" | "loader";
  detail: string;
  /** The clip it concerns, when it concerns one. */
  clip?: ClipRef;
}

/** What one configuration's run covered and found. */
export interface ConfigRun {
  /** Clips delivered and compared; clips failed (with an allowed cause). */
  clips: number;
  failed: number;
  mismatches: Mismatch[];
  /** Worst PSNR of any slot compared (Infinity: all identical). */
  worstPsnr: number;
  /** Clips whose frame indices the loader knew (compared frame for frame). */
  indexed: number;
  /** Clips whose audio was compared. */
  audio: number;
  ms: number;
}

/** Failures a clean file's clip may have: its window asks for more than the stream holds. */
const ALLOWED_FAILURE = /max pad fraction|no frame is on screen/;

/** Runs `config`; see the module docs. Never throws for what the loader does: that is a mismatch. */
export async function runConfig(config: DiffConfig): Promise<ConfigRun> {
  const t0 = performance.now();
  const run: ConfigRun = {
    clips: 0,
    failed: 0,
    mismatches: [],
    worstPsnr: Infinity,
    indexed: 0,
    audio: 0,
    ms: 0,
  };
  const dir = await Deno.makeTempDir({ prefix: "sluice-differential-" });
  try {
    const paths = await Promise.all(config.rows.map((r) => sourcePath(r.source)));
    const ranged = config.rows.some((r) => r.range !== undefined);
    const lines = [ranged ? "path,label,start,end" : "path,label"];
    for (const [i, r] of config.rows.entries()) {
      let range = ",";
      if (r.range !== undefined) {
        const f = await videoFacts(paths[i]);
        const first = Math.min(...f.times.filter(Number.isFinite)), span = f.end - first;
        range = r.range.map((x) => (first + x * span).toFixed(3)).join(",");
      }
      lines.push(ranged ? `${paths[i]},${r.label},${range}` : `${paths[i]},${r.label}`);
    }
    await Deno.writeTextFile(`${dir}/manifest.csv`, lines.join("\n") + "\n");
    const taken = await load(config, `${dir}/manifest.csv`, run);
    const spec = specOf(config);
    await compare(config, paths, spec, taken, run);
  } catch (e) {
    run.mismatches.push({ kind: "loader", detail: `${(e as Error)?.stack ?? e}` });
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
  run.ms = performance.now() - t0;
  return run;
}

/** Runs the loader over the configuration's epochs (resuming once where it says); the clips delivered. */
async function load(config: DiffConfig, manifest: string, run: ConfigRun): Promise<TakenClip[]> {
  const taken: TakenClip[] = [];
  const log: string[] = [];
  const opts = { ...config.options, dataset: manifest, log: (l: string) => log.push(l) };
  const perEpoch = config.rows.length * (config.options.sampler?.clipsPerVideo ?? 1);
  let loader: VideoClassificationLoader = await videoClassificationLoader(opts);
  let batches: Batch[] = [];
  const close = async (complete: (e: ClipEpochStats) => boolean) => {
    checkAccounting(config, loader.stats().clips.epochs.filter(complete), batches, perEpoch, run);
    await loader.close();
    batches = [];
  };
  try {
    for (let epoch = 0; epoch < config.epochs; epoch++) {
      const stopAt = config.resume?.epoch === epoch ? config.resume.batches : Infinity;
      let n = 0;
      for await (const b of loader) {
        take(b, config, taken);
        batches.push(metaOnly(b));
        b[Symbol.dispose]();
        if (++n >= stopAt) break;
      }
      if (n >= stopAt) {
        // A preempted job: the state saved after the batch it took, a new loader resumed from it.
        const state = JSON.parse(JSON.stringify(loader.stateDict()));
        await close((e) => e.epoch < epoch);
        loader = await videoClassificationLoader({ ...opts, resume: state });
        for await (const b of loader) {
          take(b, config, taken);
          batches.push(metaOnly(b));
          b[Symbol.dispose]();
        }
      }
    }
    await close((e) => e.complete);
  } finally {
    await loader.close();
  }
  return taken;
}

/** A batch's clips and labels, kept for the accounting after the batch is disposed. */
function metaOnly(b: Batch): Batch {
  return { clips: b.clips, labels: Int32Array.from(b.labels) } as unknown as Batch;
}

/** The clip spec the loader's door makes of `config`'s options. */
function specOf(config: DiffConfig): ClipSpec {
  return resolveLoaderOptions({ ...config.options, dataset: "-" }).spec;
}

/** Takes each clip of `b` out of its batch: its frames in its own layout as bytes, its audio, its label. */
function take(b: Batch, config: DiffConfig, out: TakenClip[]): void {
  const spec = specOf(config);
  const data = b.toHost();
  const T = spec.numFrames, px = spec.width * spec.height, F = 3 * px;
  for (const [i, meta] of b.clips.entries()) {
    const frames = new Uint8Array(T * F);
    for (let k = 0; k < T; k++) {
      if (config.options.layout === "BCTHW") {
        // [B, 3, T, H, W] → the clip's planar [T, 3, H, W]
        for (let c = 0; c < 3; c++) {
          const at = ((i * 3 + c) * T + k) * px;
          frames.set(asBytes(data.subarray(at, at + px), spec, c), k * F + c * px);
        }
      } else {
        const at = (i * T + k) * F;
        frames.set(asBytes(data.subarray(at, at + F), spec, -1), k * F);
      }
    }
    const clip: TakenClip = { meta, frames, label: b.labels[i] };
    if (b.audio !== undefined) {
      const n = b.audioShape![1] * b.audioShape![2];
      clip.audio = b.audio.slice(i * n, (i + 1) * n);
    }
    out.push(clip);
  }
}

/** Samples back to bytes: a `float32` clip's `(v/255 − mean)/std` undone (channel `c`, or packed when -1). */
function asBytes(x: Uint8Array | Float32Array, spec: ClipSpec, c: number): Uint8Array {
  if (x instanceof Uint8Array) return x;
  return Uint8Array.from(x, (v, i) => {
    const ch = c >= 0 ? c : i % 3;
    return Math.round((v * spec.std[ch] + spec.mean[ch]) * 255);
  });
}

/** The accounting of one loader's complete epochs (`epochs`) and the batches it handed out. */
function checkAccounting(
  config: DiffConfig,
  epochs: ClipEpochStats[],
  batches: Batch[],
  perEpoch: number,
  run: ConfigRun,
): void {
  const bad = (detail: string) => run.mismatches.push({ kind: "accounting", detail });
  const o = config.options;
  for (const e of epochs) {
    const inEpoch = batches.filter((b) => b.clips[0]?.epoch === e.epoch);
    const clips = inEpoch.flatMap((b) => b.clips);
    const sum = e.delivered + e.failed + e.dropped + e.skipped;
    if (e.planned !== perEpoch || sum !== e.planned || e.pending !== 0) {
      bad(
        `epoch ${e.epoch}: planned ${e.planned} (expected ${perEpoch}), delivered ${e.delivered} + failed ` +
          `${e.failed} + dropped ${e.dropped} + skipped ${e.skipped} = ${sum}, pending ${e.pending}`,
      );
    }
    const own = clips.filter((c) => c.replaces === undefined).length;
    const subs = clips.length - own;
    if (own !== e.delivered || subs !== e.replaced || e.replaced > e.failed) {
      bad(
        `epoch ${e.epoch}: batches hold ${own} planned clips and ${subs} substitutes; stats: delivered ` +
          `${e.delivered}, replaced ${e.replaced}, failed ${e.failed}`,
      );
    }
    if (e.failures.length + e.unlisted !== e.failed + e.substitutesFailed) {
      bad(`epoch ${e.epoch}: ${e.failures.length} + ${e.unlisted} failures listed for ${e.failed} failed`);
    }
    const positions = clips.map((c) => c.position);
    if (new Set(positions).size !== positions.length) {
      bad(`epoch ${e.epoch}: a position twice in its batches`);
    }
    if (o.onClipError === "replace" && !o.dropLast) {
      const short = inEpoch.slice(0, -1).filter((b) => b.clips.length !== o.batchSize);
      if (short.length > 0 && e.failed === e.replaced) bad(`epoch ${e.epoch}: ${short.length} short batches`);
    }
    for (const b of inEpoch) {
      if (b.clips.some((c, i) => b.labels[i] !== c.label)) {
        bad(`epoch ${e.epoch}: a batch's labels differ from its clips'`);
      }
    }
    for (const f of e.failures) {
      run.failed++;
      if (!ALLOWED_FAILURE.test(f.error)) {
        run.mismatches.push({
          kind: "failure",
          detail: `${f.stage}: ${f.errorName}: ${f.error}`,
          clip: { epoch: f.epoch, position: f.position, path: f.path, start: f.start, end: f.end },
        });
      }
    }
  }
}

/** Compares every taken clip with the oracle (two at a time: each runs the ffmpeg CLI). */
async function compare(
  config: DiffConfig,
  paths: string[],
  spec: ClipSpec,
  taken: TakenClip[],
  run: ConfigRun,
): Promise<void> {
  const ref = (c: TakenClip): ClipRef => ({
    epoch: c.meta.epoch,
    position: c.meta.position,
    path: c.meta.path,
    start: c.meta.start,
    end: c.meta.end,
  });
  const differences = new Map<TakenClip, Difference[]>();
  let next = 0;
  const worker = async () => {
    while (next < taken.length) {
      const c = taken[next++];
      const row = config.rows[c.meta.video];
      const r = await compareClip(c, spec, { path: paths[c.meta.video], label: row?.label ?? NaN });
      run.clips++;
      if (r.indexed) run.indexed++;
      if (Number.isFinite(r.psnr) || r.psnr === Infinity) run.worstPsnr = Math.min(run.worstPsnr, r.psnr);
      if (r.differences.length > 0) differences.set(c, r.differences);
    }
  };
  await Promise.all([worker(), worker()]);
  if (config.options.audio !== undefined && taken.length > 0) {
    const audioSpec = {
      ...config.options.audio,
      channels: config.options.audio.channels ?? 1,
      samples: taken[0].audio!.length / (config.options.audio.channels ?? 1),
    };
    const byPath = Map.groupBy(taken, (c) => c.meta.path);
    for (const clips of byPath.values()) {
      await compareAudio(clips, { ...spec, audio: audioSpec }, differences);
      run.audio += clips.length;
    }
  }
  for (const [c, ds] of differences) {
    for (const d of ds) run.mismatches.push({ ...d, clip: ref(c) });
  }
}

/** One line for a configuration: its rows, options that matter, and its figures. */
export function describeConfig(c: DiffConfig): string {
  const o = c.options, clip = o.clip;
  const sampling = clip.sampling === "rate"
    ? `rate ${clip.frameRate}`
    : clip.sampling === "stride"
    ? `stride ${clip.stride}`
    : clip.sampling;
  return [
    `${c.rows.length} rows [${c.rows.map((r) => sourceName(r.source)).join("; ")}]`,
    `${clip.numFrames}×${clip.width}x${clip.height} ${sampling} ${clip.resize} ${clip.dtype} ${o.layout}`,
    `${o.backend} batch ${o.batchSize} cpv ${o.sampler?.clipsPerVideo} ${o.sampler?.placement}` +
    `${o.audio ? ` audio ${o.audio.sampleRate}x${o.audio.channels}` : ""}${
      c.resume ? ` resume@${c.resume.epoch}.${c.resume.batches}` : ""
    }`,
  ].join(" | ");
}
