/**
 * The shapes of a pipeline's stats: what `Pipeline.stats()` returns, what hooks receive, what the JSONL stats
 * lines and the backend's STATS frames carry. A leaf: it imports nothing, so a module that only reads stats
 * (formatting, the tuner, the CLI, the loader's option types) loads no engine.
 * @module
 */

/** The kinds of stage a pipeline is made of (one `StageSpec` shape and one runner each). */
export type StageKind = "source" | "pipe" | "aggregate" | "disaggregate";

/**
 * What limits a stage's useful concurrency: `"cpu"` stages compute (Workers, synchronous FFI) and share the
 * machine's cores; `"io"` stages mostly wait (network, disk, a subprocess) and may run far more tasks than cores.
 */
export type StageBound = "cpu" | "io";

/** Counters a queue keeps about itself; all times in milliseconds. */
export interface QueueCounters {
  /** Items buffered now. */
  length: number;
  /** Current bound. */
  capacity: number;
  /** Time-weighted mean number of items buffered since the queue was created. */
  meanOccupancy: number;
  /** Fraction (0..1) of the elapsed time the queue was full. */
  fullFraction: number;
  /** Fraction (0..1) of the elapsed time the queue was empty. */
  emptyFraction: number;
  /** Total time producers spent waiting on a full queue (summed over producers, including waits under way). */
  putWaitMs: number;
  /** Total time consumers spent waiting on an empty queue (summed over consumers, including waits under way). */
  getWaitMs: number;
  /** Time since the queue was created (the denominator of the fractions above). */
  elapsedMs: number;
  /** Time the queue was full (`fullFraction × elapsedMs`). */
  fullMs: number;
  /** Time the queue was empty (`emptyFraction × elapsedMs`). */
  emptyMs: number;
  /** Integral of the length over time, item·ms (`meanOccupancy × elapsedMs`). */
  itemMs: number;
}

/**
 * A stage's counters summed over every epoch (each epoch has new queues; these run on across them). Read them
 * twice and subtract for rates over a window: the auto-concurrency controller does.
 */
export interface StageTotals {
  /** Tasks finished: done, dropped or failed (for the consumer: items consumed). */
  finished: number;
  /**
   * Compute time summed over tasks, ms: the numerator of `utilization` (for the source, time in its iterator;
   * for the consumer, time not spent waiting for the next item).
   */
  busyMs: number;
  /** Concurrency integrated over running time, slot·ms: the denominator of `utilization`. */
  slotMs: number;
  /** Time spent waiting on a full output queue, summed over tasks, ms. */
  blockedPutMs: number;
  /** The input queue's length integrated over time, item·ms (0 for the source). */
  inputItemMs: number;
}

