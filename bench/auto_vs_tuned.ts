/**
 * `concurrency: "auto"` against the best fixed configuration `sluice tune` found, on the same loader, in the same
 * run: reads a tune output directory's `best.json`, runs the loader with the best configuration (warm-up, then a window), then
 * with every stage concurrency the search tuned set to `"auto"` (the other parameters as found), and reports the
 * auto run's samples/s over time: when its trailing window first reaches 95% of the fixed configuration's, and
 * its rate over its last half. Rounds alternate fixed and auto, so drift on a shared machine hits both.
 *
 * ```
 * deno run -A bench/auto_vs_tuned.ts TUNE_DIR [--seconds 60] [--rounds 2] [--window 5]
 * ```
 * The loader is the one `examples/video_classification.ts` tunes (the demo dataset, 8 clips of 8 frames at
 * 112×112 a batch, a 20 ms training step).
 * @module
 */

import { parseArgs } from "node:util";
import { videoClassificationLoader } from "../src/loader/loader.ts";
import { ensureDemoDataset } from "../examples/demo.ts";

const { values, positionals } = parseArgs({
  args: Deno.args,
  allowPositionals: true,
  options: {
    seconds: { type: "string", default: "60" },
    rounds: { type: "string", default: "2" },
    window: { type: "string", default: "5" },
  },
});
const dir = positionals[0];
if (dir === undefined) throw new Error("usage: auto_vs_tuned.ts TUNE_DIR [--seconds 60] [--rounds 2]");
const seconds = Number(values.seconds), rounds = Number(values.rounds), windowSec = Number(values.window);

const best = JSON.parse(await Deno.readTextFile(`${dir}/best.json`)) as {
  config: Record<string, number | string>;
  samplesPerSec: number;
};
const c = best.config;
console.log(
  `best fixed (${dir}/best.json): ${JSON.stringify(c)}, ${
    best.samplesPerSec.toFixed(1)
  } samples/s in the search`,
);

const dataset = ensureDemoDataset();
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Runs the loader for `sec` seconds; returns (seconds since start, samples so far) after each step. */
async function run(auto: boolean, sec: number): Promise<{ t: number; n: number }[]> {
  await using loader = await videoClassificationLoader({
    dataset,
    batchSize: 8,
    clip: { numFrames: 8, width: 112, height: 112 },
    sampler: { clipsPerVideo: 4, clipDurationSec: c.subclipSec as number },
    backend: c.backend as "inprocess" | "subprocess",
    bufferSize: c.bufferSize as number,
    concurrency: auto
      ? { demux: "auto", decode: "auto" }
      : { demux: c.demuxConcurrency as number, decode: c.decodeConcurrency as number },
    log: () => {},
  });
  const t0 = performance.now();
  const points: { t: number; n: number }[] = [];
  let n = 0;
  outer: for (;;) {
    for await (using batch of loader) {
      await sleep(20);
      n += batch.labels.length;
      const t = (performance.now() - t0) / 1000;
      points.push({ t, n });
      if (t >= sec) break outer;
    }
  }
  if (auto) {
    const s = loader.stats().pipeline;
    const conc = s.stages.filter((x) => x.auto).map((x) => `${x.name}=${x.concurrency}`).join(" ");
    console.log(`  auto settled at ${conc}; controller: ${s.controller.log.length} decisions`);
  }
  return points;
}

/** samples/s between t0 and t1 (interpolating nothing: the steps inside). */
function rate(p: { t: number; n: number }[], t0: number, t1: number): number {
  const inside = p.filter((x) => x.t >= t0 && x.t <= t1);
  if (inside.length < 2) return 0;
  return (inside.at(-1)!.n - inside[0].n) / (inside.at(-1)!.t - inside[0].t);
}

for (let r = 1; r <= rounds; r++) {
  const fixedPts = await run(false, seconds);
  const fixed = rate(fixedPts, seconds / 4, seconds);
  const autoPts = await run(true, seconds);
  let reached: number | null = null;
  for (const p of autoPts) {
    if (p.t < windowSec) continue;
    if (rate(autoPts, p.t - windowSec, p.t) >= 0.95 * fixed) {
      reached = p.t;
      break;
    }
  }
  const autoLate = rate(autoPts, seconds / 2, seconds);
  console.log(
    `round ${r}: fixed ${fixed.toFixed(1)} samples/s (after ${seconds / 4} s); auto ${autoLate.toFixed(1)} ` +
      `over its last ${seconds / 2} s (${
        (autoLate / fixed * 100).toFixed(0)
      }%); its ${windowSec} s window first ` +
      `reached 95% of fixed at ${reached === null ? "never" : `${reached.toFixed(1)} s`}`,
  );
}
