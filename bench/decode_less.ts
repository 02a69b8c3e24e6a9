/**
 * Decoding less (issue 14), side by side in one run: sluice's loader with each `decodeLess` switch off and on,
 * and PyTorch `DataLoader(num_workers=2)` over a PyAV `Dataset` (`bench/decode_less_pyav.py`, Debian
 * `/usr/bin/python3`), on the same fixed clip list, checked first to return the same frames.
 *
 * - Set: 48 videos of 10 s, 340×256, 30 fps, H.264 High with B-frames (x264: 3, pyramid), AAC audio, from six
 *   moving lavfi sources with per-video temporal noise; one variant with keyint 250 (`gop250`: keyframes at 0 and
 *   8.33 s, like Kinetics' YouTube encodes) and one with keyint 30 (`gop30`). Made once with the ffmpeg CLI under
 *   `--dir` (default `.cache/bench/decode_less/`).
 * - Clip list: sluice's sampler, seeded (`--seed`), 2 clips per video at random places, 16 frames each at the
 *   native rate → 112×112 RGB (bilinear), batches of 16: epoch `p` of the plan is pass `p`, for every contender.
 *   Pass 0 warms up (Workers, page cache) and is the one verified; passes 1… are timed.
 * - sluice: in-process loader, one configuration per row: every switch on; `skip`, `once`, `threads` each off;
 *   every switch off. Reported: clips/s (median of the timed passes) and as a ratio to DataLoader + PyAV, and
 *   decode amplification (frames decoded / frames delivered, `stats().clips`), skipped frames, shared clips.
 * - `--hd`: idle cores as threads (§3): one 3840×2160 H.264 video, one 16-frame clip per epoch (so one decode
 *   in flight on a machine of several cores), `threads` on and off.
 *
 * The machine may be shared: compare ratios within one run; the load average is printed before and after.
 *
 * Run: `deno run -A bench/decode_less.ts [--passes 4] [--seed 1] [--variants gop250,gop30] [--hd] [--no-pyav]
 * [--dir DIR] [--json]`
 * @module
 */

import { parseArgs } from "node:util";
import { type LoaderOptions, videoClassificationLoader } from "../src/data/loader.ts";
import type { DecodeLessOptions } from "../src/data/loader_options.ts";
import type { ClipCounts } from "../src/data/clip_stats.ts";

/** The shape of the workload (issue 14's "Benchmark (in the repo)"). */
export const WORKLOAD = {
  videos: 48,
  durationSec: 10,
  width: 340,
  height: 256,
  fps: 30,
  clipsPerVideo: 2,
  numFrames: 16,
  outWidth: 112,
  outHeight: 112,
  batchSize: 16,
} as const;

/** Keyframe interval of each variant of the set. */
const VARIANTS: Record<string, number> = { gop250: 250, gop30: 30 };

/** The sluice rows: `decodeLess` per configuration. */
const CONFIGS: { id: string; decodeLess: DecodeLessOptions }[] = [
  { id: "all on", decodeLess: {} },
  { id: "skip off", decodeLess: { skip: false } },
  { id: "once off", decodeLess: { once: false } },
  { id: "threads off", decodeLess: { threads: false } },
  { id: "all off", decodeLess: { skip: false, once: false, threads: false } },
];

const SOURCES = ["testsrc2", "mandelbrot", "cellauto", "gradients", "sierpinski", "testsrc"];
const REPO = new URL("..", import.meta.url).pathname;
const PYTHON = "/usr/bin/python3";
/** Clips of pass 0 compared with PyAV's frames before anything is timed. */
const VERIFY_CLIPS = 16;
/** Least PSNR (dB) between sluice's and PyAV's frames of a clip (both scale with swscale, bilinear). */
const VERIFY_DB = 35;

