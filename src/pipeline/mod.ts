/**
 * The pipeline engine: stages connected by bounded queues, executors (main thread, Worker pools), stats that
 * name the bottleneck, hooks that carry stats and events out, a stall watch, auto concurrency, and tracing.
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
export type { ControllerStats } from "./auto_controller.ts";
export type { AutoConcurrencyOptions, ControllerDecision } from "./auto_policy.ts";
export { type Clock, realClock } from "./clock.ts";
export { type Executor, mainThread, type PipeFn, type TaskContext } from "./executor.ts";
export { jsonlStatsHook, type PipelineEvent, type PipelineHook } from "./hooks.ts";
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
export type { MaxFailures, StageBound, StageKind } from "./stage.ts";
export { collectTransferables, TRANSFER, transferable, type Transferring } from "./transfer.ts";
export { WorkerPool, type WorkerPoolOptions } from "./worker_pool.ts";
export {
  deserializeError,
  type ErrorClass,
  PipelineFailure,
  PipelineStoppedError,
  registerErrorClass,
  type SerializedError,
  type SerializedValue,
  serializeError,
  SluiceError,
  type StageError,
  WorkerCrashedError,
} from "../errors.ts";
