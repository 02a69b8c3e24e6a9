/**
 * Peak-memory check of the loader over many epochs of the demo dataset: resident set size after each epoch —
 * this process, the backend child (VmRSS from /proc/<pid>/status) and their sum — and whether it deviates from
 * epoch 2 by more than 5% afterwards (issue #6's bound), for the in-process and the subprocess backend.
 *
 * Run: `deno run -A bench/rss_epochs.ts [--epochs 10] [--backend subprocess|inprocess] [--json] [--gc]`.
 * Without `--backend` both modes run, each in a fresh process of its own (so one cannot inflate the other), and
 * a pass/fail line is printed per mode. Exit status 1 when a bound is exceeded.
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

interface ModeResult {
  backend: "subprocess" | "inprocess";
  epochs: number;
  /** Per epoch, MiB: this process + child, this process, the child (empty in-process). */
  totalMiB: number[];
  parentMiB: number[];
  childMiB: number[];
  /** Largest |RSS − RSS(epoch 2)| / RSS(epoch 2) over epochs 3…, for the total, the parent and the child. */
  deviation: { total: number; parent: number; child: number | null };
  peakRssMiB: number;
  childPeakRssMiB: number | null;
  ok: boolean;
}

const BOUND = 0.05;
const r1 = (x: number) => Number(x.toFixed(1));

function deviation(series: number[]): number {
  const base = series[1];
  return Math.max(0, ...series.slice(2).map((m) => Math.abs(m - base) / base));
}

async function runMode(backend: "subprocess" | "inprocess", epochs: number): Promise<ModeResult> {
  /** With `--gc` (and `--v8-flags=--expose-gc`), a full GC runs before each sample (this process only). */
  const gc = values.gc ? (globalThis as { gc?: () => void }).gc : undefined;
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
  const total = summary.rssAfterEpochBytes.map((b) => b / 2 ** 20);
  const child = summary.childRssAfterEpochBytes.map((b) => b / 2 ** 20);
  const parent = total.map((t, i) => t - (child[i] ?? 0));
  const dev = {
    total: deviation(total),
    parent: deviation(parent),
    child: child.length > 0 ? deviation(child) : null,
  };
  return {
    backend,
    epochs,
    totalMiB: total.map(r1),
    parentMiB: parent.map(r1),
    childMiB: child.map(r1),
    deviation: {
      total: Number(dev.total.toFixed(4)),
      parent: Number(dev.parent.toFixed(4)),
      child: dev.child === null ? null : Number(dev.child.toFixed(4)),
    },
    peakRssMiB: r1(summary.peakRssBytes / 2 ** 20),
    childPeakRssMiB: summary.childPeakRssBytes === null ? null : r1(summary.childPeakRssBytes / 2 ** 20),
    ok: dev.total <= BOUND,
  };
}

/** Runs one mode in a fresh process of its own and returns its JSON result. */
async function runModeApart(backend: string, epochs: number): Promise<ModeResult> {
  const args = ["run", "-A"];
  if (values.gc) args.push("--v8-flags=--expose-gc");
  args.push(new URL(import.meta.url).pathname, "--backend", backend, "--epochs", String(epochs), "--json");
  if (values.gc) args.push("--gc");
  const out = await new Deno.Command(Deno.execPath(), { args, stderr: "inherit" }).output();
  return JSON.parse(new TextDecoder().decode(out.stdout)) as ModeResult;
}

function print(r: ModeResult): void {
  const pct = (x: number | null) => x === null ? "-" : `${(x * 100).toFixed(1)}%`;
  console.log(`${r.backend} backend, RSS after each epoch, MiB (total = this process + backend child):`);
  console.log("| epoch | total | this process | child |");
  console.log("| --- | --- | --- | --- |");
  r.totalMiB.forEach((t, i) =>
    console.log(
      `| ${i + 1} | ${t.toFixed(1)} | ${r.parentMiB[i].toFixed(1)} | ${r.childMiB[i]?.toFixed(1) ?? "-"} |`,
    )
  );
  console.log(
    `largest deviation from epoch 2 afterwards: total ${pct(r.deviation.total)}, this process ` +
      `${pct(r.deviation.parent)}, child ${pct(r.deviation.child)} (bound ${BOUND * 100}% on the total) → ` +
      (r.ok ? "PASS" : "FAIL"),
  );
}

const epochs = Number(values.epochs ?? 10);
const modes = values.backend === undefined ? ["inprocess", "subprocess"] : [values.backend];
const results: ModeResult[] = [];
for (const m of modes) {
  if (m !== "inprocess" && m !== "subprocess") {
    throw new Error(`--backend must be inprocess or subprocess: ${m}`);
  }
  results.push(modes.length === 1 ? await runMode(m, epochs) : await runModeApart(m, epochs));
}
if (values.json) console.log(JSON.stringify(results.length === 1 ? results[0] : results, null, 2));
else {
  for (const r of results) {
    print(r);
    console.log();
  }
}
if (results.some((r) => !r.ok)) Deno.exitCode = 1;