function videoArgs(i: number, gop: number): string[] {
  const w = WORKLOAD;
  return [
    ...["-v", "error", "-nostdin"],
    ...["-f", "lavfi", "-i", `${SOURCES[i % SOURCES.length]}=size=${w.width}x${w.height}:rate=${w.fps}`],
    ...["-f", "lavfi", "-i", `sine=frequency=${220 + 10 * i}:sample_rate=44100`],
    ...["-t", String(w.durationSec), "-vf", `noise=alls=10:allf=t+u:all_seed=${i + 1}`],
    ...["-c:v", "libx264", "-profile:v", "high", "-pix_fmt", "yuv420p", "-bf", "3"],
    ...["-g", String(gop), "-sc_threshold", "0", "-threads", "1"],
    ...["-c:a", "aac", "-b:a", "64k"],
  ];
}

async function ffmpeg(args: string[], out: string): Promise<void> {
  const r = await new Deno.Command("ffmpeg", { args: [...args, "-y", out] }).output();
  if (!r.success) throw new Error(`ffmpeg failed for ${out}: ${new TextDecoder().decode(r.stderr)}`);
}

/** Makes `dir/name` with `make(root)` unless its marker says it is made with `key`; returns the root. */
async function once(dir: string, name: string, key: string, make: (root: string) => Promise<void>) {
  const root = `${dir}/${name}/videos`, marker = `${dir}/${name}/.complete.json`;
  try {
    if (Deno.readTextFileSync(marker) === key) return root;
  } catch { /* not made yet */ }
  await Deno.remove(`${dir}/${name}`, { recursive: true }).catch(() => {});
  await make(root);
  Deno.writeTextFileSync(marker, key);
  return root;
}

/** The `gop` variant of the set (made once). */
function workloadSet(dir: string, gop: number): Promise<string> {
  return once(dir, `gop${gop}`, JSON.stringify({ WORKLOAD, args: videoArgs(0, gop) }), async (root) => {
    console.error(`decode_less: making ${WORKLOAD.videos} videos with keyint ${gop} (once)`);
    let next = 0;
    const worker = async () => {
      while (next < WORKLOAD.videos) {
        const i = next++;
        const cls = `${root}/${SOURCES[i % SOURCES.length]}`;
        await Deno.mkdir(cls, { recursive: true });
        await ffmpeg(videoArgs(i, gop), `${cls}/v${String(i).padStart(2, "0")}.mp4`);
      }
    };
    await Promise.all([worker(), worker()]);
  });
}

/** One 3840×2160 H.264 video (3 s, keyint 250) for `--hd`. */
function hdSet(dir: string): Promise<string> {
  const args = [
    ...["-v", "error", "-nostdin", "-f", "lavfi", "-i", "testsrc2=size=3840x2160:rate=30", "-t", "3"],
    ...["-c:v", "libx264", "-preset", "veryfast", "-bf", "3", "-g", "250", "-pix_fmt", "yuv420p"],
  ];
  return once(dir, "hd", JSON.stringify(args), async (root) => {
    console.error("decode_less: making one 3840x2160 video (once)");
    await Deno.mkdir(`${root}/a`, { recursive: true });
    await ffmpeg(args, `${root}/a/hd.mp4`);
  });
}

/** The loader options planning the workload's clips (a configuration adds its `decodeLess`). */
function baseOptions(root: string, seed: number): LoaderOptions {
  const w = WORKLOAD;
  return {
    dataset: root,
    batchSize: w.batchSize,
    clip: { numFrames: w.numFrames, width: w.outWidth, height: w.outHeight },
    sampler: {
      seed,
      clipsPerVideo: w.clipsPerVideo,
      // Half a frame more than 16 frames' worth, so float rounding never leaves a window with 15 frames.
      clipDurationSec: (w.numFrames + 0.5) / w.fps,
      placement: "random",
    },
    log: () => {},
  };
}

interface SluiceRun {
  clipsPerSec: number[];
  /** Counts over the timed passes. */
  counts: ClipCounts;
  /** Pass 0's first clips (by plan position), RGB24. */
  verify: Uint8Array[];
}

