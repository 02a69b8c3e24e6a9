/**
 * The clip workload (issues 14, 23): video sets and workload shapes (`bench/workload_sets.ts`), decoded by sluice
 * and by its peers in one run, each checked to return the same frames before it is timed.
 *
 * - Variants: a shape over a set, `<shape>-<set>`: `sampler` (sluice's own sampler, 2 clips per video side by
 *   side), `rows` (a manifest with one row per clip, 2–4 rows per video, shuffled), `kinetics` (one random clip
 *   per video per pass), over `gop250`, `gop30` (340×256) or `720p-gop30`, `720p-gop250`; see that module.
 *   Pass 0 is the warm-up (and the pass whose frames are verified); passes 1… are timed.
 * - Contenders (`bench/contenders/`, contract and measurement in `harness.ts`): every entry of
 *   {@link SLUICE_CONFIGS} (named loader configurations: add issue 14's on/off variants there, or pass
 *   `--config NAME=JSON` for one run), PyTorch `DataLoader(num_workers=2)` over PyAV, and, for
 *   `bench/compare.ts`, node-av in 2 worker threads, the ffmpeg CLI per clip and `sluice serve` to Python.
 * - Check first: each contender's frames of pass 0 against PyAV decoding the same clips in one process (same
 *   frame times, PSNR ≥ 35 dB per clip); one that returns other frames is reported, not timed.
 * - The decode floor of the timed clips (`bench/decode_floor.ts`): what `ffmpeg -threads 1` spends decoding just
 *   the frames each clip needs, from its keyframe.
 *
 * Reported per variant: clips/s (median of the timed passes), process-tree CPU seconds per clip, the decode floor
 * as a fraction of that CPU, decode amplification (frames decoded / frames delivered, when the contender can
 * tell), peak memory and, for sluice, the loader's bottleneck verdict.
 *
 * Run: `deno run -A bench/clip_workload.ts [--passes 5] [--rounds 1] [--seed 1] [--variants sampler-gop250,...]
 * [--videos N] [--contenders sluice-inprocess,pytorch-pyav,...] [--config NAME=JSON ...] [--dir DIR] [--json]`
 * (`--rounds R`: R timed runs of each contender, interleaved, for a machine whose load changes; `--videos N`: the
 * first N videos of each set, for a quick run.)
 * @module
 */

import { parseArgs } from "node:util";
import {
  type ClipList,
  runContender,
  type RunResult,
  summarise,
  type Summary,
  type Verification,
  verifyFrames,
} from "./contenders/harness.ts";
import { type DecodeFloor, decodeFloor } from "./decode_floor.ts";
import { DEFAULT_VARIANTS, ensureSet, makeClipList, parseVariant, type ShapeId } from "./workload_sets.ts";

export { WORKLOAD } from "./workload_sets.ts";

const HERE = new URL(".", import.meta.url).pathname;
const REPO = new URL("..", import.meta.url).pathname;

