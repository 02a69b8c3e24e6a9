/**
 * The pipeline engine: stages connected by bounded queues, executors (main thread, Worker pools), stats that
 * name the bottleneck, and tracing.
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
export { type Executor, mainThread, type PipeFn, type TaskContext } from "./executor.ts";
export { formatStats, type FormatStatsOptions } from "./format_stats.ts";
export {
  type BuildOptions,
  CONSUMER,
  Pipeline,
  type PipelineStats,
  type SinkOptions,
  type StageControl,
  type StageStats,
} from "./pipeline.ts";
export type { QueueCounters } from "./queue.ts";
export { LatencySketch } from "./sketch.ts";
export type { MaxFailures } from "./stage.ts";
export { collectTransferables, transferable, type Transferring } from "./transfer.ts";
export { WorkerPool, type WorkerPoolOptions } from "./worker_pool.ts";
export { PipelineFailure, PipelineStoppedError, type StageError, WorkerCrashedError } from "../errors.ts";
