/**
 * `deno task digest`: hashes every batch a set of loader configurations makes, so that a change meant to keep
 * behaviour (a restructuring) can show its batches are byte-identical before and after.
 *
 * ```
 * deno task digest --out before.json [--quick] [--videos 12] [--data DIR]
 * deno task digest --compare before.json [--quick] [--out after.json]
 * ```
 *
 * Each configuration runs 2 epochs; each batch, taken with `for await (using batch of loader)`, is hashed before
 * it is disposed: sha256 of its samples (`batch.toHost()`), its labels, its audio, and of the canonical JSON of
 * `batch.clips` (keys sorted, the data and work directories written as `<demo>`, `<sets>`, `<work>`). The file
 * also keeps each clip's pixel hash and its canonical metadata, so `--compare` names the first differing batch
 * of each configuration and the part: `shape`, `pixels` (with the clip), `labels`, `audio`, or the clip field
 * path (`clips[3].replaces.error`). It exits 1 on any difference, 2 on a usage error or when the two runs read
 * different videos.
 *
 * The configurations (`--quick`: demo and sampler-gop30, the same as in a full run):
 * - `demo`: the demo dataset and options (`deno task demo`: batch 8, 8 frames, 112², seed 0, 4 clips per video,
 *   the subprocess backend);
 * - `sampler-gop30`, `rows-gop30`, `kinetics-gop30`, `sampler-gop250`: the bench shapes
 *   (bench/workload_sets.ts, seed 1) over the first `--videos` videos of their set, in-process;
 * - paths a restructuring touches, on the demo dataset in-process unless noted: `slots` (3 batch slots),
 *   `bcthw-float32` (planar layout, float32 with mean/std), `random-resized-crop` (with flips),
 *   `decode-less-off`, `audio-gop30` (the sampler-gop30 shape with 16 kHz audio), `replace` (a manifest with a
 *   truncated copy of a demo video, whose clips are replaced), `resume` (the demo's options: `stateDict()` after
 *   3 batches, the rest from a new loader given `resume`; checked here against `demo`'s batches too, all but
 *   the counts of decoding work, since the clips before the resume point are not decoded) and
 *   `cache-loader` (`cacheLoader` over a loader with 3 slots, replaying for 2 epochs' worth of batches).
 *
 * `ordered: false` is left out: its batches vary run to run by design. Node lanes and NVDEC have their own
 * byte-for-byte tests.
 *
 * The datasets are made once, outside the repository (`${XDG_CACHE_HOME:-~/.cache}/sluice/digest`, or
 * `--data DIR`), so that every clone compares against the same files: made again, the demo dataset and the
 * bench sets differ in their pixels. The file records the sha256 of every video a clip came from, and
 * `--compare` refuses two runs over different videos (exit 2) instead of reporting their pixels.
 *
 * It imports only what a restructuring keeps in place: the public entry point, the demo and the bench's sets.
 * @module
 */

import { createHash } from "node:crypto";
import { parseArgs } from "node:util";
import {
  type Batch,
  cacheLoader,
  type LoaderOptions,
  type LoaderState,
  videoClassificationLoader,
} from "../mod.ts";
import { ensureDemoDataset } from "../examples/demo.ts";
import { ensureSet, makeClipList, parseVariant, SETS } from "../bench/workload_sets.ts";

/** The format of the file `--out` writes. */
export const DIGEST_FORMAT = "sluice-batch-digest/1";

/** One batch, hashed. */
export interface BatchDigest {
  /** The loader epoch it belongs to (for `cache-loader`: 0, the one pass over the cache). */
  epoch: number;
  /** Its index in the epoch. */
  index: number;
  /** `batch.shape`. */
  shape: number[];
  /** sha256 of the samples' bytes (`batch.toHost()`). */
  data: string;
  /** sha256 of each clip's part of the samples, to name the clip whose pixels differ. */
  pixels: string[];
  /** sha256 of the labels' bytes. */
  labels: string;
  /** sha256 of the audio's bytes, or null without audio. */
  audio: string | null;
  /** sha256 of the canonical JSON of `batch.clips`. */
  clips: string;
  /** The canonical `batch.clips`, to name the field that differs. */
  clipValues: unknown[];
}

