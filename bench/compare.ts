/**
 * Side by side, one script, one run (issues 16, 23): the clip workload of `bench/clip_workload.ts` through every
 * contender on this machine, for each workload shape (`bench/workload_sets.ts`: sluice's sampler with 2 clips per
 * video side by side, a manifest with one row per clip, one random clip per video per epoch; each at keyint 250
 * and 30; and a 1280×720 set): sluice in-process and subprocess, `sluice serve` to Python, PyTorch
 * `DataLoader(num_workers=2)` over PyAV, node-av in 2 worker threads and the ffmpeg CLI per clip, 2 at a time.
 * Each is first checked to return the same frames as PyAV (same frame times, PSNR ≥ 35 dB per clip); one that
 * returns other frames is reported, not timed. Each shape's decode floor (`bench/decode_floor.ts`) is measured
 * on the same clips.
 *
 * Writes `bench/RESULTS.md` (a summary of sluice ÷ PyTorch + PyAV over the shapes, then a table per shape: clips/s,
 * process-tree CPU seconds per clip, the decode floor's share of it, peak memory, decode amplification and
 * sluice's bottleneck verdict, each as a ratio to sluice in-process; the machine, the versions and the load
 * average around the run) and `bench/RESULTS.svg` (the chart it shows).
 *
 * Run: `deno run -A bench/compare.ts [--passes 5] [--rounds 1] [--seed 1] [--variants sampler-gop250,...]
 * [--videos N] [--contenders ids] [--out bench/RESULTS.md] [--from RAW.json]`. Each run also saves its raw
 * results (every pass) under the workload's cache directory; `--from` renders such a file again. node-av is
 * installed for the benchmark only: `SKIP_FFMPEG=true npm install --prefix bench/contenders` (without it, its
 * row says so).
 * @module
 */

import { parseArgs } from "node:util";
import { ffmpegInfo } from "../src/media/ffmpeg.ts";
import {
  allContenders,
  amplificationNote,
  DEFAULT_DIR,
  floorNote,
  markdownTable,
  PYTHON,
  PYTORCH_PYAV,
  runWorkload,
  selectContenders,
  SLUICE_CONFIGS,
  type VariantResult,
  WORKLOAD,
  WORKLOAD_ARGS,
  workloadOptions,
} from "./clip_workload.ts";
import { SHAPES } from "./workload_sets.ts";

const BASELINE = SLUICE_CONFIGS[0].id;

async function capture(cmd: string[]): Promise<string> {
  try {
    const r = await new Deno.Command(cmd[0], { args: cmd.slice(1), stdout: "piped", stderr: "null" })
      .output();
    return r.success ? new TextDecoder().decode(r.stdout).trim() : "unavailable";
  } catch {
    return "unavailable";
  }
}

function loadAverage(): string {
  try {
    return Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).join(" ");
  } catch {
    return "?";
  }
}

function cpuModel(): string {
  try {
    return Deno.readTextFileSync("/proc/cpuinfo").match(/^model name\s*:\s*(.*)$/m)?.[1] ?? "?";
  } catch {
    return "?";
  }
}

/** Versions of everything measured. */
async function versions(): Promise<string[]> {
  const f = ffmpegInfo();
  const here = new URL(".", import.meta.url).pathname;
  return [
    `sluice: Deno ${Deno.version.deno} · FFmpeg ${f.release} (libavcodec ${f.versions.avcodec})`,
    `PyTorch + PyAV: ${await capture([
      PYTHON,
      "-c",
      "import sys, torch, av; print('Python', sys.version.split()[0], '· torch', torch.__version__, '· PyAV', av.__version__, '· FFmpeg', av.library_versions['libavcodec'])",
    ])}`,
    `node-av: ${await capture([
      "node",
      "-e",
      `const p=require('${here}contenders/node_modules/node-av/package.json');console.log('node-av '+p.version+' · Node '+process.version)`,
    ])}`,
    `ffmpeg CLI: ${(await capture(["ffmpeg", "-version"])).split("\n")[0]}`,
  ];
}

