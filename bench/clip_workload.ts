/**
 * The clip workload (issue 14): a Kinetics-like set and a seeded fixed clip list, decoded by sluice and by its
 * peers in one run, each checked to return the same frames before it is timed.
 *
 * - Set: 48 videos of 10 s, 340×256, 30 fps, H.264 High with B-frames (x264 defaults: 3, pyramid), AAC audio,
 *   made with the ffmpeg CLI from six moving lavfi sources with per-video temporal noise; two variants of the
 *   same videos, keyint 250 (`gop250`, one keyframe at 0 s and one at 8.33 s, like Kinetics' YouTube encodes)
 *   and keyint 30 (`gop30`). Made once under `--dir` (default `.cache/bench/clip_workload/`); reruns reuse it.
 * - Clip list: sluice's own sampler, seeded (`--seed`), 2 clips per video at random places, 16 frames each at
 *   the native rate, 112×112 RGB bilinear, batches of 16. The loader has no option to take an explicit list, so
 *   the list is the sampler's plan, read from a loader (`loader.sampler.epoch(p)` for pass `p`) and written to
 *   JSON for the other contenders; the sluice contender checks that its loader delivers exactly that list.
 *   Pass 0 is the warm-up (and the pass whose frames are verified); passes 1… are timed.
 * - Contenders (`bench/contenders/`, contract and measurement in `harness.ts`): every entry of
 *   {@link SLUICE_CONFIGS} (named loader configurations: add issue 14's on/off variants there, or pass
 *   `--config NAME=JSON` for one run), PyTorch `DataLoader(num_workers=2)` over PyAV, and, for
 *   `bench/compare.ts`, node-av in 2 worker threads, the ffmpeg CLI per clip and `sluice serve` to Python.
 * - Check first: each contender's frames of pass 0 against PyAV decoding the same clips in one process (same
 *   frame times, PSNR ≥ 35 dB per clip); one that returns other frames is reported, not timed.
 *
 * Reported per variant: clips/s (median of the timed passes), as a ratio to the DataLoader + PyAV baseline,
 * process-tree CPU seconds per clip, decode amplification (frames decoded / frames delivered, when the
 * contender can tell) and peak memory.
 *
 * Run: `deno run -A bench/clip_workload.ts [--passes 5] [--rounds 1] [--seed 1] [--variants gop250,gop30]
 * [--contenders sluice-inprocess,pytorch-pyav,...] [--config NAME=JSON ...] [--dir DIR] [--json]`
 * (`--rounds R`: R timed runs of each contender, interleaved, for a machine whose load changes.)
 * @module
 */

import { parseArgs } from "node:util";
import { type LoaderOptions, videoClassificationLoader } from "../src/loader/loader.ts";
import {
  type ClipList,
  runContender,
  type RunResult,
  summarise,
  type Summary,
  type Verification,
  verifyFrames,
} from "./contenders/harness.ts";

/** The shape of the workload; see the module docs. */
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
export const VARIANTS: Readonly<Record<string, number>> = { gop250: 250, gop30: 30 };

/** Moving lavfi sources; video `i` uses `SOURCES[i % 6]` and is labelled by it. */
const SOURCES = ["testsrc2", "mandelbrot", "cellauto", "gradients", "sierpinski", "testsrc"];

const HERE = new URL(".", import.meta.url).pathname;
const REPO = new URL("..", import.meta.url).pathname;

/** The default cache directory of the sets, clip lists and verify outputs. */
export const DEFAULT_DIR = `${REPO}.cache/bench/clip_workload`;

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

/**
 * Makes the `gop` variant of the set under `dir` unless it is there already (a marker file records the
 * encoding arguments) and returns its dataset root (`root/<class>/<video>.mp4`).
 */