/** One configuration's run. */
export interface ConfigDigest {
  /** The loader options (canonical; functions left out). */
  options: unknown;
  /** Its batches, in delivery order. */
  batches: BatchDigest[];
  /** sha256 over every batch's hashes, in order. */
  digest: string;
  /** Set when the configuration threw: the error as one line. */
  error?: string;
}

/** What `--out` writes. */
export interface DigestFile {
  format: string;
  /** Videos per bench set. */
  videos: number;
  /** Informative, not compared: what ran it. */
  env: { deno: string; ffmpegLibDir: string | null };
  /** sha256 of each video a clip came from (by canonical path): both runs of a comparison must read the same. */
  inputs: Record<string, string>;
  configs: Record<string, ConfigDigest>;
}

const USAGE = `deno task digest [--out FILE] [--compare BEFORE.json] [--quick] [--videos N] [--data DIR]
hashes every batch of the demo, the bench shapes and the paths a restructuring touches (2 epochs each)
  --out FILE        write the digests as JSON
  --compare FILE    compare with an earlier --out: exit 1 naming the first differing batch and field
  --quick           only demo and sampler-gop30
  --videos N        videos per bench set (default 12)
  --data DIR        where the datasets are made once (default: ~/.cache/sluice/digest)`;

const DATA = `${Deno.env.get("XDG_CACHE_HOME") ?? `${Deno.env.get("HOME")}/.cache`}/sluice/digest`;
const EPOCHS = 2;
const QUICK = new Set(["demo", "sampler-gop30"]);

const sha256 = (bytes: Uint8Array | string) => createHash("sha256").update(bytes).digest("hex");
const bytesOf = (a: ArrayBufferView) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

/** `v` with keys sorted, functions dropped and the directories in `roots` written as their names. */
function canonical(v: unknown, roots: readonly [string, string][]): unknown {
  if (typeof v === "string") {
    let s = v;
    for (const [dir, name] of roots) s = s.replaceAll(dir, name);
    return s;
  }
  if (Array.isArray(v)) return v.map((x) => canonical(x, roots));
  if (ArrayBuffer.isView(v)) return Array.from(v as unknown as ArrayLike<number>);
  if (v !== null && typeof v === "object") {
    return Object.fromEntries(
      Object.keys(v).sort().filter((k) => typeof (v as Record<string, unknown>)[k] !== "function")
        .map((k) => [k, canonical((v as Record<string, unknown>)[k], roots)]),
    );
  }
  return v;
}

/** Hashes one batch (and, once, each video its clips came from, into `ctx.inputs`). */
function digestBatch(batch: Batch, epoch: number, index: number, ctx: Context): BatchDigest {
  const host = bytesOf(batch.toHost());
  const n = batch.clips.length, per = n === 0 ? 0 : host.byteLength / n;
  const clipValues = canonical(batch.clips, ctx.roots) as unknown[];
  for (const [k, clip] of batch.clips.entries()) {
    const path = (clipValues[k] as { path: string }).path;
    ctx.inputs[path] ??= sha256(Deno.readFileSync(clip.path));
  }
  return {
    epoch,
    index,
    shape: [...batch.shape],
    data: sha256(host),
    pixels: Array.from({ length: n }, (_, i) => sha256(host.subarray(i * per, (i + 1) * per))),
    labels: sha256(bytesOf(batch.labels)),
    audio: batch.audio === undefined ? null : sha256(bytesOf(batch.audio)),
    clips: sha256(JSON.stringify(clipValues)),
    clipValues,
  };
}

/** The digest of a whole run: every batch's hashes, in order. */
function runDigest(batches: readonly BatchDigest[]): string {
  return sha256(batches.map((b) => [b.shape, b.data, b.labels, b.audio, b.clips].join(" ")).join("\n"));
}

/** What a configuration needs: where its data lives and how the directories are written in its clips. */
interface Context {
  demo: string;
  sets: string;
  work: string;
  videos: number;
  roots: [string, string][];
  /** sha256 of each video read so far, by canonical path. */
  inputs: Record<string, string>;
  log: (line: string) => void;
}

/** A configuration: its loader options, and optionally its own way to run them (default: 2 plain epochs). */
interface Config {
  options(ctx: Context): LoaderOptions | Promise<LoaderOptions>;
  run?(opts: LoaderOptions, ctx: Context): Promise<BatchDigest[]>;
}