/** Runs `passes` epochs of a loader; pass 0 is the warm-up and gives the frames to verify. */
async function runSluice(opts: LoaderOptions, passes: number): Promise<SluiceRun> {
  await using loader = await videoClassificationLoader(opts);
  const verify: Uint8Array[] = [];
  const clipsPerSec: number[] = [];
  for (let p = 0; p < passes; p++) {
    const t0 = performance.now();
    let n = 0;
    for await (using b of loader) {
      n += b.clips.length;
      if (p > 0) continue;
      const size = b.data.length / b.clips.length;
      for (const [i, c] of b.clips.entries()) {
        if (c.position < VERIFY_CLIPS) {
          verify[c.position] = (b.data as Uint8Array).slice(i * size, (i + 1) * size);
        }
      }
    }
    if (p > 0) clipsPerSec.push(n / ((performance.now() - t0) / 1000));
  }
  const epochs = loader.stats().clips.epochs.slice(1);
  const counts = { ...epochs[0] } as ClipCounts;
  for (const e of epochs.slice(1)) {
    for (
      const k of ["decodedFrames", "skippedFrames", "emittedFrames", "sharedClips", "delivered"] as const
    ) {
      counts[k] += e[k];
    }
  }
  counts.decodeAmplification = counts.decodedFrames / counts.emittedFrames;
  return { clipsPerSec, counts, verify };
}

/** The clip list of `passes` epochs (sluice's sampler plan), for PyAV. */
async function clipList(opts: LoaderOptions, passes: number) {
  await using loader = await videoClassificationLoader({ ...opts, decodeLess: { once: false } });
  const items = loader.dataset.items;
  const w = WORKLOAD;
  return {
    numFrames: w.numFrames,
    width: w.outWidth,
    height: w.outHeight,
    batchSize: w.batchSize,
    verifyClips: VERIFY_CLIPS,
    passes: Array.from({ length: passes }, (_, e) =>
      loader.sampler.epoch(e).map((c) => ({
        path: items[c.video].path,
        start: c.start,
        end: c.end,
        label: items[c.video].label,
      }))),
  };
}

async function python(args: string[]): Promise<string> {
  const r = await new Deno.Command(PYTHON, { args: [`${REPO}bench/decode_less_pyav.py`, ...args] }).output();
  if (!r.success) {
    throw new Error(`PyAV contender failed: ${new TextDecoder().decode(r.stderr).slice(-2000)}`);
  }
  return new TextDecoder().decode(r.stdout);
}

function psnr(a: Uint8Array, b: Uint8Array): number {
  let se = 0;
  for (let i = 0; i < a.length; i++) se += (a[i] - b[i]) ** 2;
  return se === 0 ? Infinity : 10 * Math.log10((255 * 255 * a.length) / se);
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0
    ? NaN
    : s.length % 2
    ? s[(s.length - 1) / 2]
    : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

function loadavg(): string {
  try {
    return Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).join(" ");
  } catch {
    return "?";
  }
}

