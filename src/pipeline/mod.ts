/**
 * The pipeline engine: stages connected by bounded queues, each with its own concurrency and executor (the main
 * thread, or a `WorkerPool` of Deno Workers running a module's exported functions, with buffers moved rather
 * than copied), stats that name the bottleneck, hooks that carry stats and events out, a stall watch, auto
 * concurrency, and the error transport that keeps an error's class across Workers and processes.
 *
 * The video loader (`videoClassificationLoader` in `@sluice/sluice`) is built on it; build your own pipelines
 * with {@link PipelineBuilder}.
 *
 * @example A source, an async stage with concurrency, batches, stats
 * ```ts
 * import { formatStats } from "@sluice/sluice";
 * import { PipelineBuilder } from "@sluice/sluice/pipeline";
 *
 * const pipeline = new PipelineBuilder()
 *   .addSource([1, 2, 3, 4, 5, 6, 7, 8], { name: "ids" })
 *   .pipe(async (id: number) => {
 *     await new Promise((r) => setTimeout(r, 5)); // stands for a fetch
 *     return id * id;
 *   }, { name: "fetch", concurrency: 4 })
 *   .aggregate(4, { name: "batch" })
 *   .build();
 * for await (const batch of pipeline) console.log(batch); // [1, 4, 9, 16], [25, 36, 49, 64]
 * console.log(formatStats(pipeline.stats()));
 * await pipeline.stop();
 * ```
 *
 * @example CPU work in Workers: a module's exports become stages
 * ```ts
 * import { PipelineBuilder, WorkerPool } from "@sluice/sluice/pipeline";
 *
 * // my_worker.ts: `export function checksum(data: Uint8Array): number { ... }`
 * const pool = new WorkerPool(import.meta.resolve("./my_worker.ts"), { size: 2 });
 * const pipeline = new PipelineBuilder()
 *   .addSource(Array.from({ length: 16 }, (_, i) => new Uint8Array(1024).fill(i)))
 *   .pipe<number>("checksum", { executor: pool }) // each buffer moves to a Worker, not copied
 *   .build();
 * for await (const sum of pipeline) console.log(sum);
 * await pipeline.stop(); // also terminates the pool's Workers
 * ```
 * @module
 */

export {
  type AggregateOptions,
  type Output,
  PipelineBuilder,
  type PipeOptions,
  SinkBuilder,
  type SourceOptions,
} from "./builder.ts";
export type { AutoConfig } from "./auto_policy.ts";
export { type Clock, realClock } from "./clock.ts";
export { type Executor, mainThread, type PipeFn, type TaskContext } from "./executor.ts";
export { type BuildOptions, Pipeline, type ResolvedBuildOptions, type SinkOptions } from "./pipeline.ts";
export { collectTransferables, TRANSFER, transferable, type Transferring } from "./transfer.ts";
export { WorkerPool, type WorkerPoolOptions } from "./worker_pool.ts";
export { WaitLedger } from "./wait_ledger.ts";
export {
  deserializeError,
  type ErrorClass,
  isSerializedError,
  registerErrorClass,
  type SerializedError,
  type SerializedValue,
  serializeError,
} from "../error_wire.ts";