interface Bar {
  label: string;
  value: number | null;
  ratio: number | null;
}

/** One panel of horizontal bars, grouped by variant, from `y0` down; returns its SVG and its height. */
function panel(
  y0: number,
  width: number,
  title: string,
  unit: string,
  groups: { name: string; bars: Bar[] }[],
  digits: number,
): { svg: string; height: number } {
  const colors = ["#2b6cb0", "#dd6b20", "#38a169", "#805ad5", "#d53f8c", "#718096", "#b7791f"];
  const max = Math.max(1e-9, ...groups.flatMap((g) => g.bars.map((b) => b.value ?? 0)));
  const x0 = 10, labelW = 300, barH = 14, gap = 4;
  const out: string[] = [
    `<text x="${x0}" y="${y0 + 14}" font-weight="bold">${esc(title)} ` +
    `<tspan font-weight="normal" fill="#555">(${esc(unit)})</tspan></text>`,
  ];
  let y = y0 + 26;
  for (const g of groups) {
    out.push(`<text x="${x0}" y="${y + 11}" fill="#333" font-style="italic">${esc(g.name)}</text>`);
    y += 16;
    for (const [i, b] of g.bars.entries()) {
      out.push(`<text x="${x0 + labelW - 6}" y="${y + 11}" text-anchor="end">${esc(b.label)}</text>`);
      if (b.value === null) {
        out.push(`<text x="${x0 + labelW}" y="${y + 11}" fill="#999">not measured</text>`);
      } else {
        const w = Math.max(1, (b.value / max) * (width - labelW - 110));
        const r = b.ratio === null ? "" : ` (${b.ratio.toFixed(2)}×)`;
        out.push(
          `<rect x="${x0 + labelW}" y="${y}" width="${w.toFixed(1)}" height="${barH}" ` +
            `fill="${colors[i % colors.length]}"/>`,
          `<text x="${x0 + labelW + w + 4}" y="${y + 11}">${b.value.toFixed(digits)}${r}</text>`,
        );
      }
      y += barH + gap;
    }
    y += 6;
  }
  return { svg: out.join("\n"), height: y - y0 + 10 };
}