/** One row of the report. */
interface Row {
  variant: string;
  contender: string;
  clipsPerSec: number;
  passes: number[];
  ratio: number | null;
  amplification: number | null;
  skippedFrames: number | null;
  sharedClips: number | null;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      passes: { type: "string", default: "4" },
      seed: { type: "string", default: "1" },
      variants: { type: "string", default: "gop250,gop30" },
      dir: { type: "string", default: `${REPO}.cache/bench/decode_less` },
      hd: { type: "boolean", default: false },
      "no-pyav": { type: "boolean", default: false },
      json: { type: "boolean", default: false },
    },
  });
  const passes = Math.max(2, Number(values.passes)), seed = Number(values.seed);
  const rows: Row[] = [];
  const load = { before: loadavg(), after: "" };
  for (const variant of values.variants!.split(",").filter((v) => v !== "")) {
    const root = await workloadSet(values.dir!, VARIANTS[variant]);
    const base = baseOptions(root, seed);
    let pyav: number[] | null = null;
    let reference: Uint8Array | null = null;
    if (!values["no-pyav"]) {
      const file = await Deno.makeTempFile({ suffix: ".json" });
      Deno.writeTextFileSync(file, JSON.stringify(await clipList(base, passes)));
      const raw = await Deno.makeTempFile({ suffix: ".raw" });
      await python([file, "verify", raw]);
      reference = Deno.readFileSync(raw);
      pyav = JSON.parse(await python([file, "time"])).clipsPerSec;
      await Deno.remove(file);
      await Deno.remove(raw);
      rows.push({
        variant,
        contender: "DataLoader(2) + PyAV",
        clipsPerSec: median(pyav!),
        passes: pyav!,
        ratio: 1,
        amplification: null,
        skippedFrames: null,
        sharedClips: null,
      });
    }
    for (const c of CONFIGS) {
      const r = await runSluice({ ...base, decodeLess: c.decodeLess }, passes);
      if (reference !== null) {
        const size = r.verify[0].length;
        let worst = Infinity;
        for (let i = 0; i < VERIFY_CLIPS; i++) {
          worst = Math.min(worst, psnr(r.verify[i], reference.subarray(i * size, (i + 1) * size)));
        }
        if (!(worst >= VERIFY_DB)) {
          throw new Error(`${variant} ${c.id}: frames differ from PyAV's (${worst} dB)`);
        }
      }
      const cps = median(r.clipsPerSec);
      rows.push({
        variant,
        contender: `sluice, ${c.id}`,
        clipsPerSec: cps,
        passes: r.clipsPerSec,
        ratio: pyav === null ? null : cps / median(pyav),
        amplification: r.counts.decodeAmplification,
        skippedFrames: r.counts.skippedFrames,
        sharedClips: r.counts.sharedClips,
      });
    }
  }
  if (values.hd) {
    const root = await hdSet(values.dir!);
    for (const threads of [false, true]) {
      const opts: LoaderOptions = {
        ...baseOptions(root, seed),
        batchSize: 1,
        sampler: { seed, clipsPerVideo: 1, clipDurationSec: 16.5 / 30, placement: "random" },
        decodeLess: { threads },
      };
      const r = await runSluice(opts, Math.max(passes, 6));
      rows.push({
        variant: "hd 3840x2160, 1 clip/epoch",
        contender: `sluice, threads ${threads ? "on" : "off"}`,
        clipsPerSec: median(r.clipsPerSec),
        passes: r.clipsPerSec,
        ratio: null,
        amplification: r.counts.decodeAmplification,
        skippedFrames: r.counts.skippedFrames,
        sharedClips: r.counts.sharedClips,
      });
    }
  }
  load.after = loadavg();
  if (values.json) {
    console.log(
      JSON.stringify({ workload: WORKLOAD, passes, seed, cores: navigator.hardwareConcurrency, load, rows }),
    );
    return;
  }
  console.log(
    `load average before ${load.before}, after ${load.after}; ${navigator.hardwareConcurrency} cores`,
  );
  console.log(
    "| set | contender | clips/s (median) | ratio to DataLoader+PyAV | decode amplification | skipped | shared |",
  );
  console.log("| --- | --- | --- | --- | --- | --- | --- |");
  const f = (x: number | null, d = 2) => x === null ? "" : x.toFixed(d);
  for (const r of rows) {
    console.log(
      `| ${r.variant} | ${r.contender} | ${r.clipsPerSec.toFixed(1)} | ${f(r.ratio)} | ${
        f(r.amplification)
      } | ` +
        `${r.skippedFrames ?? ""} | ${r.sharedClips ?? ""} |`,
    );
  }
}

if (import.meta.main) await main();