export async function ensureWorkloadSet(
  dir: string,
  gop: number,
  log: (line: string) => void = (l) => console.error(l),
): Promise<string> {
  const root = `${dir}/gop${gop}/videos`;
  const marker = `${dir}/gop${gop}/.complete.json`;
  const want = JSON.stringify({ workload: WORKLOAD, args: videoArgs(0, gop) });
  try {
    if (Deno.readTextFileSync(marker) === want) return Deno.realPathSync(root);
  } catch {
    // not made yet
  }
  await Deno.remove(`${dir}/gop${gop}`, { recursive: true }).catch(() => {});
  log(`clip_workload: making ${WORKLOAD.videos} videos with keyint ${gop} under ${dir}/gop${gop} (once)`);
  let next = 0, done = 0;
  const one = async () => {
    while (next < WORKLOAD.videos) {
      const i = next++;
      const cls = `${root}/${SOURCES[i % SOURCES.length]}`;
      await Deno.mkdir(cls, { recursive: true });
      const out = `${cls}/v${String(i).padStart(2, "0")}.mp4`;
      const r = await new Deno.Command("ffmpeg", { args: [...videoArgs(i, gop), "-y", out] }).output();
      if (!r.success) throw new Error(`ffmpeg failed for ${out}: ${new TextDecoder().decode(r.stderr)}`);
      if (++done % 8 === 0) log(`clip_workload: ${done}/${WORKLOAD.videos} videos`);
    }
  };
  await Promise.all([one(), one()]);
  Deno.writeTextFileSync(marker, want);
  return Deno.realPathSync(root);
}

/** The loader options that make sluice's sampler plan the workload's clips (everything but a configuration's own). */
export function baseLoaderOptions(root: string, seed: number): Record<string, unknown> {
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
  };
}

/** The seeded clip list of `passes` passes over the set at `root` (sluice's sampler plan of epochs 0…). */
export async function makeClipList(root: string, seed: number, passes: number): Promise<ClipList> {
  const base = baseLoaderOptions(root, seed);
  await using loader = await videoClassificationLoader(
    { ...base, log: () => {} } as unknown as LoaderOptions,
  );
  if (loader.indexFailures.length > 0) {
    throw new Error(`clip_workload: videos failed to index: ${JSON.stringify(loader.indexFailures)}`);
  }
  const items = loader.dataset.items;
  const w = WORKLOAD;
  return {
    dataset: root,
    seed,
    numFrames: w.numFrames,
    width: w.outWidth,
    height: w.outHeight,
    batchSize: w.batchSize,
    passes: Array.from({ length: passes }, (_, e) =>
      loader.sampler.epoch(e).map((c) => ({
        path: items[c.video].path,
        start: c.start,
        end: c.end,
        label: items[c.video].label,
      }))),
    sluice: base,
  };
}

/** A contender of the side-by-side runs. */
export interface Contender {
  /** Short id for `--contenders`. */
  id: string;
  /** Name in reports. */
  name: string;
  /** Null when it can run here, else why not. */
  unavailable(): Promise<string | null>;
  /** The command for one run. */
  command(clipsFile: string, mode: "verify" | "time", outDir?: string): string[];
}

/**
 * A named sluice configuration: loader options merged over the workload's (deeply; see
 * `bench/contenders/sluice.ts`). Issue 14's on/off variants are entries here, e.g.
 * `{ id: "sluice-noskip", name: "sluice in-process, skip off", options: { decodeLess: { skip: false } } }`
 * (whatever option names that work gives the loader).
 */
export interface SluiceConfig {
  id: string;
  name: string;
  options: Record<string, unknown>;
}

/** The sluice configurations every run measures. */
export const SLUICE_CONFIGS: SluiceConfig[] = [
  { id: "sluice-inprocess", name: "sluice in-process", options: { backend: "inprocess" } },
  { id: "sluice-subprocess", name: "sluice subprocess", options: { backend: "subprocess" } },
];

/** A contender for a sluice configuration. */
export function sluiceContender(c: SluiceConfig): Contender {
  return {
    id: c.id,
    name: c.name,
    unavailable: () => Promise.resolve(null),
    command: (clips, mode, out) => [
      Deno.execPath(),
      ...["run", "-A", `${HERE}contenders/sluice.ts`, "--clips", clips, "--mode", mode],
      ...(out ? ["--out", out] : []),
      ...["--config", JSON.stringify(c.options)],
    ],
  };
}

async function works(cmd: string[]): Promise<boolean> {
  try {
    return (await new Deno.Command(cmd[0], { args: cmd.slice(1), stdout: "null", stderr: "null" }).output())
      .success;
  } catch {
    return false;
  }
}

/** Debian's Python (python3-torch and python3-av serve it only; not the pyenv python3 on PATH). */
export const PYTHON = "/usr/bin/python3";

