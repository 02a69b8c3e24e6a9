/**
 * Memory of the video loader over many epochs of the demo dataset (issue #6: RSS must not grow after epoch 2 by
 * more than 5%), for the in-process and the subprocess backend, and for two ways of using batches:
 *
 * - `dispose`: the training loop disposes each batch when its step is done (`for await (using batch of
 *   loader)`), so its pixels are freed at once;
 * - `keep`: it just drops them (`for await (const batch of loader)`), so they are freed whenever V8 next
 *   collects garbage.
 *
 * Per epoch it records, for this process and the backend child (from /proc/<pid>/status): RSS after the epoch,
 * and the peak RSS within the epoch (VmHWM, reset at the start of each epoch through /proc/<pid>/clear_refs);
 * and where this process's memory is: the main thread's V8 heap (used/total) and external (ArrayBuffer) memory,
 * the decode Workers' heaps, and the live FFmpeg objects of every thread plus any the FinalizationRegistry safety
 * net had to free (a leak). A mode passes when neither the total after-epoch RSS nor the total per-epoch peak
 * deviates from epoch 2 by more than 5% afterwards.
 *
 * Run: `deno run -A bench/rss_epochs.ts [--epochs 10] [--backend subprocess|inprocess] [--batches dispose|keep]
 * [--json] [--gc]`. Without `--backend` / `--batches` every combination runs, each in a fresh process of its own
 * (so one cannot inflate the other), and a pass/fail line is printed per mode. `--gc` (which adds
 * `--v8-flags=--expose-gc`) collects every heap before each sample. Exit status 1 when a bound is exceeded.
 * @module
 */

import { parseArgs } from "node:util";
import { procRss } from "../src/tune/proc.ts";
import { videoClassificationLoader } from "../src/loader/loader.ts";
import { ensureDemoDataset } from "../examples/demo.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    epochs: { type: "string" },
    backend: { type: "string" },
    batches: { type: "string" },
    json: { type: "boolean" },
    gc: { type: "boolean" },
  },
});

type Backend = "subprocess" | "inprocess";
type BatchUse = "dispose" | "keep";

interface ModeResult {
  backend: Backend;
  batches: BatchUse;
  epochs: number;
  /** Per epoch, MiB, after the epoch: this process + child, this process, the child (empty in-process). */
  totalMiB: number[];
  parentMiB: number[];
  childMiB: number[];
  /** Per epoch, MiB: peak RSS within the epoch, this process + child (sum of both peaks), and each. */
  peakTotalMiB: number[];
  peakParentMiB: number[];
  peakChildMiB: number[];
  /** Per epoch, MiB: main thread V8 heap used / total, external memory; decode Workers' heaps (sum). */
  mainHeapUsedMiB: number[];
  mainHeapTotalMiB: number[];
  mainExternalMiB: number[];
  workerHeapTotalMiB: number[];
  /** Per epoch, MiB: the backend child's main-thread V8 heap used / total and external memory (as last relayed). */
  childHeapUsedMiB: number[];
  childHeapTotalMiB: number[];
  childExternalMiB: number[];
  /** Per epoch: live FFmpeg objects (all threads of this process), and objects freed by the safety net. */
  liveNativeObjects: number[];
  finalizedNativeObjects: number[];
  /** Largest |x − x(epoch 2)| / x(epoch 2) over epochs 3…. */
  deviation: { total: number; parent: number; child: number | null; peakTotal: number };
  ok: boolean;
}

const BOUND = 0.05;
const MiB = 2 ** 20;
const r1 = (x: number) => Number(x.toFixed(1));
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
const count = (r: Record<string, number>) => sum(Object.values(r));

function deviation(series: number[]): number {
  const base = series[1];
  return Math.max(0, ...series.slice(2).map((m) => Math.abs(m - base) / base));
}

/** Resets the peak RSS (VmHWM) of a process to its current RSS (Linux ≥ 4.0); false when not possible. */
function resetPeak(pid: number | "self" | undefined): boolean {
  if (pid === undefined) return false;
  try {
    Deno.writeTextFileSync(`/proc/${pid}/clear_refs`, "5");
    return true;
  } catch {
    return false;
  }
}

