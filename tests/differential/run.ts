/**
 * The differential harness (issue 30): `deno task differential [--minutes N] [--seed S] [--configs N]
 * [--config I,J,...] [--start K] [--save DIR] [--no-minimize] [--quiet]`.
 *
 * Runs configurations `K, K+1, …` of run `S` (config.ts: a seeded random dataset over ../shared/media and files
 * made with the ffmpeg CLI, and random loader options) for N minutes (or N configurations), each through the
 * loader and compared clip by clip with an independent decode (oracle.ts), with a progress line per
 * configuration. A configuration with a mismatch is made smaller (rows left out, one epoch, no resume, while
 * the same kind of mismatch stays) and written to `--save` (default `.cache/differential`) as a repro: the
 * dataset's rows, the options and the clips that differ. `deno run -A tests/differential/cases.ts <repro.json>
 * <name> "<what it found>"` turns one into a replay case under tests/differential/cases/, which
 * replay_test.ts replays.
 * @module
 */
import { type DiffConfig, drawConfig } from "./config.ts";
import { type ConfigRun, describeConfig, type Mismatch, runConfig } from "./harness.ts";
import { sourceName } from "./sources.ts";
import { knownBug } from "./known.ts";

/** Options of {@link runDifferential}. */
export interface DifferentialOptions {
  seed: number;
  /** Configurations to run, in order; or from `start` on until `minutes` pass. */
  indices?: number[];
  start?: number;
  minutes?: number;
  /** Where repros are written (default `.cache/differential`); null: nowhere. */
  save?: string | null;
  /** Make a mismatching configuration smaller before saving it (default true). */
  minimize?: boolean;
  log?: (line: string) => void;
}

/** A configuration that mismatched: the (smallest) configuration that shows it, and what differs. */
export interface Repro {
  found: string;
  config: DiffConfig;
  mismatches: Mismatch[];
  /** Set when every mismatch is an open bug of known.ts: its issue. */
  known?: string;
}

/** What a run covered and found. */
export interface DifferentialSummary {
  seed: number;
  configs: number;
  clips: number;
  failed: number;
  indexed: number;
  audio: number;
  worstPsnr: number;
  /** Configurations with a new mismatch. */
  repros: Repro[];
  /** Configurations whose mismatches are all known open bugs (known.ts). */
  known: Repro[];
  /** Configurations by feature ("sampling rate", "backend subprocess", "container mkv", …). */
  coverage: Record<string, number>;
  elapsedMs: number;
}

/** The features a configuration exercises, for the coverage table. */
export function features(c: DiffConfig): string[] {
  const o = c.options, clip = o.clip, f: string[] = [];
  f.push(`sampling ${clip.sampling}`, `resize ${clip.resize}`, `dtype ${clip.dtype}`, `layout ${o.layout}`);
  f.push(`backend ${o.backend}`, `interpolation ${clip.interpolation}`, `placement ${o.sampler?.placement}`);
  if (clip.flipProbability! > 0) f.push("flips");
  if (clip.rotate === false) f.push("rotate off");
  if (o.audio) f.push(`audio ${o.audio.channels === 2 ? "stereo" : "mono"}`);
  if ((o.sampler?.clipsPerVideo ?? 1) > 1) f.push("clips per video > 1");
  if (o.sampler?.keyframeAligned) f.push("keyframe-aligned");
  if (o.sampler?.shuffleBuffer) f.push("shuffle buffer");
  if (o.slots) f.push("batch slots");
  if (!o.ordered) f.push("unordered");
  if (o.decodeLess) f.push("decode-less switches");
  if (c.resume) f.push("resume");
  if (c.epochs > 1) f.push("two epochs");
  if (c.rows.some((r) => r.range)) f.push("manifest ranges");
  for (const r of c.rows) {
    if ("shared" in r.source) {
      f.push(`shared ${r.source.shared}`);
      continue;
    }
    const s = r.source.made;
    f.push(`codec ${s.codec}`, `container ${s.container}`);
    if (s.bframes > 0) f.push("B-frames");
    if (s.rotate) f.push("rotation");
    if (s.gaps) f.push("VFR");
    if (s.width % 2 === 1) f.push("odd size");
    f.push(s.audio ? `audio track ${s.audio.codec}` : "no audio track");
    if (s.audio?.channels === 6) f.push("5.1 audio");
    if (s.audio?.durationSec) f.push("audio shorter than video");
  }
  return [...new Set(f)];
}

