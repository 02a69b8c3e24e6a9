/**
 * Side by side, one script, one run (issue 16): the clip workload of `bench/clip_workload.ts` (the Kinetics-like
 * set, keyint 250 and 30, its seeded fixed clip list; 16 frames at the native rate, 112×112 RGB bilinear,
 * batches of 16) through every contender on this machine: sluice in-process and subprocess, `sluice serve` to
 * Python (once `python/sluice` is in the checkout), PyTorch `DataLoader(num_workers=2)` over PyAV, node-av in 2
 * worker threads and the ffmpeg CLI per clip, 2 at a time. Each is first checked to return the same frames as
 * PyAV (same frame times, PSNR ≥ 35 dB per clip); one that returns other frames is reported, not timed.
 *
 * Writes `bench/RESULTS.md` (clips/s, process-tree CPU seconds per clip and peak memory, each as a ratio to
 * sluice in-process, plus the machine, the versions and the load average around the run) and
 * `bench/RESULTS.svg` (the chart it shows).
 *
 * Run: `deno run -A bench/compare.ts [--passes 5] [--seed 1] [--variants gop250,gop30] [--contenders ids]
 * [--out bench/RESULTS.md]`. node-av is installed for the benchmark only:
 * `SKIP_FFMPEG=true npm install --prefix bench/contenders` (without it the row says how to install it).
 * @module
 */

import { parseArgs } from "node:util";
import { ffmpegInfo } from "../src/media/ffmpeg.ts";
import {
  allContenders,
  markdownTable,
  PYTHON,
  runWorkload,
  SLUICE_CONFIGS,
  type VariantResult,
  WORKLOAD,
} from "./clip_workload.ts";

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

/** One panel of horizontal bars, grouped by variant; returns SVG elements and the panel's height. */
function panel(
  x0: number,
  y0: number,
  width: number,
  title: string,
  unit: string,
  groups: { name: string; bars: Bar[] }[],
  digits: number,
): string {
  const colors = ["#2b6cb0", "#dd6b20", "#38a169", "#805ad5", "#d53f8c", "#718096"];
  const max = Math.max(1e-9, ...groups.flatMap((g) => g.bars.map((b) => b.value ?? 0)));
  const labelW = 230, barH = 14, gap = 4;
  const out: string[] = [
    `<text x="${x0}" y="${y0 + 14}" font-weight="bold">${
      esc(title)
    } <tspan font-weight="normal" fill="#555">(${esc(unit)})</tspan></text>`,
  ];
  let y = y0 + 28;
  for (const g of groups) {
    out.push(`<text x="${x0}" y="${y + 11}" fill="#333" font-style="italic">${esc(g.name)}</text>`);
    y += 16;
    for (const [i, b] of g.bars.entries()) {
      out.push(`<text x="${x0 + labelW - 6}" y="${y + 11}" text-anchor="end">${esc(b.label)}</text>`);
      if (b.value === null) {
        out.push(`<text x="${x0 + labelW}" y="${y + 11}" fill="#999">not measured</text>`);
      } else {
        const w = Math.max(1, (b.value / max) * (width - labelW - 90));
        const r = b.ratio === null ? "" : ` (${b.ratio.toFixed(2)}×)`;
        out.push(
          `<rect x="${x0 + labelW}" y="${y}" width="${w.toFixed(1)}" height="${barH}" fill="${
            colors[i % colors.length]
          }"/>`,
          `<text x="${x0 + labelW + w + 4}" y="${y + 11}">${b.value.toFixed(digits)}${r}</text>`,
        );
      }
      y += barH + gap;
    }
    y += 8;
  }
  return out.join("\n");
}

