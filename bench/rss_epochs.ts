/**
 * Peak-memory check of the loader over many epochs of the demo dataset: resident set size (this process plus
 * the backend child) after each epoch, and whether it grows after epoch 2 by more than 5%.
 * Run: `deno run -A bench/rss_epochs.ts [--epochs 10] [--backend subprocess|inprocess] [--json]`.
 * Exit status 1 when the growth bound is exceeded.
 * @module
 */

import { parseArgs } from "node:util";
import { runLoad } from "../src/cli/load.ts";
import { ensureDemoDataset } from "../examples/demo.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    epochs: { type: "string" },
    backend: { type: "string" },
    json: { type: "boolean" },
    gc: { type: "boolean" },
  },
});
/** With `--gc` (and `--v8-flags=--expose-gc`), a full GC runs before each sample, separating leaks from lazy GC. */
const gc = values.gc ? (globalThis as { gc?: () => void }).gc : undefined;
const epochs = Number(values.epochs ?? 10);
const backend = (values.backend ?? "subprocess") as "subprocess" | "inprocess";
const summary = await runLoad({
  dataset: ensureDemoDataset(),
  batchSize: 8,
  clip: { numFrames: 8, width: 112, height: 112 },
  sampler: { seed: 0, clipsPerVideo: 4 },
  backend,
  epochs,
  log: () => {},
  onEpochEnd: () => gc?.(),
});
const mib = summary.rssAfterEpochBytes.map((b) => b / 2 ** 20);
const base = mib[1];
const worst = Math.max(...mib.slice(2).map((m) => Math.abs(m - base) / base));
const ok = worst <= 0.05;
const result = {
  backend,
  epochs,
  rssAfterEpochMiB: mib.map((m) => Number(m.toFixed(1))),
  maxDeviationAfterEpoch2: Number(worst.toFixed(4)),
  peakRssMiB: Number((summary.peakRssBytes / 2 ** 20).toFixed(1)),
  childPeakRssMiB: summary.childPeakRssBytes === null
    ? null
    : Number((summary.childPeakRssBytes / 2 ** 20).toFixed(1)),
  ok,
};
if (values.json) console.log(JSON.stringify(result, null, 2));
else {
  console.log(`${backend} backend, RSS after each epoch (this process + backend child), MiB:`);
  const child = summary.childRssAfterEpochBytes.map((b) => b / 2 ** 20);
  console.log(
    mib.map((m, i) =>
      `  epoch ${i + 1}: ${m.toFixed(1)}` + (child[i] ? `  (child ${child[i].toFixed(1)})` : "")
    ).join("\n"),
  );
  console.log(
    `largest deviation from epoch 2 afterwards: ${(worst * 100).toFixed(1)}% (bound 5%) → ${
      ok ? "ok" : "GROWS"
    }`,
  );
}
if (!ok) Deno.exitCode = 1;
