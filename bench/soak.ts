/**
 * Soak (issue 16): the video loader over real files for a long time, epoch after epoch, recording where its
 * memory is and how long its steps take, to show that nothing grows once it has warmed up.
 *
 * Dataset: every file of `../shared/media` that FFmpeg decodes cleanly (H.264 with B-frames and several video
 * streams, MKV, a rotated MOV, 10-bit HEVC, VP8 with alpha, VP9, AV1; 1 frame to 16 s) plus clips generated
 * with the ffmpeg CLI in other codecs and containers (H.264 in MP4 and MPEG-TS with B-frames and audio, HEVC in
 * MKV, VP9 in WebM, MPEG-4 in AVI). Without `../shared` (a user's clone) only the generated clips are used.
 *
 * Per epoch one JSON line goes to `--out` (written as it happens, so a killed soak leaves its data): RSS after
 * the epoch (after a full GC of every heap when run with `--v8-flags=--expose-gc`, as `deno task soak` does) and
 * the peak within it, for this process and the backend child; V8 heap used/total and external memory of the
 * main thread and the decode Workers; live FFmpeg objects (all threads) and those the FinalizationRegistry
 * safety net had to free; clips, failures logged, and step times (`wait`: the loop waiting for its next batch;
 * `step`: from one batch to the next, including the simulated training step `--step-ms`) as p50/p99/max.
 *
 * The summary (stdout; `--json` for one JSON object) gives robust slopes after the warm-up (Theil–Sen: the median
 * of the slopes between every pair of epochs, so a single jump or outlier cannot fake a trend) of RSS, V8 heap
 * and live FFmpeg objects, and the p99 step time; `flat` is true when each slope is within its bound
 * (`--max-rss-kib` per epoch, `--max-heap-kib` per epoch, 0.1 FFmpeg objects per epoch). Buffer reuse on the hot
 * path shows here as lower p99 step times and lower peaks at the same flat slope: compare two runs, e.g. with and
 * without `--slots N` (the loader's batch slots: batches assembled in N reused buffers, clips decoded into them).
 * `--retain-batches` keeps every batch alive (the leaked-tensor bug) to show that the check catches a leak.
 *
 * Run: `deno task soak [--minutes 10 | --epochs N] [--backend inprocess|subprocess] [--slots N] [--out FILE.jsonl]
 * [--json]`
 * (`deno task soak` = `deno run -A --v8-flags=--expose-gc bench/soak.ts`). Exit status 1 when not flat.
 * @module
 */

import { parseArgs } from "node:util";
import { procRss } from "../src/tune/proc.ts";
import { videoClassificationLoader } from "../src/loader/loader.ts";
import type { VideoDataset } from "../src/dataset/dataset.ts";
import {
  type ClipSpec,
  decodableSharedMedia,
  generateClip,
  SHARED_MEDIA_DIR,
} from "../tests/helpers/media.ts";

/** One epoch of the soak, as written to the JSONL file. */
export interface SoakEpoch {
  epoch: number;
  /** Seconds since the soak started, at the end of this epoch. */
  t: number;
  wall: number;
  clips: number;
  batches: number;
  /** Failure lines the loader logged this epoch. */
  failures: number;
  /** Milliseconds: waiting for the next batch, and from one batch to the next. */
  waitMs: Quantiles;
  stepMs: Quantiles;
  /** Bytes. */
  rss: number;
  rssPeak: number;
  childRss: number | null;
  childRssPeak: number | null;
  heapUsed: number;
  heapTotal: number;
  external: number;
  workerHeapUsed: number;
  workerHeapTotal: number;
  workerExternal: number;
  /** FFmpeg objects alive (all threads), and freed by the safety net instead of their owner (leaks). */
  nativeLive: number;
  nativeFinalized: number;
  /** The same per FFmpeg object class (all threads), to tell which one leaks. */
  nativeLiveByClass: Record<string, number>;
  nativeFinalizedByClass: Record<string, number>;
  /** Whether heaps were collected before sampling. */
  gc: boolean;
}