/** The default cache directory of the sets, clip lists and verify outputs. */
export const DEFAULT_DIR = `${REPO}.cache/bench/clip_workload`;

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
  shape: ShapeId;
  /** The set's id, size and keyframe interval. */
  set: string;
  width: number;
  height: number;
  gop: number;
  videos: number;
  /** Clips per pass (of pass 0; the manifest shapes' passes may differ by a few). */
  clipsPerPass: number;
  timedPasses: number;
  /** The decode floor of the timed passes' clips (null with `floor: false`). */
  floor: DecodeFloor | null;
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
  /** Use only the first N videos of each set (a quick run). */
  videos?: number;
  /** Measure the decode floor (default true). */
  floor?: boolean;
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
  const variants = (opts.variants ?? DEFAULT_VARIANTS).map(parseVariant);
  for (const v of variants) {
    const variant = v.id;
    const videos = await ensureSet(dir, v.set, opts.videos ?? Infinity, log);
    const work = `${dir}/${v.set.id}/run-${v.shape}`;
    await Deno.mkdir(work, { recursive: true });
    const list: ClipList = await makeClipList(v, videos, work, seed, passes);
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
    let floor: DecodeFloor | null = null;
    if (opts.floor ?? true) {
      log(`clip_workload ${variant}: the decode floor (ffmpeg -threads 1 per clip)`);
      floor = await decodeFloor(list.passes.slice(1).flat(), list.numFrames);
    }
    out.push({
      variant,
      shape: v.shape,
      set: v.set.id,
      width: v.set.width,
      height: v.set.height,
      gop: v.set.gop,
      videos: videos.length,
      clipsPerPass: list.passes[0].length,
      timedPasses: (passes - 1) * rounds,
      floor,
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
    "| contender | clips/s | CPU s/clip | decode floor ÷ CPU | peak RSS MiB (PSS) | decode amplification | verdict | frames |",
    "| --- | --- | --- | --- | --- | --- | --- | --- |",
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
      rows.push(`| ${r.name} | - | - | - | - | - | - | ${check}${why} |`);
      continue;
    }
    const mib = (n: number) => (n / 2 ** 20).toFixed(0);
    const floor = v.floor === null ? "-" : `${((v.floor.perClip / s.cpuPerClip) * 100).toFixed(0)}%`;
    rows.push(
      `| ${r.name} | ${s.clipsPerSec.toFixed(1)}${ratio(s.clipsPerSec, base?.clipsPerSec)} | ` +
        `${s.cpuPerClip.toFixed(3)}${ratio(s.cpuPerClip, base?.cpuPerClip)} | ${floor} | ` +
        `${mib(s.peakRss)}${ratio(s.peakRss, base?.peakRss)} (${mib(s.peakPss)}) | ` +
        `${s.amplification === null ? "-" : s.amplification.toFixed(2)} | ${
          verdicts(s.verdicts)
        } | ${check} |`,
    );
  }
  return rows.join("\n");
}

/** The runs' verdicts, each once with its count when runs disagree (`decode`, `decode ×3, demux ×1`). */
function verdicts(vs: string[] | undefined): string {
  if (vs === undefined || vs.length === 0) return "-";
  const n = new Map<string, number>();
  for (const v of vs) n.set(v, (n.get(v) ?? 0) + 1);
  return n.size === 1 ? vs[0] : [...n].map(([v, k]) => `${v} ×${k}`).join(", ");
}

/** The line under a variant's table that gives its decode floor. */
export function floorNote(v: VariantResult): string {
  if (v.floor === null) return "Decode floor not measured.";
  return `Decode floor: ${(v.floor.perClip * 1000).toFixed(1)} ms of CPU per clip (\`ffmpeg -threads 1\` ` +
    `decoding each of the ${v.floor.clips} timed clips from its keyframe to its last frame, decoder calls only).`;
}

/** The lines under the tables that say what decode amplification, the floor and the verdict are. */
export function amplificationNote(): string {
  return "Decode amplification = frames decoded / frames delivered, where the contender can count them (sluice: " +
    "the loader's per-clip `decodedFrames`; PyAV and node-av: frames their decoders returned). Decode floor ÷ " +
    "CPU = the CPU a single-threaded FFmpeg decoder needs for just the frames each clip requires (from its " +
    "keyframe; `bench/decode_floor.ts`) over the contender's whole CPU per clip: the share of its CPU that the " +
    "physical limit accounts for (decoding only; scaling, copies and the rest are the remainder; sluice's " +
    "skipping of unshown frames can take it past 100%). Verdict = `loader.stats().pipeline.bottleneck` at the " +
    "end of each timed run (sluice only).";
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
  variants: { type: "string", default: DEFAULT_VARIANTS.join(",") },
  videos: { type: "string" },
  contenders: { type: "string" },
} as const;

/** {@link runWorkload}'s options from parsed {@link WORKLOAD_ARGS}. */
export function workloadOptions(
  values: {
    dir?: string;
    seed?: string;
    passes?: string;
    rounds?: string;
    variants?: string;
    videos?: string;
  },
  contenders: Contender[],
): WorkloadOptions {
  return {
    dir: values.dir,
    seed: Number(values.seed ?? 1),
    passes: Number(values.passes ?? 5),
    rounds: Number(values.rounds ?? 1),
    variants: (values.variants ?? DEFAULT_VARIANTS.join(",")).split(","),
    videos: values.videos === undefined ? undefined : Number(values.videos),
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
