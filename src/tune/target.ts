/**
 * What a module hands `sluice tune`: a search space and a pipeline factory, exported as `tune` (or as the
 * default export). Each trial imports the module in a fresh subprocess, calls `create(config, ctx)`, runs the
 * returned loader (with `step` as the training step) for a warm-up and a measured window, and closes it.
 *
 * @example A tunable module (`sluice tune my_loader.ts -- data/train.csv`)
 * ```ts
 * import { videoClassificationLoader } from "@sluice/sluice";
 * import { choice, defineTuning, int } from "@sluice/sluice/tune";
 *
 * export const tune = defineTuning({
 *   space: {
 *     demuxConcurrency: int(1, 16, { stage: "demux" }),
 *     decodeConcurrency: int(1, 16, { stage: "decode" }),
 *     backend: choice(["inprocess", "subprocess"]),
 *   },
 *   start: { demuxConcurrency: 8, decodeConcurrency: 2, backend: "inprocess" },
 *   create: (c, ctx) =>
 *     videoClassificationLoader({
 *       dataset: ctx.args[0] ?? "data/train.csv",
 *       batchSize: 8,
 *       clip: { numFrames: 8, width: 112, height: 112 },
 *       backend: c.backend,
 *       concurrency: { demux: c.demuxConcurrency, decode: c.decodeConcurrency },
 *     }),
 *   step: () => new Promise((r) => setTimeout(r, 20)), // stands in for the GPU step
 * });
 * ```
 * @module
 */

import type { PipelineStats } from "../pipeline/stats.ts";
import type { ConfigOf, SearchSpace } from "./space.ts";

/** What a trial's `create` gets besides the configuration. */
export interface TrialContext {
  /** The words after `--` on the `sluice tune` command line (a dataset path, say). */
  readonly args: readonly string[];
  /** `"measure"` for an ordinary trial, `"ceiling"` for the headspace trial (batches replayed from memory). */
  readonly kind: "measure" | "ceiling";
}

/**
 * What `create` returns: batches to iterate (each `for await` one epoch; iterated again for the next), and
 * optionally its statistics (a `PipelineStats`, or an object with one under `pipeline`, as the video loader's
 * `stats()` returns) and a `close()`. Batches with `Symbol.dispose` are disposed after their step.
 */
export interface TrialLoader extends AsyncIterable<unknown> {
  /** Per-stage statistics, read at the start and end of the measured window. */
  stats?(): PipelineStats | { pipeline: PipelineStats };
  /** Stops the loader (Workers, child processes). */
  close?(): Promise<void> | void;
}

/** A tunable pipeline: the module contract of `sluice tune`; see the module docs. */
export interface TuneTarget<S extends SearchSpace = SearchSpace> {
  /** The parameters to search. */
  readonly space: S;
  /** Where the search starts (your current configuration); missing values come from the parameters' defaults. */
  readonly start?: Partial<ConfigOf<S>>;
  /** Builds the loader for one configuration. */
  create(config: ConfigOf<S>, ctx: TrialContext): TrialLoader | Promise<TrialLoader>;
  /** The training step run on each batch (default: none, the loader measured flat out). */
  step?(batch: unknown, config: ConfigOf<S>): void | Promise<void>;
  /** Samples in a batch (default: `batch.labels.length`, else `batch.length`, else 1). */
  samples?(batch: unknown): number;
}

/**
 * Declares a tunable pipeline: what a module exports as `tune` (or as its default export) for `sluice tune` and
 * `tune()`. It checks nothing and changes nothing; it types `target` so that `create`, `step` and `start`
 * see each parameter's value type (an `int` a number, a `choice` the union of its values).
 * @param target the search `space`, the `start` configuration (the one in use today; missing values come
 * from the parameters' defaults), `create` (builds the loader of one configuration), and optionally `step`
 * (the training step run on each batch; default none, the loader measured flat out) and `samples` (samples
 * in a batch)
 * @returns `target` itself
 * @example Any async iterable of batches can be tuned (here a generator standing in for a loader)
 * ```ts
 * import { choice, defineTuning, int } from "@sluice/sluice/tune";
 *
 * export const tune = defineTuning({
 *   space: { decode: int(1, 8, { stage: "decode" }), backend: choice(["inprocess", "subprocess"]) },
 *   start: { decode: 2 },
 *   create: (c) => {
 *     const batches = async function* () {
 *       for (let i = 0; i < 100; i++) yield { labels: [i % 10], backend: c.backend, decoders: c.decode };
 *     };
 *     return batches();
 *   },
 * });
 * ```
 */
export function defineTuning<const S extends SearchSpace>(target: TuneTarget<S>): TuneTarget<S> {
  return target;
}