/** p50, p99 and max of a sample. */
export interface Quantiles {
  p50: number;
  p99: number;
  max: number;
}

/** The soak's verdict; see the module docs. */
export interface SoakSummary {
  epochs: number;
  warmup: number;
  minutes: number;
  backend: string;
  /** The loader's batch slots (null: a new buffer per batch). */
  slots: number | null;
  videos: number;
  clipsPerEpoch: number;
  /** Theil–Sen slopes after warm-up, per epoch. */
  slopes: {
    rssKiB: number;
    childRssKiB: number | null;
    heapKiB: number;
    nativeObjects: number;
  };
  /** RSS after warm-up, MiB: first, last, max. */
  rssMiB: { first: number; last: number; max: number };
  /** Step times over all steps after warm-up, ms. */
  stepMs: Quantiles;
  waitMs: Quantiles;
  failures: number;
  bounds: { rssKiB: number; heapKiB: number; nativeObjects: number };
  flat: boolean;
  out: string;
}

/** Generated clips the soak mixes with the real files (tests/helpers/media.ts caches them). */
export const GENERATED: ClipSpec[] = [
  {
    codec: "libx264",
    container: "mp4",
    width: 320,
    height: 240,
    fps: 30,
    durationSec: 6,
    bframes: 3,
    gop: 30,
    audio: true,
  },
  {
    codec: "libx264",
    container: "ts",
    width: 320,
    height: 240,
    fps: 25,
    durationSec: 4,
    bframes: 2,
    gop: 50,
    audio: true,
  },
  {
    codec: "libx265",
    container: "mkv",
    width: 256,
    height: 144,
    fps: 25,
    durationSec: 4,
    bframes: 2,
    gop: 25,
  },
  { codec: "libvpx-vp9", container: "webm", width: 256, height: 144, fps: 25, durationSec: 4, gop: 50 },
  { codec: "mpeg4", container: "avi", width: 320, height: 240, fps: 25, durationSec: 4, gop: 12 },
];

/**
 * The soak's dataset: decodable shared media (when present; those of at most `maxPixels` per frame) and the
 * generated clips, one class per source.
 */
export async function soakDataset(useShared = true, maxPixels = Infinity): Promise<VideoDataset> {
  const items: VideoDataset["items"] = [];
  if (useShared) {
    for (const m of decodableSharedMedia()) {
      if ((m.width ?? 0) * (m.height ?? 0) > maxPixels) continue;
      items.push({ path: `${SHARED_MEDIA_DIR}${m.file}`, label: 0 });
    }
  }
  for (const spec of GENERATED) items.push({ path: await generateClip(spec), label: 1 });
  return { root: "soak", classes: ["shared", "generated"], items };
}

export function quantiles(xs: number[]): Quantiles {
  if (xs.length === 0) return { p50: NaN, p99: NaN, max: NaN };
  const s = [...xs].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)];
  const r = (x: number) => Number(x.toFixed(2));
  return { p50: r(q(0.5)), p99: r(q(0.99)), max: r(s[s.length - 1]) };
}

/** Theil–Sen slope of `ys` over their indices: the median of the slopes between every pair of points. */
export function theilSen(ys: number[]): number {
  const slopes: number[] = [];
  for (let i = 0; i < ys.length; i++) {
    for (let j = i + 1; j < ys.length; j++) slopes.push((ys[j] - ys[i]) / (j - i));
  }
  if (slopes.length === 0) return 0;
  slopes.sort((a, b) => a - b);
  const m = slopes.length >> 1;
  return slopes.length % 2 ? slopes[m] : (slopes[m - 1] + slopes[m]) / 2;
}

