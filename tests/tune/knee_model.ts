/**
 * The contention-knee harness: a simulated pipeline whose trials are computed, not run. Each stage has a per-item
 * latency as a function of its concurrency n (all n tasks in flight: the stages upstream of the bottleneck are
 * kept full by backpressure); the pipeline's throughput is the slowest stage's n / latency(n), times seeded
 * noise drawn from (seed, configuration, how many times it was measured): the same trial always measures the
 * same, whatever ran before it (so a resumed search sees what an uninterrupted one saw). A trial "takes"
 * start-up + warm-up + window seconds of budget, so a 3-minute search runs in milliseconds.
 * @module
 */

import type { TrialOutcome, TrialRequest, TrialRunner } from "../../src/tune/runner.ts";
import type { TrialMetrics } from "../../src/tune/measure.ts";
import type { Config } from "../../src/tune/space.ts";
import { mulberry32 } from "../../src/dataset/random.ts";

/** A simulated stage: its name, the parameter that is its concurrency, and latency(n) in ms. */
export interface ModelStage {
  name: string;
  param: string;
  latencyMs(n: number): number;
}

/** base·(1 + a·(n−1) + k^max(0, n−knee) − 1): flat-ish up to the knee, exponential past it (FFmpeg's lock). */
export function kneeStage(
  name: string,
  param: string,
  base: number,
  a: number,
  k: number,
  knee: number,
): ModelStage {
  return { name, param, latencyMs: (n) => base * (1 + a * (n - 1) + k ** Math.max(0, n - knee) - 1) };
}

/** Waits, does not compute: latency stays `base` up to `wants` tasks, then rises by `rise`·base per extra task. */
export function ioStage(name: string, param: string, base: number, wants: number, rise: number): ModelStage {
  return { name, param, latencyMs: (n) => base * (1 + rise * Math.max(0, n - wants)) };
}

/** Computes: past `cores` tasks share the cores (latency ∝ n/cores) plus `overhead` per extra task (switching). */
export function cpuStage(
  name: string,
  param: string,
  base: number,
  cores: number,
  overhead: number,
): ModelStage {
  return {
    name,
    param,
    latencyMs: (n) => base * Math.max(1, n / cores) * (1 + overhead * Math.max(0, n - cores)),
  };
}

/** Throughput (items/s) of stage `s` at concurrency n. */
export function capacity(s: ModelStage, n: number): number {
  return n / (s.latencyMs(n) / 1000);
}

/** Options of {@link ModelRunner}. */
export interface ModelOptions {
  stages: ModelStage[];
  /** Relative noise amplitude: each measurement is multiplied by 1 ± noise (uniform). */
  noise: number;
  seed: number;
  /** samples/s of the headspace trial. */
  ceiling: number;
  /** Simulated start-up of a trial, seconds. */
  startupSec?: number;
  /** Configurations (by a predicate) that fail, with their reason. */
  fail?: (config: Config) => string | null;
}

/** A {@link TrialRunner} computing each trial from the model. */
export class ModelRunner implements TrialRunner {
  readonly requests: TrialRequest[] = [];
  readonly #opts: ModelOptions;
  readonly #seen = new Map<string, number>();

  constructor(opts: ModelOptions) {
    this.#opts = opts;
  }

  /** A uniform draw in [0, 1) for this measurement of this configuration. */
  #draw(req: TrialRequest): number {
    const key = `${req.kind}|${JSON.stringify(req.config)}`;
    const n = this.#seen.get(key) ?? 0;
    this.#seen.set(key, n + 1);
    let h = this.#opts.seed ^ n * 0x9e3779b1;
    for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
    return mulberry32(h)();
  }

  /** Noise-free throughput of a configuration. */
  throughput(config: Config): number {
    return Math.min(...this.#opts.stages.map((s) => capacity(s, config[s.param] as number)));
  }

  run(req: TrialRequest): Promise<TrialOutcome> {
    this.requests.push(req);
    const wallSec = (this.#opts.startupSec ?? 0.5) + req.warmupSec + req.measureSec;
    const failure = this.#opts.fail?.(req.config) ?? null;
    if (failure !== null) {
      return Promise.resolve({
        status: "failed",
        metrics: null,
        reason: failure,
        wallSec,
        stderrTail: failure,
        peakTreeRssBytes: null,
      });
    }
    const x = (req.kind === "ceiling" ? this.#opts.ceiling : this.throughput(req.config)) *
      (1 + this.#opts.noise * (2 * this.#draw(req) - 1));
    const metrics: TrialMetrics = {
      samplesPerSec: x,
      startupSec: 0.5,
      windowSec: req.measureSec,
      batches: Math.round(x * req.measureSec / 8),
      samples: Math.round(x * req.measureSec),
      stepP50Ms: 8000 / x,
      stepP90Ms: 9000 / x,
      dataWaitFraction: 0.5,
      stages: this.#opts.stages.map((s) => {
        const n = req.config[s.param] as number;
        return {
          name: s.name,
          concurrency: n,
          itemsPerSec: x,
          meanMs: s.latencyMs(n),
          p50Ms: s.latencyMs(n),
          p90Ms: s.latencyMs(n) * 1.2,
          busy: Math.min(1, x / capacity(s, n)),
        };
      }),
      bottleneck: null,
      cpuCores: 1.5,
      peakRssBytes: 100 << 20,
    };
    return Promise.resolve({
      status: "ok",
      metrics,
      reason: null,
      wallSec,
      stderrTail: "",
      peakTreeRssBytes: null,
    });
  }
}

/** The knee (optimum 3), I/O (wants 16) and CPU (4 cores) stages in series, each near-critical at its optimum. */
export function harnessStages(): ModelStage[] {
  return [
    kneeStage("demux", "demuxConcurrency", 10, 0.05, 2, 3),
    ioStage("fetch", "fetchConcurrency", 60, 16, 0.2),
    cpuStage("decode", "decodeConcurrency", 14, 4, 0.02),
  ];
}