/** Runs configurations and reports what differs; see the module docs. Never throws for a mismatch. */
export async function runDifferential(o: DifferentialOptions): Promise<DifferentialSummary> {
  const log = o.log ?? ((l: string) => console.error(l));
  const t0 = performance.now();
  const deadline = o.minutes === undefined ? Infinity : t0 + o.minutes * 60_000;
  const summary: DifferentialSummary = {
    seed: o.seed,
    configs: 0,
    clips: 0,
    failed: 0,
    indexed: 0,
    audio: 0,
    worstPsnr: Infinity,
    repros: [],
    known: [],
    coverage: {},
    elapsedMs: 0,
  };
  const save = o.save === undefined ? ".cache/differential" : o.save;
  for (let i = 0;; i++) {
    const index = o.indices !== undefined ? o.indices[i] : (o.start ?? 0) + i;
    if (index === undefined || (o.indices === undefined && performance.now() >= deadline)) break;
    const config = drawConfig(o.seed, index);
    const r = await runConfig(config);
    summary.configs++;
    summary.clips += r.clips;
    summary.failed += r.failed;
    summary.indexed += r.indexed;
    summary.audio += r.audio;
    summary.worstPsnr = Math.min(summary.worstPsnr, r.worstPsnr);
    for (const f of features(config)) summary.coverage[f] = (summary.coverage[f] ?? 0) + 1;
    const s = ((performance.now() - t0) / 1000).toFixed(0);
    log(
      `differential: config ${index}: ${r.clips} clips, ${r.failed} failed, ${r.mismatches.length} mismatches ` +
        `(${(r.ms / 1000).toFixed(1)} s; total ${summary.configs} configs, ${summary.clips} clips, ` +
        `${summary.repros.length} with mismatches, ${summary.known.length} known, ${s} s)`,
    );
    if (r.mismatches.length === 0) continue;
    const known = r.mismatches.every((m) => knownBug(m) !== undefined)
      ? knownBug(r.mismatches[0])!.issue
      : undefined;
    log(`  ${describeConfig(config)}`);
    for (const m of r.mismatches.slice(0, 5)) {
      log(`  ${known ? "known" : "MISMATCH"} ${m.kind}: ${m.detail.split("\n")[0]}`);
    }
    // A known bug is made smaller once (for its replay case), a new mismatch every time.
    const again = known !== undefined && summary.known.some((k) => k.known === known);
    const small = o.minimize === false || again
      ? { config, mismatches: r.mismatches }
      : await minimize(config, r, log);
    const repro: Repro = { found: `differential seed ${o.seed} config ${index}`, ...small };
    if (known !== undefined) repro.known = known;
    (known !== undefined ? summary.known : summary.repros).push(repro);
    if (save !== null) {
      await Deno.mkdir(save, { recursive: true });
      const file = `${save}/${o.seed}-${index}.json`;
      await Deno.writeTextFile(file, JSON.stringify(repro, null, 2) + "\n");
      log(`  repro: ${file} (replay: deno task differential --seed ${o.seed} --config ${index})`);
    }
  }
  summary.elapsedMs = performance.now() - t0;
  return summary;
}

/**
 * A smaller configuration with a mismatch of the same kind as `r`'s: rows left out one at a time, then one
 * epoch without a resume point, each kept when the mismatch stays.
 */
async function minimize(
  config: DiffConfig,
  r: ConfigRun,
  log: (l: string) => void,
): Promise<{ config: DiffConfig; mismatches: Mismatch[] }> {
  const kinds = new Set(r.mismatches.map((m) => m.kind));
  let best = { config, mismatches: r.mismatches };
  const tryIt = async (c: DiffConfig) => {
    const t = await runConfig(c);
    if (t.mismatches.some((m) => kinds.has(m.kind))) best = { config: c, mismatches: t.mismatches };
  };
  for (let i = best.config.rows.length - 1; i >= 0 && best.config.rows.length > 1; i--) {
    if (i >= best.config.rows.length) continue;
    await tryIt({ ...best.config, rows: best.config.rows.filter((_, k) => k !== i) });
  }
  if (best.config.epochs > 1 || best.config.resume) {
    const { resume: _, ...rest } = best.config;
    await tryIt({ ...rest, epochs: 1 });
  }
  log(
    `  minimized: ${best.config.rows.length} of ${config.rows.length} rows ` +
      `[${best.config.rows.map((x) => sourceName(x.source)).join("; ")}], ${best.config.epochs} epochs`,
  );
  return best;
}

/** The summary as a few lines. */
export function formatDifferential(s: DifferentialSummary): string {
  const cov = Object.entries(s.coverage).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => `${k} ${v}`);
  return [
    `differential: seed ${s.seed}: ${s.configs} configurations, ${s.clips} clips compared ` +
    `(${s.indexed} frame for frame by index, ${s.audio} with audio), ${s.failed} clips failed with an ` +
    `allowed cause, worst PSNR ${
      s.worstPsnr === Infinity ? "∞ (identical)" : `${s.worstPsnr.toFixed(1)} dB`
    }, ` +
    `${s.repros.length} configurations with new mismatches, ${s.known.length} with known open bugs only, in ` +
    `${(s.elapsedMs / 60_000).toFixed(1)} min`,
    `  coverage (configurations): ${cov.join(", ")}`,
    ...s.repros.map((r) =>
      `  MISMATCH ${r.found}: ${[...new Set(r.mismatches.map((m) => m.kind))].join(", ")}: ${
        r.mismatches[0].detail.split("\n")[0]
      }`
    ),
    ...Object.entries(Object.groupBy(s.known, (r) => r.known!)).map(([issue, rs]) =>
      `  known open bug, ${rs!.length} configurations (first: ${rs![0].found}): ${issue}`
    ),
  ].join("\n");
}

function parseArgs(args: string[]): DifferentialOptions & { quiet: boolean; configs?: number } {
  const get = (name: string) => {
    const i = args.indexOf(`--${name}`);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const list = get("config");
  const configs = get("configs");
  const start = Number(get("start") ?? 0);
  const save = get("save");
  return {
    seed: Number(get("seed") ?? Math.floor(Math.random() * 2 ** 31)),
    ...(list !== undefined ? { indices: list.split(",").map(Number) } : {}),
    ...(configs !== undefined
      ? { indices: Array.from({ length: Number(configs) }, (_, i) => start + i) }
      : {}),
    start,
    minutes: Number(get("minutes") ?? 5),
    ...(save !== undefined ? { save } : {}),
    minimize: !args.includes("--no-minimize"),
    quiet: args.includes("--quiet"),
  };
}

if (import.meta.main) {
  const opts = parseArgs(Deno.args);
  if (opts.quiet) opts.log = () => {};
  console.error(
    `differential: seed ${opts.seed}, ${
      opts.indices ? `${opts.indices.length} configurations` : `${opts.minutes} minutes`
    }`,
  );
  const summary = await runDifferential(opts);
  console.log(formatDifferential(summary));
  Deno.exit(summary.repros.length === 0 ? 0 : 1);
}