/** PyTorch `DataLoader(num_workers=2)` over a PyAV `Dataset`: the baseline. */
export const PYTORCH_PYAV: Contender = {
  id: "pytorch-pyav",
  name: "PyTorch DataLoader(num_workers=2) + PyAV",
  unavailable: async () =>
    await works([PYTHON, "-c", "import torch, av, numpy"])
      ? null
      : `${PYTHON} cannot import torch, av and numpy (apt install python3-torch python3-av)`,
  command: (clips, mode, out) => [
    PYTHON,
    `${HERE}contenders/pyav_dataloader.py`,
    ...["--clips", clips, "--mode", mode, "--workers", "2"],
    ...(out ? ["--out", out] : []),
  ],
};

/** node-av (npm, its prebuilt FFmpeg) in 2 worker threads; installed for the benchmark only. */
export const NODE_AV: Contender = {
  id: "node-av",
  name: "node-av, 2 worker threads",
  unavailable: async () => {
    try {
      Deno.statSync(`${HERE}contenders/node_modules/node-av/package.json`);
    } catch {
      return "node-av is not installed: SKIP_FFMPEG=true npm install --prefix bench/contenders";
    }
    return await works(["node", "--version"]) ? null : "node is not on PATH";
  },
  command: (clips, mode, out) => [
    "node",
    `${HERE}contenders/node_av.mjs`,
    ...["--clips", clips, "--mode", mode, "--threads", "2"],
    ...(out ? ["--out", out] : []),
  ],
};

/** The ffmpeg CLI spawned per clip, 2 at a time. */
export const FFMPEG_CLI: Contender = {
  id: "ffmpeg-cli",
  name: "ffmpeg CLI per clip, 2 at a time",
  unavailable: async () => await works(["ffmpeg", "-version"]) ? null : "ffmpeg is not on PATH",
  command: (clips, mode, out) => [
    Deno.execPath(),
    ...["run", "-A", `${HERE}contenders/ffmpeg_cli.ts`, "--clips", clips, "--mode", mode, "--jobs", "2"],
    ...(out ? ["--out", out] : []),
  ],
};

/**
 * `sluice serve` to Python (issue 13): the Python client `python/sluice` reading batches from a sluice server.
 * Runs once that client exists in this checkout.
 */
export const SLUICE_SERVE: Contender = {
  id: "sluice-serve",
  name: "sluice serve → Python",
  unavailable: async () => {
    try {
      Deno.statSync(`${REPO}python/sluice/__init__.py`);
    } catch {
      return "python/sluice (the serve client, issue 13) is not in this checkout yet";
    }
    return await works([PYTHON, "-c", "import numpy, torch"]) ? null : `${PYTHON} cannot import numpy, torch`;
  },
  command: (clips, mode, out) => [
    PYTHON,
    `${HERE}contenders/sluice_serve.py`,
    ...["--clips", clips, "--mode", mode],
    ...(out ? ["--out", out] : []),
  ],
  // The server is a Deno process of this checkout; the client finds it through SLUICE_DENO or node_modules.
};

/** Every contender, sluice configurations first. */
export function allContenders(configs: SluiceConfig[] = SLUICE_CONFIGS): Contender[] {
  return [...configs.map(sluiceContender), SLUICE_SERVE, PYTORCH_PYAV, NODE_AV, FFMPEG_CLI];
}

/** One contender's outcome in one variant. */
export interface ContenderResult {
  id: string;
  name: string;
  /** Why it did not run (not installed), or null. */
  unavailable: string | null;
  verification: Verification | null;
  /** The verify run's failure, when it failed to produce output. */
  verifyError?: string;
  /** One timed run per round (empty when not timed). */
  runs: RunResult[];
  /** The first failed timed run's error. */
  error?: string;
  summary: Summary | null;
}

/** One variant's results. */
export interface VariantResult {
  variant: string;
  gop: number;
  clipsPerPass: number;
  timedPasses: number;
  results: ContenderResult[];
}

/** Options of {@link runWorkload}. */
export interface WorkloadOptions {
  dir?: string;
  seed?: number;
  /** Timed passes (a warm-up pass comes first). */
  passes?: number;
  /**
   * Timed runs of each contender (default 1), interleaved: round `r` runs every contender once, in an order
   * rotated by `r`, so load that changes during the run weighs on all alike. Passes of all rounds are pooled.
   */
  rounds?: number;
  variants?: string[];
  contenders: Contender[];
  log?: (line: string) => void;
}

