/**
 * One trial's measurement, run inside the trial subprocess: build the loader, run the training loop through a
 * warm-up (which starts at the first batch, so start-up is not measured), then measure a steady-state window:
 * samples/s, step time p50/p90, the fraction of each step spent waiting for data, each stage's throughput,
 * per-item latency and busy fraction over the window, CPU cores used and peak RSS of the process tree.
 *
 * The `"ceiling"` kind is the headspace trial: `cacheLoader` replays the first batches from memory, so the loop
 * runs as if loading were free; its samples/s is the most any loader configuration could reach.
 * @module
 */

import { InvalidArgumentError } from "../errors.ts";
import { cacheLoader } from "../loader/cache_loader.ts";
import type { PipelineStats, StageStats } from "../pipeline/stats.ts";
import { treeCpuSeconds, treePeakRss } from "./proc.ts";
import type { Config } from "./space.ts";
import type { TrialLoader, TuneTarget } from "./target.ts";

/** One stage over the measured window. */
export interface StageWindow {
  /** The stage's name. */
  name: string;
  /** Its concurrency at the end of the window. */
  concurrency: number;
  /** Items out per second over the window. */
  itemsPerSec: number;
  /** Mean per-item compute time over the window, ms (null when no item finished in it). */
  meanMs: number | null;
  /** Compute time percentiles since the loader started, ms. */
  p50Ms: number;
  /** The 90th percentile of the same. */
  p90Ms: number;
  /** Compute time over the slot time it had in the window (0..1; null when unknown). */
  busy: number | null;
}

/** What a trial measured. */
export interface TrialMetrics {
  /** Samples per second over the measured window: the figure the search maximises. */
  samplesPerSec: number;
  /** Seconds from the start of the trial to the first batch (loader start-up). */
  startupSec: number;
  /** Length of the measured window, seconds. */
  windowSec: number;
  /** Batches in the window. */
  batches: number;
  /** Samples in the window. */
  samples: number;
  /** Time from one step's end to the next's (data wait + step), ms. */
  stepP50Ms: number;
  /** The 90th percentile of the same. */
  stepP90Ms: number;
  /** Time waiting for batches over the window's step time (0..1). */
  dataWaitFraction: number;
  /** Per stage, source first (a subprocess backend's stages first when the loader reports them). */
  stages: StageWindow[];
  /** The pipeline's bottleneck verdict at the end of the window. */
  bottleneck: string | null;
  /** CPU seconds per second of the process tree over the window (cores in use). */
  cpuCores: number | null;
  /** Peak resident memory of the process tree (sum of each process's peak), bytes. */
  peakRssBytes: number | null;
}

/** How a trial runs. */
export interface MeasureOptions {
  kind: "measure" | "ceiling";
  warmupSec: number;
  measureSec: number;
  args: readonly string[];
}

/** Batches the ceiling trial replays. */
const CEILING_BATCHES = 8;

/** Builds the loader for `config`, runs the loop, measures; closes the loader. */
export async function measureTrial(
  target: TuneTarget,
  config: Config,
  opts: MeasureOptions,
): Promise<TrialMetrics> {
  const t0 = performance.now();
  const loader = await target.create(config, { args: opts.args, kind: opts.kind });
  try {
    return await runLoop(target, config, loader, opts, t0);
  } finally {
    await loader.close?.();
  }
}