/** The demo's options (`deno task demo`). */
const demoOptions = (ctx: Context): LoaderOptions => ({
  dataset: ctx.demo,
  batchSize: 8,
  clip: { numFrames: 8, width: 112, height: 112 },
  sampler: { seed: 0, clipsPerVideo: 4 },
  backend: "subprocess",
});

/** The demo's options, in-process (the backend is covered by `demo` and `resume`). */
const demoInprocess = (ctx: Context, more: Partial<LoaderOptions> = {}): LoaderOptions => ({
  ...demoOptions(ctx),
  backend: "inprocess",
  ...more,
});

/** A bench shape's options (its manifest written under the work directory). */
async function benchOptions(variantId: string, ctx: Context): Promise<LoaderOptions> {
  const variant = parseVariant(variantId);
  const videos = await ensureSet(ctx.sets, variant.set, ctx.videos, ctx.log);
  const work = `${ctx.work}/${variantId}`;
  await Deno.mkdir(work, { recursive: true });
  const list = await makeClipList(variant, videos, work, 1, EPOCHS);
  return list.sluice as unknown as LoaderOptions;
}

/** Runs `opts` for 2 epochs, hashing each batch. */
async function plainRun(opts: LoaderOptions, ctx: Context): Promise<BatchDigest[]> {
  const out: BatchDigest[] = [];
  await using loader = await videoClassificationLoader({ ...opts, log: ctx.log });
  for (let epoch = 0; epoch < EPOCHS; epoch++) {
    let index = 0;
    for await (using batch of loader) out.push(digestBatch(batch, epoch, index++, ctx));
  }
  return out;
}

/** The demo dataset as a manifest plus a truncated copy of its first video (over its whole length). */
function replaceManifest(ctx: Context): string {
  const files = [...Deno.readDirSync(ctx.demo)].filter((e) => e.isDirectory).map((e) => e.name).sort()
    .flatMap((cls, label) =>
      [...Deno.readDirSync(`${ctx.demo}/${cls}`)].map((e) => e.name).sort().map((f) => ({
        path: `${ctx.demo}/${cls}/${f}`,
        label,
      }))
    );
  const full = Deno.readFileSync(files[0].path);
  const trunc = `${ctx.work}/truncated.mp4`;
  Deno.writeFileSync(trunc, full.subarray(0, full.length >> 2));
  const manifest = `${ctx.work}/replace.csv`;
  Deno.writeTextFileSync(
    manifest,
    ["path,label,start,end", ...files.map((f) => `${f.path},${f.label},,`), `${trunc},0,0,4`].join("\n") +
      "\n",
  );
  return manifest;
}

const CONFIGS: Record<string, Config> = {
  "demo": { options: (ctx) => demoOptions(ctx) },
  "sampler-gop30": { options: (ctx) => benchOptions("sampler-gop30", ctx) },
  "rows-gop30": { options: (ctx) => benchOptions("rows-gop30", ctx) },
  "kinetics-gop30": { options: (ctx) => benchOptions("kinetics-gop30", ctx) },
  "sampler-gop250": { options: (ctx) => benchOptions("sampler-gop250", ctx) },
  "slots": { options: (ctx) => demoInprocess(ctx, { slots: 3 }) },
  "bcthw-float32": {
    options: (ctx) =>
      demoInprocess(ctx, {
        layout: "BCTHW",
        clip: {
          numFrames: 8,
          width: 112,
          height: 112,
          dtype: "float32",
          mean: [0.45, 0.45, 0.45],
          std: [0.225, 0.225, 0.225],
        },
      }),
  },
  "random-resized-crop": {
    options: (ctx) =>
      demoInprocess(ctx, {
        clip: { numFrames: 8, width: 112, height: 112, resize: "random-resized-crop", flipProbability: 0.5 },
      }),
  },
  "decode-less-off": {
    options: (ctx) => demoInprocess(ctx, { decodeLess: { skip: false, once: false, threads: false } }),
  },
  "audio-gop30": {
    options: async (ctx) => ({ ...await benchOptions("sampler-gop30", ctx), audio: { sampleRate: 16000 } }),
  },
  "replace": {
    options: (ctx) => demoInprocess(ctx, { dataset: replaceManifest(ctx), onClipError: "replace" }),
  },
  "resume": {
    options: (ctx) => demoOptions(ctx),
    async run(opts, ctx) {
      const out: BatchDigest[] = [];
      let state: LoaderState | undefined;
      {
        await using first = await videoClassificationLoader({ ...opts, log: ctx.log });
        let index = 0;
        for await (using batch of first) {
          out.push(digestBatch(batch, 0, index++, ctx));
          if (index === 3) break;
        }
        state = first.stateDict();
      }
      await using loader = await videoClassificationLoader({ ...opts, resume: state, log: ctx.log });
      for (let epoch = state.epoch; epoch < EPOCHS; epoch++) {
        let index = epoch === state.epoch ? state.batches : 0;
        for await (using batch of loader) out.push(digestBatch(batch, epoch, index++, ctx));
      }
      return out;
    },
  },
  "cache-loader": {
    options: (ctx) => demoInprocess(ctx, { slots: 3 }),
    async run(opts, ctx) {
      const out: BatchDigest[] = [];
      await using loader = await videoClassificationLoader({ ...opts, log: ctx.log });
      const stopAfter = EPOCHS * loader.batchesPerEpoch;
      let index = 0;
      for await (using batch of cacheLoader(loader, { numCached: 3, replayAfter: 4, stopAfter })) {
        out.push(digestBatch(batch, 0, index++, ctx));
      }
      return out;
    },
  },
};