async function runMode(backend: Backend, batches: BatchUse, epochs: number): Promise<ModeResult> {
  const gc = values.gc === true;
  const collect = gc ? (globalThis as { gc?: () => void }).gc : undefined;
  await using loader = await videoClassificationLoader({
    dataset: ensureDemoDataset(),
    batchSize: 8,
    clip: { numFrames: 8, width: 112, height: 112 },
    sampler: { seed: 0, clipsPerVideo: 4 },
    backend,
    log: () => {},
  });
  const r: ModeResult = {
    backend,
    batches,
    epochs,
    totalMiB: [],
    parentMiB: [],
    childMiB: [],
    peakTotalMiB: [],
    peakParentMiB: [],
    peakChildMiB: [],
    mainHeapUsedMiB: [],
    mainHeapTotalMiB: [],
    mainExternalMiB: [],
    workerHeapTotalMiB: [],
    childHeapUsedMiB: [],
    childHeapTotalMiB: [],
    childExternalMiB: [],
    liveNativeObjects: [],
    finalizedNativeObjects: [],
    deviation: { total: 0, parent: 0, child: null, peakTotal: 0 },
    ok: false,
  };
  const childPid = () => loader.stats().backend?.pid;
  for (let e = 0; e < epochs; e++) {
    resetPeak("self");
    resetPeak(childPid());
    for await (const batch of loader) {
      if (batches === "dispose") batch[Symbol.dispose]();
    }
    const mem = await loader.memoryReport(gc);
    collect?.();
    const parent = procRss("self", "VmRSS")!, parentPeak = procRss("self", "VmHWM")!;
    const child = procRss(childPid(), "VmRSS"), childPeak = procRss(childPid(), "VmHWM");
    r.parentMiB.push(parent / MiB);
    r.totalMiB.push((parent + (child ?? 0)) / MiB);
    r.peakParentMiB.push(parentPeak / MiB);
    r.peakTotalMiB.push((parentPeak + (childPeak ?? 0)) / MiB);
    if (child !== null) r.childMiB.push(child / MiB);
    if (childPeak !== null) r.peakChildMiB.push(childPeak / MiB);
    r.mainHeapUsedMiB.push(mem.main.heapUsed / MiB);
    r.mainHeapTotalMiB.push(mem.main.heapTotal / MiB);
    r.mainExternalMiB.push(mem.main.external / MiB);
    r.workerHeapTotalMiB.push(sum(mem.workers.map((w) => w.heapTotal)) / MiB);
    const childMem = (loader.stats().backend?.child?.pipeline as { memory?: Deno.MemoryUsage } | null)
      ?.memory;
    if (childMem !== undefined) {
      r.childHeapUsedMiB.push(childMem.heapUsed / MiB);
      r.childHeapTotalMiB.push(childMem.heapTotal / MiB);
      r.childExternalMiB.push(childMem.external / MiB);
    }
    const threads = [mem.main, ...mem.workers];
    r.liveNativeObjects.push(sum(threads.map((t) => count(t.native.live))));
    r.finalizedNativeObjects.push(sum(threads.map((t) => count(t.native.finalized))));
  }
  r.deviation = {
    total: deviation(r.totalMiB),
    parent: deviation(r.parentMiB),
    child: r.childMiB.length > 0 ? deviation(r.childMiB) : null,
    peakTotal: deviation(r.peakTotalMiB),
  };
  r.ok = r.deviation.total <= BOUND && r.deviation.peakTotal <= BOUND;
  for (const k of Object.keys(r) as (keyof ModeResult)[]) {
    const v = r[k];
    if (Array.isArray(v)) (r as unknown as Record<string, number[]>)[k] = v.map(r1);
  }
  for (const k of Object.keys(r.deviation) as (keyof ModeResult["deviation"])[]) {
    const v = r.deviation[k];
    if (v !== null) r.deviation[k] = Number(v.toFixed(4));
  }
  return r;
}

/** Runs one mode in a fresh process of its own and returns its JSON result. */
async function runModeApart(backend: string, batches: string, epochs: number): Promise<ModeResult> {
  const args = ["run", "-A"];
  if (values.gc) args.push("--v8-flags=--expose-gc");
  args.push(new URL(import.meta.url).pathname, "--backend", backend, "--batches", batches);
  args.push("--epochs", String(epochs), "--json");
  if (values.gc) args.push("--gc");
  const out = await new Deno.Command(Deno.execPath(), { args, stderr: "inherit" }).output();
  return JSON.parse(new TextDecoder().decode(out.stdout)) as ModeResult;
}

function print(r: ModeResult): void {
  const pct = (x: number | null) => x === null ? "-" : `${(x * 100).toFixed(1)}%`;
  const f = (x: number | undefined) => x?.toFixed(1) ?? "-";
  console.log(
    `${r.backend} backend, batches ${r.batches === "dispose" ? "disposed" : "kept until GC"}, MiB:`,
  );
  console.log(
    "| epoch | total | this process | child | peak total | main heap used/total | main external | " +
      "Worker heaps | FFmpeg objects live (leaked) |",
  );
  console.log("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
  r.totalMiB.forEach((t, i) =>
    console.log(
      `| ${i + 1} | ${f(t)} | ${f(r.parentMiB[i])} | ${f(r.childMiB[i])} | ${f(r.peakTotalMiB[i])} | ` +
        `${f(r.mainHeapUsedMiB[i])}/${f(r.mainHeapTotalMiB[i])} | ${f(r.mainExternalMiB[i])} | ` +
        `${f(r.workerHeapTotalMiB[i])} | ${r.liveNativeObjects[i]} (${r.finalizedNativeObjects[i]}) |`,
    )
  );
  const d = r.deviation;
  console.log(
    `largest deviation from epoch 2 afterwards: total ${pct(d.total)} (this process ${
      pct(d.parent)
    }, child ` +
      `${pct(d.child)}), per-epoch peak ${pct(d.peakTotal)} (bound ${BOUND * 100}%) → ${
        r.ok ? "PASS" : "FAIL"
      }`,
  );
}

const epochs = Number(values.epochs ?? 10);
const backends = values.backend === undefined ? ["inprocess", "subprocess"] : [values.backend];
const uses = values.batches === undefined ? ["dispose", "keep"] : [values.batches];
const results: ModeResult[] = [];
for (const b of backends) {
  if (b !== "inprocess" && b !== "subprocess") {
    throw new Error(`--backend must be inprocess or subprocess: ${b}`);
  }
  for (const u of uses) {
    if (u !== "dispose" && u !== "keep") throw new Error(`--batches must be dispose or keep: ${u}`);
    const single = backends.length === 1 && uses.length === 1;
    results.push(single ? await runMode(b, u, epochs) : await runModeApart(b, u, epochs));
  }
}
if (values.json) console.log(JSON.stringify(results.length === 1 ? results[0] : results, null, 2));
else {
  for (const r of results) {
    print(r);
    console.log();
  }
}
if (results.some((r) => !r.ok)) Deno.exitCode = 1;