/** Makes the sets and clip lists, checks and times every contender; see the module docs. */
export async function runWorkload(opts: WorkloadOptions): Promise<VariantResult[]> {
  const dir = opts.dir ?? DEFAULT_DIR;
  const log = opts.log ?? ((l: string) => console.error(l));
  const seed = opts.seed ?? 1;
  const passes = (opts.passes ?? 5) + 1;
  const out: VariantResult[] = [];
  for (const variant of opts.variants ?? Object.keys(VARIANTS)) {
    const gop = VARIANTS[variant];
    if (gop === undefined) {
      throw new Error(`unknown variant ${variant} (${Object.keys(VARIANTS).join(", ")})`);
    }
    const root = await ensureWorkloadSet(dir, gop, log);
    const work = `${dir}/gop${gop}/run`;
    await Deno.mkdir(work, { recursive: true });
    const list = await makeClipList(root, seed, passes);
    const clipsFile = `${work}/clips.json`;
    Deno.writeTextFileSync(clipsFile, JSON.stringify(list));
    const refDir = `${work}/reference`;
    await Deno.mkdir(refDir, { recursive: true });
    log(`clip_workload ${variant}: reference frames (PyAV, one process)`);
    const ref = await runContender([
      PYTHON,
      `${HERE}contenders/pyav_dataloader.py`,
      ...["--clips", clipsFile, "--mode", "reference", "--out", refDir],
    ]);
    if (!ref.ok) throw new Error(`the PyAV reference failed: ${ref.error}`);
    const results: ContenderResult[] = [];
    for (const c of opts.contenders) {
      const r: ContenderResult = {
        id: c.id,
        name: c.name,
        unavailable: await c.unavailable(),
        verification: null,
        runs: [],
        summary: null,
      };
      results.push(r);
      if (r.unavailable !== null) {
        log(`clip_workload ${variant}: ${c.name}: not run (${r.unavailable})`);
        continue;
      }
      const vdir = `${work}/verify-${c.id}`;
      await Deno.remove(vdir, { recursive: true }).catch(() => {});
      await Deno.mkdir(vdir, { recursive: true });
      log(`clip_workload ${variant}: ${c.name}: checking frames`);
      const v = await runContender(c.command(clipsFile, "verify", vdir));
      if (!v.ok) r.verifyError = v.error;
      r.verification = verifyFrames(list, refDir, vdir);
      if (!r.verification.ok) {
        log(
          `clip_workload ${variant}: ${c.name}: other frames, not timed: ${
            r.verification.examples.join("; ")
          }`,
        );
      }
    }
    const timed = results.filter((r) => r.verification?.ok);
    const rounds = opts.rounds ?? 1;
    for (let round = 0; round < rounds; round++) {
      for (let k = 0; k < timed.length; k++) {
        const r = timed[(k + round) % timed.length];
        if (r.error !== undefined) continue;
        const c = opts.contenders.find((x) => x.id === r.id)!;
        log(
          `clip_workload ${variant}: ${c.name}: timing ${passes} passes (1 warm-up), round ${
            round + 1
          }/${rounds}`,
        );
        const run = await runContender(c.command(clipsFile, "time"));
        if (!run.ok) {
          r.error = run.error;
          log(`clip_workload ${variant}: ${c.name}: failed: ${run.error}`);
          continue;
        }
        r.runs.push(run);
      }
    }
    for (const r of timed) {
      if (r.error !== undefined || r.runs.length === 0) continue;
      r.summary = summarise(r.runs);
      log(`clip_workload ${variant}: ${r.name}: ${r.summary.clipsPerSec.toFixed(1)} clips/s`);
    }
    out.push({
      variant,
      gop,
      clipsPerPass: list.passes[0].length,
      timedPasses: (passes - 1) * rounds,
      results,
    });
  }
  return out;
}