/** Runs the configurations (`quick`: only demo and sampler-gop30), printing a line for each on stderr. */
async function digestAll(
  opts: { quick: boolean; videos: number; data: string },
): Promise<DigestFile> {
  const work = await Deno.makeTempDir({ prefix: "sluice-digest-" });
  const sets = `${opts.data}/clip_workload`;
  const names = Object.keys(CONFIGS).filter((n) => !opts.quick || QUICK.has(n));
  const configs: Record<string, ConfigDigest> = {}, inputs: Record<string, string> = {};
  try {
    const demo = ensureDemoDataset(`${opts.data}/demo`);
    const ctx: Context = {
      demo,
      sets,
      work,
      videos: opts.videos,
      // Longest first, so a directory inside another is named by its own name.
      roots: ([[demo, "<demo>"], [sets, "<sets>"], [work, "<work>"]] as [string, string][])
        .sort((a, b) => b[0].length - a[0].length),
      inputs,
      log: (line) => console.error(`  ${line}`),
    };
    for (const name of names) {
      const t0 = performance.now();
      const config = CONFIGS[name];
      let options: LoaderOptions | undefined, batches: BatchDigest[] = [], error: string | undefined;
      try {
        options = await config.options(ctx);
        batches = await (config.run ?? plainRun)(options, ctx);
      } catch (e) {
        error = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
      }
      configs[name] = {
        options: canonical(options ?? null, ctx.roots),
        batches,
        digest: runDigest(batches),
        ...(error === undefined ? {} : { error }),
      };
      const took = ((performance.now() - t0) / 1000).toFixed(1);
      console.error(
        error === undefined
          ? `${name}: ${batches.length} batches, ${configs[name].digest.slice(0, 16)} (${took} s)`
          : `${name}: FAILED after ${took} s: ${error}`,
      );
    }
  } finally {
    await Deno.remove(work, { recursive: true }).catch(() => {});
  }
  return {
    format: DIGEST_FORMAT,
    videos: opts.videos,
    env: { deno: Deno.version.deno, ffmpegLibDir: Deno.env.get("SLUICE_FFMPEG_LIBDIR") ?? null },
    inputs: Object.fromEntries(Object.entries(inputs).sort(([a], [b]) => a < b ? -1 : 1)),
    configs,
  };
}

/** The first path (`[3].replaces.error`) at which `a` and `b` differ, with both values; null when equal. */
function firstDifference(
  a: unknown,
  b: unknown,
  path = "",
): { path: string; a: unknown; b: unknown } | null {
  if (Object.is(a, b)) return null;
  if (Array.isArray(a) && Array.isArray(b)) {
    for (let i = 0; i < Math.min(a.length, b.length); i++) {
      const d = firstDifference(a[i], b[i], `${path}[${i}]`);
      if (d !== null) return d;
    }
    return a.length === b.length ? null : { path: `${path}.length`, a: a.length, b: b.length };
  }
  if (
    a !== null && b !== null && typeof a === "object" && typeof b === "object" && !Array.isArray(a) &&
    !Array.isArray(b)
  ) {
    const ra = a as Record<string, unknown>, rb = b as Record<string, unknown>;
    for (const k of [...new Set([...Object.keys(ra), ...Object.keys(rb)])].sort()) {
      const d = firstDifference(ra[k], rb[k], `${path}.${k}`);
      if (d !== null) return d;
    }
    return null;
  }
  return { path, a, b };
}