/** Resets a process's peak RSS (VmHWM) to its current RSS; false when not possible. */
function resetPeak(pid: number | "self" | undefined): void {
  if (pid === undefined) return;
  try {
    Deno.writeTextFileSync(`/proc/${pid}/clear_refs`, "5");
  } catch {
    // not supported here: peaks are then since the start
  }
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
const count = (r: Record<string, number>) => sum(Object.values(r));
const byClass = (rs: Record<string, number>[]) => {
  const out: Record<string, number> = {};
  for (const r of rs) for (const [k, v] of Object.entries(r)) out[k] = (out[k] ?? 0) + v;
  return out;
};

/** Options of {@link soak}. */
export interface SoakOptions {
  minutes: number;
  /** Run exactly this many epochs instead of `minutes`. */
  epochs?: number;
  /** Epochs left out of the slopes (default: a fifth of the run, at least 2). */
  warmup?: number;
  backend: "inprocess" | "subprocess";
  batchSize: number;
  numFrames: number;
  size: number;
  clipsPerVideo: number;
  stepMs: number;
  /** The loader's `slots` (undefined: off). */
  slots?: number;
  retainBatches: boolean;
  useShared: boolean;
  /** Leave out shared files with more pixels per frame (default: none left out). */
  maxPixels?: number;
  maxRssKiB: number;
  maxHeapKiB: number;
  out: string;
  seed: number;
  log: (line: string) => void;
}

/** Runs the soak; see the module docs. */
export async function soak(o: SoakOptions): Promise<SoakSummary> {
  const dataset = await soakDataset(o.useShared, o.maxPixels);
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) o.log("soak: no --v8-flags=--expose-gc: heaps are not collected before sampling (noisier)");
  let failures = 0;
  await using loader = await videoClassificationLoader({
    dataset,
    batchSize: o.batchSize,
    clip: { numFrames: o.numFrames, width: o.size, height: o.size },
    sampler: { seed: o.seed, clipsPerVideo: o.clipsPerVideo },
    backend: o.backend,
    ...(o.slots ? { slots: o.slots } : {}),
    log: (line) => {
      failures++;
      if (failures <= 5) o.log(line);
    },
  });
  await Deno.mkdir(o.out.slice(0, o.out.lastIndexOf("/")) || ".", { recursive: true });
  const file = await Deno.open(o.out, { write: true, create: true, truncate: true });
  const records: SoakEpoch[] = [];
  const samples: { waits: number[]; steps: number[] }[] = [];
  const retained: unknown[] = [];
  const t0 = performance.now();
  const deadline = t0 + o.minutes * 60_000;
  try {
    for (let e = 0; o.epochs !== undefined ? e < o.epochs : performance.now() < deadline; e++) {
      const childPid = loader.stats().backend?.pid;
      resetPeak("self");
      resetPeak(childPid);
      const failuresBefore = failures;
      const waits: number[] = [], steps: number[] = [];
      let clips = 0, batches = 0;
      const start = performance.now();
      const it = loader[Symbol.asyncIterator]();
      let last = performance.now();
      for (;;) {
        const asked = performance.now();
        const r = await it.next();
        const now = performance.now();
        if (r.done) break;
        waits.push(now - asked);
        steps.push(now - last);
        last = now;
        batches++;
        clips += r.value.clips.length;
        if (o.stepMs > 0) await new Promise((res) => setTimeout(res, o.stepMs));
        if (o.retainBatches) retained.push(r.value);
        else r.value[Symbol.dispose]();
      }
      const wall = (performance.now() - start) / 1000;
      const mem = await loader.memoryReport(gc !== undefined);
      const threads = [mem.main, ...mem.workers];
      const rec: SoakEpoch = {
        epoch: e,
        t: Number(((performance.now() - t0) / 1000).toFixed(2)),
        wall: Number(wall.toFixed(3)),
        clips,
        batches,
        failures: failures - failuresBefore,
        waitMs: quantiles(waits),
        stepMs: quantiles(steps),
        rss: procRss("self", "VmRSS") ?? mem.rss,
        rssPeak: procRss("self", "VmHWM") ?? NaN,
        childRss: procRss(childPid, "VmRSS"),
        childRssPeak: procRss(childPid, "VmHWM"),
        heapUsed: mem.main.heapUsed,
        heapTotal: mem.main.heapTotal,
        external: mem.main.external,
        workerHeapUsed: sum(mem.workers.map((w) => w.heapUsed)),
        workerHeapTotal: sum(mem.workers.map((w) => w.heapTotal)),
        workerExternal: sum(mem.workers.map((w) => w.external)),
        nativeLive: sum(threads.map((t) => count(t.native.live))),
        nativeFinalized: sum(threads.map((t) => count(t.native.finalized))),
        nativeLiveByClass: byClass(threads.map((t) => t.native.live)),
        nativeFinalizedByClass: byClass(threads.map((t) => t.native.finalized)),
        gc: gc !== undefined,
      };
      records.push(rec);
      samples.push({ waits, steps }); // the summary's quantiles are over every step, the file keeps each epoch's
      await file.write(new TextEncoder().encode(JSON.stringify(rec) + "\n"));
      o.log(
        `soak: epoch ${e} ${clips} clips ${wall.toFixed(1)} s, RSS ${(rec.rss / 2 ** 20).toFixed(1)} MiB` +
          `${rec.childRss !== null ? ` (+ child ${(rec.childRss / 2 ** 20).toFixed(1)})` : ""}, heap ${
            ((rec.heapUsed + rec.workerHeapUsed) / 2 ** 20).toFixed(1)
          } MiB, FFmpeg objects ${rec.nativeLive}, step p99 ${rec.stepMs.p99} ms`,
      );
    }
  } finally {
    file.close();
  }
  return summarise(records, samples, o, dataset.items.length, loader.clipsPerEpoch);
}

