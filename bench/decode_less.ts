/**
 * Decoding less (issue 14), side by side in one run: sluice's in-process loader with each `decodeLess` switch
 * off and on, against PyTorch `DataLoader(num_workers=2)` over a PyAV `Dataset`, on the clip workload of
 * `bench/clip_workload.ts` (its sets, clip lists, frame check and harness; by default its `sampler` shape at GOP
 * 250 and 30, 2 clips per video, 16 frames at native rate → 112×112, batches of 16). Rounds interleave the contenders, so load
 * that changes during the run weighs on all alike. Reported per variant: clips/s, CPU s/clip, peak RSS and decode
 * amplification (frames decoded / frames delivered), as ratios to DataLoader + PyAV.
 *
 * `--hd`: idle cores as threads (§3) where it matters: one 3840×2160 H.264 video, one 16-frame clip per epoch (one
 * decode in flight on a machine of several cores), `threads` on and off, interleaved.
 *
 * Run: `deno run -A bench/decode_less.ts [--passes 4] [--rounds 2] [--seed 1]
 * [--variants sampler-gop250,sampler-gop30,...] [--hd]`
 * @module
 */

import { parseArgs } from "node:util";
import { videoClassificationLoader } from "../src/loader/loader.ts";
import type { DecodeLessOptions } from "../src/loader/loader_options.ts";
import {
  amplificationNote,
  DEFAULT_DIR,
  markdownTable,
  PYTORCH_PYAV,
  runWorkload,
  sluiceContender,
  WORKLOAD_ARGS,
  workloadOptions,
} from "./clip_workload.ts";

/** The sluice rows: `decodeLess` per configuration. */
const CONFIGS: { id: string; decodeLess: DecodeLessOptions }[] = [
  { id: "all on", decodeLess: {} },
  { id: "skip off", decodeLess: { skip: false } },
  { id: "once off", decodeLess: { once: false } },
  { id: "threads off", decodeLess: { threads: false } },
  { id: "all off", decodeLess: { skip: false, once: false, threads: false } },
];

function loadavg(): string {
  try {
    return Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).join(" ");
  } catch {
    return "?";
  }
}

/** One 3840×2160 H.264 video (3 s, keyint 250, B-frames) for `--hd`, made once under `dir/hd`. */
async function hdSet(dir: string): Promise<string> {
  const args = [
    ...["-v", "error", "-nostdin", "-f", "lavfi", "-i", "testsrc2=size=3840x2160:rate=30", "-t", "3"],
    ...["-c:v", "libx264", "-preset", "veryfast", "-bf", "3", "-g", "250", "-pix_fmt", "yuv420p"],
  ];
  const root = `${dir}/hd/videos`, marker = `${dir}/hd/.complete.json`;
  try {
    if (Deno.readTextFileSync(marker) === JSON.stringify(args)) return root;
  } catch { /* not made yet */ }
  console.error("decode_less: making one 3840x2160 video (once)");
  await Deno.mkdir(`${root}/a`, { recursive: true });
  const r = await new Deno.Command("ffmpeg", { args: [...args, "-y", `${root}/a/hd.mp4`] }).output();
  if (!r.success) throw new Error(`ffmpeg failed: ${new TextDecoder().decode(r.stderr)}`);
  Deno.writeTextFileSync(marker, JSON.stringify(args));
  return root;
}

/** Clips/s of each timed pass (pass 0 warms up) of one 16-frame 4K clip per epoch. */
async function hdRun(root: string, seed: number, threads: boolean, passes: number): Promise<number[]> {
  await using loader = await videoClassificationLoader({
    dataset: root,
    batchSize: 1,
    clip: { numFrames: 16, width: 112, height: 112 },
    sampler: { seed, clipsPerVideo: 1, clipDurationSec: 16.5 / 30, placement: "random" },
    decodeLess: { threads },
  });
  const out: number[] = [];
  for (let p = 0; p <= passes; p++) {
    const t0 = performance.now();
    let n = 0;
    for await (using b of loader) n += b.clips.length;
    if (p > 0) out.push(n / ((performance.now() - t0) / 1000));
  }
  return out;
}

const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      ...WORKLOAD_ARGS,
      passes: { type: "string", default: "4" },
      variants: { type: "string", default: "sampler-gop250,sampler-gop30" },
      hd: { type: "boolean" },
    },
  });
  const before = loadavg();
  const contenders = [
    PYTORCH_PYAV,
    ...CONFIGS.map((c) =>
      sluiceContender({
        id: `sluice-${c.id}`,
        name: `sluice, ${c.id}`,
        options: { decodeLess: c.decodeLess },
      })
    ),
  ];
  for (const v of await runWorkload(workloadOptions(values, contenders))) {
    console.log(`\n${v.variant}: ${v.clipsPerPass} clips per pass, median of ${v.timedPasses} timed passes`);
    console.log(markdownTable(v, PYTORCH_PYAV.id));
  }
  console.log(`\n${amplificationNote()}`);
  if (values.hd) {
    const root = await hdSet(values.dir ?? DEFAULT_DIR);
    const seed = Number(values.seed), passes = Math.max(6, Number(values.passes));
    const runs: Record<string, number[]> = { off: [], on: [] };
    for (let r = 0; r < Number(values.rounds); r++) {
      for (const t of ["off", "on"]) runs[t].push(...await hdRun(root, seed, t === "on", passes));
    }
    console.log("\n3840x2160, one 16-frame clip per epoch (clips/s, median of the timed passes):");
    console.log(
      `threads off ${median(runs.off).toFixed(2)}, on ${median(runs.on).toFixed(2)}: ` +
        `${(median(runs.on) / median(runs.off)).toFixed(2)}×`,
    );
  }
  console.log(`\nload average before ${before}, after ${loadavg()}; ${navigator.hardwareConcurrency} cores`);
}