const show = (v: unknown) => v === undefined ? "(absent)" : JSON.stringify(v);

/** The first difference between two batches' digests (the part and, for clips, the field), or null. */
function batchDifference(before: BatchDigest, after: BatchDigest): string | null {
  if (before.epoch !== after.epoch || before.index !== after.index) {
    return `is epoch ${after.epoch} batch ${after.index}, was epoch ${before.epoch} batch ${before.index}`;
  }
  if (before.shape.join() !== after.shape.join()) return `shape: [${before.shape}] → [${after.shape}]`;
  if (before.data !== after.data) {
    const clip = after.pixels.findIndex((h, i) => h !== before.pixels[i]);
    return clip < 0 ? "pixels" : `pixels of clips[${clip}]`;
  }
  if (before.labels !== after.labels) return "labels";
  if (before.audio !== after.audio) {
    return before.audio === null || after.audio === null ? "audio (absent)" : "audio";
  }
  if (before.clips !== after.clips) {
    const d = firstDifference(before.clipValues, after.clipValues);
    return d === null ? "clips" : `clips${d.path}: ${show(d.a)} → ${show(d.b)}`;
  }
  return null;
}

/** The first difference between two runs of one configuration, or null when their batches are identical. */
function configDifference(before: ConfigDigest, after: ConfigDigest): string | null {
  if (after.error !== undefined || before.error !== undefined) {
    if (after.error === before.error) return null;
    return `failed: ${before.error ?? "(no error)"} → ${after.error ?? "(no error)"}`;
  }
  const opts = firstDifference(before.options, after.options);
  if (opts !== null) {
    return `its options differ (the script changed?): ${opts.path}: ${show(opts.a)} → ${show(opts.b)}`;
  }
  for (let i = 0; i < Math.min(before.batches.length, after.batches.length); i++) {
    const d = batchDifference(before.batches[i], after.batches[i]);
    if (d !== null) {
      return `batch ${i} (epoch ${after.batches[i].epoch}, index ${after.batches[i].index}): ${d}`;
    }
  }
  if (before.batches.length !== after.batches.length) {
    return `${after.batches.length} batches, was ${before.batches.length}`;
  }
  return before.digest === after.digest
    ? null
    : "run digest (the batches agree: the digest's recipe changed?)";
}

/** The videos both runs read whose bytes differ (by canonical path). */
export function inputsChanged(before: DigestFile, after: DigestFile): string[] {
  const was = before.inputs ?? {};
  return Object.entries(after.inputs).filter(([p, h]) => p in was && was[p] !== h)
    .map(([p]) => p);
}

/** Compares `after` with `before`: one line per differing configuration (empty: identical). */
export function compareDigests(before: DigestFile, after: DigestFile): string[] {
  if (before.format !== after.format) return [`format ${after.format}, was ${before.format}`];
  if (before.videos !== after.videos) {
    return [`--videos ${after.videos}, was ${before.videos}: rerun with the same`];
  }
  const lines: string[] = [];
  for (const [name, now] of Object.entries(after.configs)) {
    const then = before.configs[name];
    const d = then === undefined ? "not in the earlier file" : configDifference(then, now);
    if (d !== null) lines.push(`${name}: ${d}`);
  }
  return lines;
}

/**
 * What a resumed loader may report differently: how much decoding a clip's pass did. The clips before the resume
 * point are not decoded, so decode once groups the first clips after it into other passes.
 */
const DECODE_WORK = new Set(["decodedFrames", "skippedFrames", "passClips"]);