function esc(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/** The chart: clips/s, CPU s/clip and peak RSS per contender and variant, ratios to sluice in-process. */
export function chart(results: VariantResult[]): string {
  type S = NonNullable<VariantResult["results"][number]["summary"]>;
  const metric = (get: (s: S) => number) =>
    results.map((v) => {
      const base = v.results.find((r) => r.id === BASELINE)?.summary;
      return {
        name: `${v.variant} (${v.width}×${v.height}, keyint ${v.gop})`,
        bars: v.results.map((r): Bar => {
          const value = r.summary ? get(r.summary) : null;
          return { label: r.name, value, ratio: value !== null && base ? value / get(base) : null };
        }),
      };
    });
  const width = 820;
  const panels: [string, string, (s: S) => number, number][] = [
    ["Throughput, higher is better", "clips/s, median of the timed passes", (s) => s.clipsPerSec, 1],
    ["CPU, lower is better", "CPU seconds of the process tree per clip", (s) => s.cpuPerClip, 3],
    ["Memory, lower is better", "peak RSS of the process tree, MiB", (s) => s.peakRss / 2 ** 20, 0],
  ];
  const parts: string[] = [];
  let y = 10;
  for (const [title, unit, get, digits] of panels) {
    const p = panel(y, width, title, unit, metric(get), digits);
    parts.push(p.svg);
    y += p.height;
  }
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${y}" font-family="sans-serif" ` +
    `font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    ...parts,
    `</svg>`,
    "",
  ].join("\n");
}

/** What a report needs besides the results; saved with them so `--from` can render them again. */
interface RunMeta {
  args: string[];
  started: string;
  minutes: number;
  seed: number;
  passes: number;
  rounds: number;
  loadBefore: string;
  loadAfter: string;
  cpu: string;
  cores: number;
  versions: string[];
}

/** The set a variant ran on, in words. */
function setWords(v: VariantResult): string {
  return `${v.videos} videos of ${v.width}×${v.height}, keyint ${v.gop}`;
}

/** sluice in-process ÷ PyTorch + PyAV per variant: clips/s, CPU per clip, the floor's share of each one's CPU. */
export function summaryTable(results: VariantResult[]): string {
  const rows = [
    "| shape | set | sluice ÷ DataLoader + PyAV, clips/s | CPU s/clip, sluice / PyAV | decode floor ÷ CPU, sluice / PyAV | sluice's verdict |",
    "| --- | --- | --- | --- | --- | --- |",
  ];
  for (const v of results) {
    const s = v.results.find((r) => r.id === BASELINE)?.summary;
    const p = v.results.find((r) => r.id === PYTORCH_PYAV.id)?.summary;
    const share = (x: { cpuPerClip: number } | null | undefined) =>
      x && v.floor ? `${((v.floor.perClip / x.cpuPerClip) * 100).toFixed(0)}%` : "-";
    const verdict = s?.verdicts.length ? [...new Set(s.verdicts)].join(", ") : "-";
    rows.push(
      `| ${v.shape} | ${setWords(v)} | ${
        s && p ? `${(s.clipsPerSec / p.clipsPerSec).toFixed(2)}×` : "-"
      } | ` +
        `${s ? s.cpuPerClip.toFixed(3) : "-"} / ${p ? p.cpuPerClip.toFixed(3) : "-"} | ${share(s)} / ${
          share(p)
        } | ` +
        `${verdict} |`,
    );
  }
  return rows.join("\n");
}

/**
 * `md` with the `## GPU…` sections of the `previous` RESULTS.md appended: they hold what the GPU kit measured
 * (scripts/gpu, docs/gpu.md), which a CPU rerun of this benchmark cannot measure again, so a rerun keeps them.
 */
export function keepGpuSections(md: string, previous: string): string {
  const kept = previous.split(/\n(?=## )/).filter((s) => s.startsWith("## GPU"));
  return kept.length ? `${md.trimEnd()}\n\n${kept.map((s) => s.trimEnd()).join("\n\n")}\n` : md;
}

/** RESULTS.md for one run; `svgName` is the chart's file name beside it. */
export function report(meta: RunMeta, results: VariantResult[], svgName: string): string {
  const w = WORKLOAD;
  const shared = Number(meta.loadBefore.split(" ")[0]) >= 1;
  const shapes = [...new Set(results.map((v) => v.shape))];
  return [
    "# sluice side by side",
    "",
    `Generated by \`deno run -A bench/compare.ts${meta.args.length ? " " + meta.args.join(" ") : ""}\` on ` +
    `${meta.started}, ${
      meta.minutes.toFixed(1)
    } min. Do not edit: rerun it (the GPU sections at the end are ` +
    "written from the GPU kit's reports and kept across reruns).",
    "",
    ...(shared
      ? [
        `**Measured on a loaded machine** (load average ${meta.loadBefore} before the run, ${meta.cores} cores): ` +
        "absolute figures are low and noisy; take final figures on a quiet machine.",
        "",
      ]
      : []),
    `![clips/s, CPU per clip and peak RSS per contender](${svgName})`,
    "",
    `**Workload.** Videos of ${w.durationSec} s at ${w.fps} fps, H.264 High with B-frames, AAC audio (made with ` +
    `the ffmpeg CLI by \`bench/workload_sets.ts\`); each clip is ${w.numFrames} consecutive frames at the native ` +
    `rate from the frame on screen at its start (docs/clips.md) → ${w.outWidth}×${w.outHeight} RGB24 bilinear, ` +
    `batches of ${w.batchSize}. Shapes (seed ${meta.seed}; every contender gets the same list):`,
    "",
    ...shapes.map((k) => `- **${k}**: ${SHAPES[k].describe}.`),
    "",
    `Each timed run starts with a warm-up pass; clips/s is the median of ${
      meta.passes * meta.rounds
    } timed ` +
    `passes (${meta.rounds} interleaved round(s) of ${meta.passes}; a new clip list each pass, the same for every ` +
    "contender).",
    "",
    "**Checked first.** Each contender's clips of the first pass are compared with PyAV decoding the same clips " +
    "in one process: same frame times and PSNR ≥ 35 dB per clip. A contender that returns other frames is " +
    "reported, not timed.",
    "",
    "**Measured from outside, the same way for all.** Wall time per pass (the contender's own clock); CPU = " +
    "user + system seconds of the whole process tree (worker processes, backend child, spawned ffmpegs) over the " +
    "timed passes, per clip; peak RSS = highest sum of the tree's RSS, sampled every 100 ms over the whole run " +
    "(shared pages count once per process: forked PyTorch workers share much of their parent; PSS splits them). " +
    "The decode floor is what `ffmpeg -threads 1` spends in its decoder on just the frames each timed clip needs, " +
    "from its keyframe (`bench/decode_floor.ts`).",
    "",
    `**Machine.** ${meta.cpu}, ${meta.cores} cores. Load average ${meta.loadBefore} before and ` +
    `${meta.loadAfter} after the run. ` +
    (shared
      ? "**The machine was shared with other work during this run**: absolute figures are low and noisy, and " +
        "under contention the scheduler shares the cores per runnable thread, so clips/s favours contenders " +
        "with more threads; CPU seconds per clip is the steadier comparison. Take final figures on a quiet machine."
      : "The machine was otherwise idle."),
    "",
    ...meta.versions.map((v) => `- ${v}`),
    "",
    "## Summary over the shapes",
    "",
    summaryTable(results),
    "",
    ...shapes.flatMap((k) => [
      `## ${k}: ${SHAPES[k].title}`,
      "",
      ...results.filter((v) => v.shape === k).flatMap((v) => [
        `### ${v.variant}: ${setWords(v)}`,
        "",
        `${v.clipsPerPass} clips per pass; ratios to ${SLUICE_CONFIGS[0].name}. ${floorNote(v)}`,
        "",
        markdownTable(v, BASELINE),
        "",
      ]),
    ]),
    amplificationNote(),
    "",
  ].join("\n");
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      ...WORKLOAD_ARGS,
      out: { type: "string", default: new URL("RESULTS.md", import.meta.url).pathname },
      from: { type: "string" },
    },
  });
  const svgPath = values.out!.replace(/\.md$/, "") + ".svg";
  let meta: RunMeta, results: VariantResult[];
  if (values.from !== undefined) {
    ({ meta, results } = JSON.parse(Deno.readTextFileSync(values.from)));
  } else {
    const contenders = selectContenders(values.contenders, allContenders());
    const loadBefore = loadAverage();
    const started = new Date();
    results = await runWorkload(workloadOptions(values, contenders));
    meta = {
      args: [...Deno.args],
      started: started.toISOString(),
      minutes: (Date.now() - started.getTime()) / 60_000,
      seed: Number(values.seed),
      passes: Number(values.passes),
      rounds: Number(values.rounds),
      loadBefore,
      loadAfter: loadAverage(),
      cpu: cpuModel(),
      cores: navigator.hardwareConcurrency,
      versions: await versions(),
    };
    const raw = `${values.dir ?? DEFAULT_DIR}/compare-${meta.started.replace(/[:.]/g, "-")}.json`;
    Deno.writeTextFileSync(raw, JSON.stringify({ meta, results }));
    console.error(`compare: raw results in ${raw} (render again with --from)`);
  }
  Deno.writeTextFileSync(svgPath, chart(results));
  let previous = "";
  try {
    previous = Deno.readTextFileSync(values.out!);
  } catch { /* a first run */ }
  const md = keepGpuSections(report(meta, results, svgPath.split("/").pop()!), previous);
  Deno.writeTextFileSync(values.out!, md);
  console.log(md);
}