/** A Markdown table of one variant, ratios against the contender `baseline` (an id). */
export function markdownTable(v: VariantResult, baseline: string): string {
  const base = v.results.find((r) => r.id === baseline)?.summary ?? null;
  const ratio = (x: number, b: number | undefined) =>
    b === undefined || !(b > 0) ? "" : ` (${(x / b).toFixed(2)}×)`;
  const rows = [
    "| contender | clips/s | CPU s/clip | peak RSS MiB (PSS) | decode amplification | frames |",
    "| --- | --- | --- | --- | --- | --- |",
  ];
  for (const r of v.results) {
    const s = r.summary;
    const check = r.unavailable !== null
      ? `not run: ${r.unavailable}`
      : r.verification === null
      ? "-"
      : r.verification.ok
      ? `same (min PSNR ${fmtDb(r.verification.minPsnr)})`
      : `**other frames**: ${r.verification.badPts} pts, ${r.verification.badPsnr} PSNR < 35 dB of ${r.verification.clips}${
        r.verifyError ? `; ${r.verifyError.slice(0, 200)}` : ""
      }`;
    if (s === null) {
      const why = r.error !== undefined ? ` failed: ${r.error.slice(0, 200)}` : "";
      rows.push(`| ${r.name} | - | - | - | - | ${check}${why} |`);
      continue;
    }
    const mib = (n: number) => (n / 2 ** 20).toFixed(0);
    rows.push(
      `| ${r.name} | ${s.clipsPerSec.toFixed(1)}${ratio(s.clipsPerSec, base?.clipsPerSec)} | ` +
        `${s.cpuPerClip.toFixed(3)}${ratio(s.cpuPerClip, base?.cpuPerClip)} | ` +
        `${mib(s.peakRss)}${ratio(s.peakRss, base?.peakRss)} (${mib(s.peakPss)}) | ` +
        `${s.amplification === null ? "-" : s.amplification.toFixed(2)} | ${check} |`,
    );
  }
  return rows.join("\n");
}

/** The line under the tables that says what decode amplification is. */
export function amplificationNote(): string {
  return "Decode amplification = frames decoded / frames delivered, where the contender can count them (sluice: " +
    "the loader's per-clip `decodedFrames`; PyAV and node-av: frames their decoders returned).";
}

/** PSNR in dB; identical frames give Infinity (null after a JSON round trip, as in `--from` files). */
function fmtDb(x: number | null): string {
  return x === null || x === Infinity ? "∞" : `${x.toFixed(1)} dB`;
}

/** Command-line options shared by this script and `bench/compare.ts` (see their module docs). */
export const WORKLOAD_ARGS = {
  dir: { type: "string" },
  seed: { type: "string", default: "1" },
  passes: { type: "string", default: "5" },
  rounds: { type: "string", default: "1" },
  variants: { type: "string", default: Object.keys(VARIANTS).join(",") },
  contenders: { type: "string" },
} as const;

/** {@link runWorkload}'s options from parsed {@link WORKLOAD_ARGS}. */
export function workloadOptions(
  values: { dir?: string; seed?: string; passes?: string; rounds?: string; variants?: string },
  contenders: Contender[],
): WorkloadOptions {
  return {
    dir: values.dir,
    seed: Number(values.seed ?? 1),
    passes: Number(values.passes ?? 5),
    rounds: Number(values.rounds ?? 1),
    variants: (values.variants ?? Object.keys(VARIANTS).join(",")).split(","),
    contenders,
  };
}

/** The contenders named by `--contenders a,b,...` (all of `all` when absent). */
export function selectContenders(ids: string | undefined, all: Contender[]): Contender[] {
  if (ids === undefined) return all;
  return ids.split(",").map((id) => {
    const c = all.find((x) => x.id === id);
    if (!c) throw new Error(`unknown contender ${id} (${all.map((x) => x.id).join(", ")})`);
    return c;
  });
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      ...WORKLOAD_ARGS,
      config: { type: "string", multiple: true },
      json: { type: "boolean" },
    },
  });
  const configs = [...SLUICE_CONFIGS];
  for (const spec of values.config ?? []) {
    const eq = spec.indexOf("=");
    if (eq < 1) throw new Error(`--config wants NAME=JSON, got ${spec}`);
    const name = spec.slice(0, eq);
    configs.push({ id: name, name: `sluice ${name}`, options: JSON.parse(spec.slice(eq + 1)) });
  }
  const contenders = selectContenders(
    values.contenders ?? [...configs.map((c) => c.id), PYTORCH_PYAV.id].join(","),
    allContenders(configs),
  );
  const results = await runWorkload(workloadOptions(values, contenders));
  if (values.json) console.log(JSON.stringify(results, null, 2));
  else {
    for (const v of results) {
      console.log(
        `\n${v.variant}: ${v.clipsPerPass} clips per pass, median of ${v.timedPasses} timed passes; ratios to PyTorch + PyAV`,
      );
      console.log(markdownTable(v, PYTORCH_PYAV.id));
    }
    console.log(`\n${amplificationNote()}`);
  }
}