/** `resume` must deliver the uninterrupted run's batches (but {@link DECODE_WORK}): the first difference, or null. */
function resumeDifference(file: DigestFile): string | null {
  const demo = file.configs["demo"], resume = file.configs["resume"];
  if (demo === undefined || resume === undefined || demo.error !== undefined || resume.error !== undefined) {
    return null;
  }
  const work = (values: unknown[]) =>
    values.map((c) =>
      Object.fromEntries(Object.entries(c as Record<string, unknown>).filter(([k]) => !DECODE_WORK.has(k)))
    );
  const strip = (b: BatchDigest): BatchDigest => ({ ...b, clips: "", clipValues: work(b.clipValues) });
  for (let i = 0; i < Math.min(demo.batches.length, resume.batches.length); i++) {
    const a = strip(demo.batches[i]), b = strip(resume.batches[i]);
    const d = batchDifference(a, b) ?? firstDifference(a.clipValues, b.clipValues);
    if (d !== null) {
      return `batch ${i} (epoch ${b.epoch}, index ${b.index}): ${
        typeof d === "string" ? d : `clips${d.path}: ${show(d.a)} → ${show(d.b)}`
      }`;
    }
  }
  return demo.batches.length === resume.batches.length
    ? null
    : `${resume.batches.length} batches, the uninterrupted run ${demo.batches.length}`;
}

async function main(args: string[]): Promise<number> {
  let values: {
    out?: string;
    compare?: string;
    quick?: boolean;
    videos?: string;
    data?: string;
    help?: boolean;
  };
  try {
    ({ values } = parseArgs({
      args,
      options: {
        out: { type: "string" },
        compare: { type: "string" },
        quick: { type: "boolean" },
        videos: { type: "string" },
        data: { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    }));
  } catch (e) {
    console.error(`batch_digest: ${(e as Error).message}\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const videos = Number(values.videos ?? 12);
  const most = Math.min(...Object.values(SETS).map((s) => s.videos));
  if (!Number.isInteger(videos) || videos < 1 || videos > most) {
    console.error(`batch_digest: --videos must be an integer from 1 to ${most}, got "${values.videos}"`);
    return 2;
  }
  if (values.out === undefined && values.compare === undefined) {
    console.error(`batch_digest: give --out FILE, --compare BEFORE.json, or both\n${USAGE}`);
    return 2;
  }
  let before: DigestFile | undefined;
  if (values.compare !== undefined) {
    try {
      before = JSON.parse(Deno.readTextFileSync(values.compare));
    } catch (e) {
      console.error(`batch_digest: cannot read --compare ${values.compare}: ${(e as Error).message}`);
      return 2;
    }
    if (before?.format !== DIGEST_FORMAT || before.videos !== videos) {
      console.error(
        `batch_digest: ${values.compare} is ${before?.format} with --videos ${before?.videos}: ` +
          `rerun with --videos ${before?.videos} (this is ${DIGEST_FORMAT})`,
      );
      return 2;
    }
  }
  const data = (values.data ?? DATA).replace(/\/$/, "");
  const after = await digestAll({ quick: values.quick ?? false, videos, data });
  const changed = before === undefined ? [] : inputsChanged(before, after);
  if (changed.length > 0) {
    console.error(
      `batch_digest: these videos are not the ones ${values.compare} was made from, so its batches cannot be ` +
        `compared (made again? give the earlier run's --data):\n  ${changed.join("\n  ")}`,
    );
    return 2;
  }
  if (values.out !== undefined) Deno.writeTextFileSync(values.out, JSON.stringify(after) + "\n");
  const problems = Object.entries(after.configs).flatMap(([n, c]) =>
    c.error === undefined ? [] : [`${n}: failed`]
  );
  const resume = resumeDifference(after);
  if (resume !== null) problems.push(`resume: not the uninterrupted run's batches: ${resume}`);
  const configs = Object.keys(after.configs).length;
  const batches = Object.values(after.configs).reduce((s, c) => s + c.batches.length, 0);
  if (before !== undefined) {
    const lines = compareDigests(before, after);
    const skipped = Object.keys(before.configs).filter((n) => !(n in after.configs));
    console.log(
      `${configs} configurations, ${batches} batches, ${lines.length} difference${
        lines.length === 1 ? "" : "s"
      }` +
        (skipped.length > 0 ? ` (not run: ${skipped.join(", ")})` : ""),
    );
    for (const line of lines) console.log(`  ${line}`);
    if (lines.length > 0) return 1;
  } else console.log(`${configs} configurations, ${batches} batches`);
  for (const p of problems) console.error(`batch_digest: ${p}`);
  return problems.length > 0 ? 1 : 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