function esc(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/** The chart: clips/s, CPU s/clip and peak RSS per contender and variant, ratios to sluice in-process. */
export function chart(results: VariantResult[]): string {
  const metric = (get: (s: NonNullable<VariantResult["results"][number]["summary"]>) => number) =>
    results.map((v) => {
      const base = v.results.find((r) => r.id === BASELINE)?.summary;
      return {
        name: `${v.variant} (keyint ${v.gop})`,
        bars: v.results.map((r): Bar => {
          const value = r.summary ? get(r.summary) : null;
          return {
            label: r.name,
            value,
            ratio: value !== null && base ? value / get(base) : null,
          };
        }),
      };
    });
  const rows = results.reduce((a, v) => a + v.results.length, 0);
  const h = 40 + results.length * 24 + rows * 18;
  const w = 720;
  const body = [
    panel(10, 10, w, "Throughput, higher is better", "clips/s, median", metric((s) => s.clipsPerSec), 1),
    panel(
      10 + w,
      10,
      w,
      "CPU, lower is better",
      "process-tree CPU s per clip",
      metric((s) => s.cpuPerClip),
      3,
    ),
    panel(
      10 + 2 * w,
      10,
      w,
      "Memory, lower is better",
      "peak RSS of the process tree, MiB",
      metric((s) => s.peakRss / 2 ** 20),
      0,
    ),
  ];
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${3 * w + 20}" height="${
      h + 20
    }" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    ...body,
    `</svg>`,
    "",
  ].join("\n");
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      dir: { type: "string" },
      seed: { type: "string", default: "1" },
      passes: { type: "string", default: "5" },
      variants: { type: "string", default: "gop250,gop30" },
      contenders: { type: "string" },
      out: { type: "string", default: new URL("RESULTS.md", import.meta.url).pathname },
    },
  });
  const all = allContenders();
  const contenders = values.contenders === undefined ? all : values.contenders.split(",").map((id) => {
    const c = all.find((x) => x.id === id);
    if (!c) throw new Error(`unknown contender ${id} (${all.map((x) => x.id).join(", ")})`);
    return c;
  });
  const loadBefore = loadAverage();
  const started = new Date();
  const results = await runWorkload({
    dir: values.dir,
    seed: Number(values.seed),
    passes: Number(values.passes),
    variants: values.variants!.split(","),
    contenders,
  });
  const loadAfter = loadAverage();
  const minutes = ((Date.now() - started.getTime()) / 60_000).toFixed(1);
  const svgPath = values.out!.replace(/\.md$/, "") + ".svg";
  Deno.writeTextFileSync(svgPath, chart(results));
  const w = WORKLOAD;
  const md = [
    "# sluice side by side",
    "",
    `Generated by \`deno run -A bench/compare.ts\` (${
      Deno.args.join(" ") || "defaults"
    }) on ${started.toISOString()}, ` +
    `${minutes} min. Do not edit: rerun it.`,
    "",
    `![clips/s, CPU per clip and peak RSS per contender](${svgPath.split("/").pop()})`,
    "",
    `**Workload.** ${w.videos} videos of ${w.durationSec} s, ${w.width}×${w.height} at ${w.fps} fps, H.264 High with ` +
    `B-frames, AAC audio (made with the ffmpeg CLI, \`bench/clip_workload.ts\`); ${w.clipsPerVideo} clips per video ` +
    `at seeded random places (sluice's sampler, seed ${values.seed}; every contender gets the same list), ` +
    `${w.numFrames} frames at the native rate → ${w.outWidth}×${w.outHeight} RGB24 bilinear, batches of ${w.batchSize}. ` +
    `Pass 0 warms up; clips/s is the median of ${values.passes} timed passes of ${
      results[0]?.clipsPerPass ?? "?"
    } clips ` +
    `(a new clip list each pass, the same for every contender).`,
    "",
    "**Checked first.** Each contender's clips of pass 0 are compared with PyAV decoding the same clips in one " +
    "process: same frame times and PSNR ≥ 35 dB per clip. A contender that returns other frames is reported, " +
    "not timed.",
    "",
    "**Measured from outside, the same way for all.** Wall time per pass (the contender's own clock); CPU = " +
    "user + system seconds of the whole process tree (worker processes, backend child, spawned ffmpegs) over the " +
    "timed passes, per clip; peak RSS = highest sum of the tree's RSS, sampled every 100 ms over the whole run " +
    "(shared pages count once per process: forked PyTorch workers share much of their parent; PSS splits them).",
    "",
    `**Machine.** ${cpuModel()}, ${navigator.hardwareConcurrency} cores. Load average ${loadBefore} before and ` +
    `${loadAfter} after the run: ${
      Number(loadBefore.split(" ")[0]) > navigator.hardwareConcurrency / 2
        ? "**the machine was shared with other work during this run**; absolute figures are low and noisy, " +
          "compare the ratios (same run, same conditions)."
        : "the machine was otherwise idle."
    }`,
    "",
    ...(await versions()).map((v) => `- ${v}`),
    "",
    ...results.flatMap((v) => [
      `## ${v.variant}: keyint ${v.gop}`,
      "",
      `Ratios to ${SLUICE_CONFIGS[0].name}.`,
      "",
      markdownTable(v, BASELINE),
      "",
    ]),
    "Decode amplification = frames decoded / frames delivered, where the contender can count them.",
    "",
  ].join("\n");
  Deno.writeTextFileSync(values.out!, md);
  console.log(md);
}