function summarise(
  records: SoakEpoch[],
  samples: { waits: number[]; steps: number[] }[],
  o: SoakOptions,
  videos: number,
  clipsPerEpoch: number,
): SoakSummary {
  const warmup = Math.max(
    0,
    Math.min(records.length - 2, o.warmup ?? Math.max(2, Math.floor(records.length / 5))),
  );
  const after = records.slice(warmup);
  const KiB = 1024, MiB = 2 ** 20;
  const childRss = after.every((r) => r.childRss !== null) ? after.map((r) => r.childRss!) : null;
  const slopes = {
    rssKiB: theilSen(after.map((r) => r.rss)) / KiB,
    childRssKiB: childRss === null ? null : theilSen(childRss) / KiB,
    heapKiB: theilSen(after.map((r) => r.heapUsed + r.workerHeapUsed)) / KiB,
    nativeObjects: theilSen(after.map((r) => r.nativeLive)),
  };
  const bounds = { rssKiB: o.maxRssKiB, heapKiB: o.maxHeapKiB, nativeObjects: 0.1 };
  const flat = slopes.rssKiB <= bounds.rssKiB &&
    (slopes.childRssKiB === null || slopes.childRssKiB <= bounds.rssKiB) &&
    slopes.heapKiB <= bounds.heapKiB && slopes.nativeObjects <= bounds.nativeObjects &&
    after.every((r) => r.nativeFinalized === 0);
  const r2 = (x: number) => Number(x.toFixed(2));
  return {
    epochs: records.length,
    warmup,
    minutes: r2((records.at(-1)?.t ?? 0) / 60),
    backend: o.backend,
    slots: o.slots ?? null,
    videos,
    clipsPerEpoch,
    slopes: {
      rssKiB: r2(slopes.rssKiB),
      childRssKiB: slopes.childRssKiB === null ? null : r2(slopes.childRssKiB),
      heapKiB: r2(slopes.heapKiB),
      nativeObjects: r2(slopes.nativeObjects),
    },
    rssMiB: {
      first: r2((after[0]?.rss ?? NaN) / MiB),
      last: r2((after.at(-1)?.rss ?? NaN) / MiB),
      max: r2(Math.max(...after.map((r) => r.rss)) / MiB),
    },
    stepMs: quantiles(samples.slice(warmup).flatMap((x) => x.steps)),
    waitMs: quantiles(samples.slice(warmup).flatMap((x) => x.waits)),
    failures: sum(records.map((r) => r.failures)),
    bounds,
    flat,
    out: o.out,
  };
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      minutes: { type: "string", default: "10" },
      epochs: { type: "string" },
      warmup: { type: "string" },
      backend: { type: "string", default: "inprocess" },
      batch: { type: "string", default: "8" },
      frames: { type: "string", default: "8" },
      size: { type: "string", default: "112" },
      "clips-per-video": { type: "string", default: "4" },
      "step-ms": { type: "string", default: "0" },
      slots: { type: "string" },
      "retain-batches": { type: "boolean" },
      "no-shared": { type: "boolean" },
      "max-pixels": { type: "string" },
      "max-rss-kib": { type: "string", default: "256" },
      "max-heap-kib": { type: "string", default: "64" },
      seed: { type: "string", default: "0" },
      out: { type: "string" },
      json: { type: "boolean" },
    },
  });
  const backend = values.backend;
  if (backend !== "inprocess" && backend !== "subprocess") {
    throw new Error(`--backend must be inprocess or subprocess, got ${backend}`);
  }
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  const out = values.out ?? `${new URL("..", import.meta.url).pathname}.cache/bench/soak/soak-${stamp}.jsonl`;
  const s = await soak({
    minutes: Number(values.minutes),
    epochs: values.epochs === undefined ? undefined : Number(values.epochs),
    warmup: values.warmup === undefined ? undefined : Number(values.warmup),
    backend,
    batchSize: Number(values.batch),
    numFrames: Number(values.frames),
    size: Number(values.size),
    clipsPerVideo: Number(values["clips-per-video"]),
    stepMs: Number(values["step-ms"]),
    slots: values.slots === undefined ? undefined : Number(values.slots),
    retainBatches: values["retain-batches"] ?? false,
    useShared: !values["no-shared"],
    maxPixels: values["max-pixels"] === undefined ? undefined : Number(values["max-pixels"]),
    maxRssKiB: Number(values["max-rss-kib"]),
    maxHeapKiB: Number(values["max-heap-kib"]),
    seed: Number(values.seed),
    out,
    log: (l) => console.error(l),
  });
  if (values.json) console.log(JSON.stringify(s));
  else {
    console.log(
      `soak: ${s.epochs} epochs (${s.minutes} min, ${s.backend}, ${s.videos} videos, ${s.clipsPerEpoch} clips/epoch), ` +
        `warm-up ${s.warmup} epochs; per epoch after it: RSS ${s.slopes.rssKiB} KiB` +
        `${
          s.slopes.childRssKiB !== null ? ` (child ${s.slopes.childRssKiB} KiB)` : ""
        }, V8 heap ${s.slopes.heapKiB} KiB, ` +
        `FFmpeg objects ${s.slopes.nativeObjects} (bounds ${s.bounds.rssKiB} KiB, ${s.bounds.heapKiB} KiB, ` +
        `${s.bounds.nativeObjects}); RSS ${s.rssMiB.first} → ${s.rssMiB.last} MiB (max ${s.rssMiB.max}); ` +
        `step p50 ${s.stepMs.p50} ms, p99 ${s.stepMs.p99} ms, max ${s.stepMs.max} ms; ` +
        `${s.failures} failure lines → ${s.flat ? "FLAT" : "GROWING"}`,
    );
    console.log(`soak: per-epoch records in ${s.out}`);
  }
  if (!s.flat) Deno.exitCode = 1;
}