/** Statistics of one stage (cumulative over epochs; queue figures are for the current or last epoch). */
export interface StageStats {
  /** The stage's name (`"(consumer)"` for the code iterating the pipeline). */
  name: string;
  /** What kind of stage it is; `"consumer"` for the last row. */
  kind: StageKind | "consumer";
  /** Tasks it may run at once now. */
  concurrency: number;
  /** The most tasks the auto-concurrency controller may give it (1 for stages that are not `pipe`). */
  maxConcurrency: number;
  /** Whether the auto-concurrency controller sets `concurrency`. */
  auto: boolean;
  /** `"cpu"` or `"io"` for pipe stages (what limits useful concurrency), `null` for the others. */
  bound: StageBound | null;
  /** Whether it emits outputs in input order. */
  ordered: boolean;
  /** Tasks admitted. Invariant: `tasksIn = done + dropped + failed + cancelled + inFlight + held`. */
  tasksIn: number;
  /** Tasks that finished and produced their output(s). */
  done: number;
  /** Tasks whose function returned `undefined` (and an aggregate's short last batch under `dropLast`). */
  dropped: number;
  /** Tasks whose function threw. */
  failed: number;
  /** Tasks cut short because the pipeline stopped. */
  cancelled: number;
  /** Tasks running now. */
  inFlight: number;
  /** Items held inside the stage: an aggregate's partial batch, an ordered stage's outputs awaiting their turn. */
  held: number;
  /** Items put on the output queue (differs from `done` for generators, aggregate, disaggregate). */
  itemsOut: number;
  /** Task compute time percentiles and mean, milliseconds (time blocked on a full output queue excluded). */
  p50Ms: number;
  /** See `p50Ms`. */
  p90Ms: number;
  /** See `p50Ms`. */
  p99Ms: number;
  /** See `p50Ms`. */
  meanMs: number;
  /**
   * Busy fraction (0..1): compute time over the slot time it had (concurrency × running time); for the source the
   * time spent in its iterator, for the consumer the time not spent waiting for the next item.
   */
  utilization: number;
  /** The input queue (null for the source). */
  input: QueueCounters | null;
  /** Time spent waiting on a full output queue (backpressure), summed over tasks, ms. */
  blockedPutMs: number;
  /** `blockedPutMs` over the slot time the stage had (0..1): how much of its capacity waited on its downstream. */
  blockedFraction: number;
  /** Time spent waiting on an empty input queue (starved), ms. */
  starvedMs: number;
  /** Output items per second of pipeline running time. */
  itemsPerSec: number;
  /** How much this stage looks like the bottleneck (0..1): utilization weighted by its input queue's fill. */
  pressure: number;
  /** How long it has had work running with no progress, once that exceeds the stall threshold; else 0. */
  stalledMs: number;
  /** Stalls seen so far. */
  stalls: number;
  /** Its counters summed over every epoch, for rates over a window. */
  totals: StageTotals;
}

/** One decision of the auto-concurrency controller, as logged in `stats().controller.log`. */
export interface ControllerDecision {
  /** Clock time of the decision, ms. */
  t: number;
  /** The stage decided about. */
  stage: string;
  /**
   * `probe`: a step to measure; `keep`: the step stays; `revert`: the step is undone; `settle`: no step helps, the
   * stage holds; `yield`: a stage gives a CPU slot to the bottleneck; `reprobe`: a settled stage is probed again.
   */
  action: "probe" | "keep" | "revert" | "settle" | "yield" | "reprobe";
  /** Its concurrency before the decision. */
  from: number;
  /** Its concurrency after the decision (equal to `from` for `keep`, `settle`, `reprobe`). */
  to: number;
  /** Why, with the measurements behind it. */
  reason: string;
}

/** What `stats().controller` shows. */
export interface ControllerStats {
  /** Stages whose concurrency the controller sets now. */
  stages: string[];
  /** What it is doing: `"idle"` (no stage is auto), `"measuring"`, `"probing <stage> <from> → <to>"`. */
  state: string;
  /** Its decisions, oldest first (the last 200): each probe, kept or reverted step, settle, yield and re-probe. */
  log: ControllerDecision[];
}

/** Statistics of a whole pipeline; rows run source → stages → consumer. */
export interface PipelineStats {
  /** Running time over all epochs, ms. */
  elapsedMs: number;
  /** Epochs started. */
  epochs: number;
  /** Whether an epoch is running now. */
  running: boolean;
  /** Items handed to the consumer. */
  consumed: number;
  /** Items that sat in queues when a stop discarded them. */
  discarded: number;
  /** One row per stage, then one row `"(consumer)"` for the code iterating the pipeline (input = the sink). */
  stages: StageStats[];
  /**
   * Name of the likely bottleneck: the busiest stage (or the consumer), its input queue's fill breaking ties, if it
   * is busy enough to stand out; null otherwise (see `bottleneck.ts`).
   */
  bottleneck: string | null;
  /** Stages stalled now (work running, no progress for longer than the stall threshold). */
  stalled: string[];
  /** The auto-concurrency controller: stages it sets, what it is doing, its decisions. */
  controller: ControllerStats;
}