async function runLoop(
  target: TuneTarget,
  config: Config,
  loader: TrialLoader,
  opts: MeasureOptions,
  t0: number,
): Promise<TrialMetrics> {
  const ceiling = opts.kind === "ceiling";
  const source = ceiling
    ? cacheLoader(epochs(loader), { numCached: CEILING_BATCHES, stopAfter: Number.MAX_SAFE_INTEGER })
    : epochs(loader);
  const it = source[Symbol.asyncIterator]();
  const samplesOf = target.samples ?? defaultSamples;
  let firstAt = -1, windowAt = -1, last = 0;
  let before: StageStats[] = [], cpu0: number | null = null;
  const steps: number[] = [];
  let waitMs = 0, stepMs = 0, samples = 0;
  try {
    for (;;) {
      const asked = performance.now();
      const r = await it.next();
      if (r.done) throw new InvalidArgumentError("the loader ended"); // epochs() never ends by itself
      const got = performance.now();
      const batch = r.value;
      const n = samplesOf(batch); // before the batch is disposed
      try {
        await target.step?.(batch, config);
      } finally {
        if (!ceiling) (batch as Partial<Disposable>)?.[Symbol.dispose]?.();
      }
      const end = performance.now();
      if (firstAt < 0) firstAt = got;
      if (windowAt < 0) {
        if (end - firstAt < opts.warmupSec * 1000) continue;
        windowAt = last = end; // the window opens after the step that ends the warm-up
        before = stageRows(loader);
        cpu0 = treeCpuSeconds(Deno.pid);
        continue;
      }
      steps.push(end - last);
      stepMs += end - last;
      waitMs += got - asked;
      samples += n;
      last = end;
      if (end - windowAt >= opts.measureSec * 1000) break;
    }
  } finally {
    await it.return(undefined);
  }
  const windowSec = (last - windowAt) / 1000;
  const cpu1 = treeCpuSeconds(Deno.pid);
  steps.sort((a, b) => a - b);
  return {
    samplesPerSec: samples / windowSec,
    startupSec: (firstAt - t0) / 1000,
    windowSec,
    batches: steps.length,
    samples,
    stepP50Ms: quantile(steps, 0.5),
    stepP90Ms: quantile(steps, 0.9),
    dataWaitFraction: stepMs > 0 ? waitMs / stepMs : 0,
    stages: windowRows(before, stageRows(loader), windowSec),
    bottleneck: pipelineStats(loader)?.bottleneck ?? null,
    cpuCores: cpu0 === null || cpu1 === null ? null : (cpu1 - cpu0) / windowSec,
    peakRssBytes: treePeakRss(Deno.pid),
  };
}

/** The loader's epochs one after another, without end. */
async function* epochs(loader: AsyncIterable<unknown>): AsyncGenerator<unknown> {
  for (;;) {
    let n = 0;
    for await (const batch of loader) {
      n++;
      yield batch;
    }
    if (n === 0) throw new InvalidArgumentError("an epoch of the loader yielded no batch");
  }
}

function defaultSamples(batch: unknown): number {
  const b = batch as { labels?: { length: number }; length?: number };
  return b?.labels?.length ?? (typeof b?.length === "number" ? b.length : 1);
}

function pipelineStats(loader: TrialLoader): PipelineStats | null {
  const s = loader.stats?.();
  if (s === undefined) return null;
  return "pipeline" in s ? s.pipeline : s;
}

/** The loader's stage rows: a subprocess backend's child stages (when relayed), then its own. */
function stageRows(loader: TrialLoader): StageStats[] {
  const s = loader.stats?.() as
    | (PipelineStats & { pipeline?: undefined })
    | { pipeline: PipelineStats; backend?: { child?: { pipeline?: unknown } | null } | null }
    | undefined;
  if (s === undefined) return [];
  if (s.pipeline === undefined) return s.stages;
  const child = (s.backend?.child?.pipeline as PipelineStats | undefined)?.stages ?? [];
  return [...child, ...s.pipeline.stages];
}

function windowRows(before: StageStats[], after: StageStats[], windowSec: number): StageWindow[] {
  return after.map((a) => {
    const b = before.find((x) => x.name === a.name);
    const done = a.done - (b?.done ?? 0);
    const computeMs = a.meanMs * a.done - (b ? b.meanMs * b.done : 0);
    return {
      name: a.name,
      concurrency: a.concurrency,
      itemsPerSec: (a.itemsOut - (b?.itemsOut ?? 0)) / windowSec,
      meanMs: done > 0 ? computeMs / done : null,
      p50Ms: a.p50Ms,
      p90Ms: a.p90Ms,
      busy: a.kind === "consumer" || !(a.concurrency > 0)
        ? null
        : Math.min(1, computeMs / (windowSec * 1000 * a.concurrency)),
    };
  });
}

/** The q-quantile of sorted values (nearest rank). */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}
