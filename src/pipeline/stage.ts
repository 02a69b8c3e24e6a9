/**
 * One stage of a built pipeline: its description ({@link StageSpec}, one shape per kind), the counters the stats
 * are built from, its concurrency (changeable while it runs, by hand or by the auto-concurrency controller), and
 * what every kind's runner shares (putting outputs, counting failures, the stall watch). Each kind runs in its own
 * small runner (`run_source.ts`, `run_pipe.ts`, `run_aggregate.ts`, `run_disaggregate.ts`), chosen by kind in
 * `runners.ts`; the pipeline hands it to {@link Stage.run}, so this module imports no runner.
 * @module
 */

import { errorText, InvalidArgumentError, type StageError } from "../errors.ts";
import type { OptionSpec } from "../options.ts";
import { type Clock, realClock } from "./clock.ts";
import { describeItem } from "./describe.ts";
import type { Executor, PipeFn } from "./executor.ts";
import { type BoundedQueue, CLOSED, EMPTY } from "./queue.ts";
import { LatencySketch } from "./sketch.ts";
import type { Tracer } from "./trace.ts";
import type { PipelineEvent } from "./hooks.ts";
import type { StageBound, StageKind } from "./stats.ts";

/** Failures logged per stage before further ones are only counted. */
const LOGGED_FAILURES = 10;
/** First errors kept per stage for {@link PipelineFailure}. */
const KEPT_ERRORS = 3;

/** When a stage gives up: more than `n` failures, or a failure rate above `rate` once `after` tasks finished. */
export type MaxFailures = number | { rate: number; after: number };

/** A stage's concurrency: tasks at once, or `"auto"` for the pipeline's controller to set. */
export type StageConcurrency = number | "auto";

/** The tasks a stage starts with: its number, or 1 under `"auto"` (where the controller starts). */
export function startSize(c: StageConcurrency): number {
  return c === "auto" ? 1 : c;
}

/** Default failure budget: give up when more than half of the tasks fail, judged after 20 tasks. */
export const DEFAULT_MAX_FAILURES: MaxFailures = { rate: 0.5, after: 20 };

/** {@link MaxFailures}, declared once (a stage's, the loader's). */
export const MAX_FAILURES_OPTION = {
  kind: "either",
  of: [
    { kind: "integer", min: 0, doc: "failures tolerated" },
    {
      kind: "group",
      doc: "a failure rate",
      options: {
        rate: {
          kind: "number",
          min: 0,
          max: 1,
          required: true,
          doc: "failed fraction of the tasks finished",
        },
        after: { kind: "integer", min: 0, required: true, doc: "judged once this many tasks finished" },
      },
    },
  ],
  default: DEFAULT_MAX_FAILURES,
  doc: "failures tolerated before giving up: a count, or a rate once `after` tasks finished",
} as const satisfies OptionSpec;

/** The source: pulls items from an iterable. */
export interface SourceSpec {
  kind: "source";
  name: string;
  source: Iterable<unknown> | AsyncIterable<unknown>;
  /** Re-iterate the source for each epoch. */
  continuous: boolean;
}

/** A stage mapping each item with a function, up to `concurrency` tasks at once. */
export interface PipeSpec {
  kind: "pipe";
  name: string;
  /** The stage function, or the export an executor (a `WorkerPool`) runs. */
  fn: PipeFn | string;
  executor: Executor;
  /** Starting concurrency (the controller's first value when `auto`). */
  concurrency: number;
  /** Whether the auto-concurrency controller sets the concurrency. */
  auto: boolean;
  /** Upper bound for the controller (and for `setConcurrency("auto")`). */
  maxConcurrency: number;
  bound: StageBound;
  ordered: boolean;
  maxFailures: MaxFailures;
}

/** Groups items into arrays of `size`. */
export interface AggregateSpec {
  kind: "aggregate";
  name: string;
  size: number;
  /** Drop a last batch shorter than `size`. */
  dropLast: boolean;
}

/** Flattens each incoming iterable into its elements. */
export interface DisaggregateSpec {
  kind: "disaggregate";
  name: string;
}

/** Everything the builder knows about a stage: one shape per kind. */
export type StageSpec = SourceSpec | PipeSpec | AggregateSpec | DisaggregateSpec;
// Every kind has a spec, and every spec a kind.
const _kinds: Record<StageKind, StageSpec["kind"]> & Record<StageSpec["kind"], StageKind> = {
  source: "source",
  pipe: "pipe",
  aggregate: "aggregate",
  disaggregate: "disaggregate",
};

/** Runs one stage for one epoch (`runners.ts` has one per kind); resolves once `output` is closed, never rejects. */
export type StageRunner = (
  stage: Stage,
  input: BoundedQueue<unknown> | undefined,
  output: BoundedQueue<unknown>,
  ctx: RunContext,
) => Promise<void>;

/** What a running epoch gives its stages. */
export interface RunContext {
  readonly signal: AbortSignal;
  /**
   * Ends the epoch with an error (a stage exceeded its failure budget, the source threw), on `item` when a
   * task's: its consumer gets it (and it is not logged: it would be printed twice).
   */
  fail(stage: Stage, error: unknown, item?: string): void;
  log(message: string): void;
  /** Hands an event to the pipeline's hooks. */
  event(e: PipelineEvent): void;
  readonly tracer: Tracer | undefined;
  readonly clock: Clock;
}

/** What a running stage lets a controller (a tuner, the auto-concurrency controller) do. */
export interface StageControl {
  /** The stage's name. */
  readonly name: string;
  /** What kind of stage it is (only `pipe` stages change concurrency). */
  readonly kind: StageKind;
  /** Tasks the stage may run at once. */
  readonly concurrency: number;
  /** Whether the pipeline's auto-concurrency controller sets the concurrency. */
  readonly auto: boolean;
  /**
   * Changes the stage's concurrency, effective immediately, also while it runs. A number pins it (the controller
   * lets go of it); `"auto"` hands it to the controller, starting from the current value.
   */
  setConcurrency(n: number | "auto"): void;
  /**
   * The auto-concurrency controller's step: changes the concurrency of a stage under the controller (`auto`)
   * and leaves it there. Throws for a stage that is not `auto`, or a value outside `[1, maxConcurrency]`.
   */
  adjust(n: number): void;
}

/** A stage of a built pipeline. Counters are cumulative over epochs. */
export class Stage implements StageControl {
  readonly name: string;
  readonly kind: StageKind;
  readonly ordered: boolean;
  readonly spec: StageSpec;

  /** Tasks admitted (items taken from the input queue). */
  tasksIn = 0;
  /** Tasks that finished and produced their output(s). */
  done = 0;
  /** Tasks whose function returned `undefined` (and, for `aggregate` with `dropLast`, items of a short batch). */
  dropped = 0;
  /** Tasks whose function threw. */
  failed = 0;
  /** Tasks cut short because the pipeline stopped. */
  cancelled = 0;
  /** Tasks running now. */
  inFlight = 0;
  /** Items held inside the stage: an `aggregate`'s partial batch, an ordered stage's results awaiting their turn. */
  held = 0;
  /** Items put on the output queue. */
  itemsOut = 0;
  /** Task compute time distribution. */
  readonly latency: LatencySketch = new LatencySketch();
  /** The first few errors. */
  readonly errors: StageError[] = [];
  /** Stalls seen: periods longer than the pipeline's stall threshold with work running and no progress. */
  stalls = 0;

  /** Set by the running pipe runner: called when the concurrency changes (it admits more or fewer tasks). */
  onConcurrency: (() => void) | undefined;
  /** Set by the pipeline: called when the stage is handed to the auto-concurrency controller. */
  onAuto: (() => void) | undefined;

  #concurrency: number;
  #auto: boolean;
  #clock: Clock = realClock;
  // Slot time: the integral of the concurrency over the time the stage ran (the denominator of utilization).
  #slotMs = 0;
  #slotT = 0;
  #running = false;
  // Work running now (tasks computing, or the source waiting on its iterator), its integral over time (busy
  // time, which excludes time blocked on a full output queue), and the last progress (for the stall watch).
  #working = 0;
  #workMs = 0;
  #workT = 0;
  #progressAt = 0;

  constructor(spec: StageSpec) {
    this.spec = spec;
    this.name = spec.name;
    this.kind = spec.kind;
    this.ordered = spec.kind === "pipe" ? spec.ordered : true;
    this.#concurrency = spec.kind === "pipe" ? spec.concurrency : 1;
    this.#auto = spec.kind === "pipe" && spec.auto;
  }

  /** Tasks this stage may run at once. */
  get concurrency(): number {
    return this.#concurrency;
  }

  /** Whether the pipeline's auto-concurrency controller sets this stage's concurrency. */
  get auto(): boolean {
    return this.#auto;
  }

  /** The most tasks the controller may give this stage (1 for stages that are not `pipe`). */
  get maxConcurrency(): number {
    return this.spec.kind === "pipe" ? this.spec.maxConcurrency : 1;
  }

  /** `"cpu"` or `"io"` for `pipe` stages (see {@link StageBound}); `undefined` for the others. */
  get bound(): StageBound | undefined {
    return this.spec.kind === "pipe" ? this.spec.bound : undefined;
  }

  /**
   * Changes how many tasks may run at once, effective immediately (also while running): raising it admits more
   * tasks at once, lowering it lets running tasks finish and admits new ones only below the new bound. The input
   * queue's bound follows (concurrency + a small slack), and a `WorkerPool` executor grows to fit
   * (`WorkerPool.reserve`). A number takes the stage out of the auto-concurrency controller's hands; `"auto"`
   * hands it (back) to the controller, which starts from the current value. Source, aggregate and disaggregate
   * stages stay at 1.
   */
  setConcurrency(n: number | "auto"): void {
    if (this.spec.kind !== "pipe") {
      throw new InvalidArgumentError(
        `stage "${this.name}" is a ${this.kind} stage; its concurrency is fixed at 1`,
      );
    }
    if (n === "auto") {
      this.#auto = true;
      if (this.#concurrency > this.spec.maxConcurrency) this.#apply(this.spec.maxConcurrency);
      this.onAuto?.();
      return;
    }
    if (!Number.isInteger(n) || n < 1) {
      throw new InvalidArgumentError(
        `stage "${this.name}": concurrency must be a positive integer or "auto", got ${n}`,
      );
    }
    this.#auto = false;
    this.#apply(n);
  }

  /** The controller's change: like {@link setConcurrency}, but the stage stays under the controller. */
  adjust(n: number): void {
    if (!this.#auto) {
      throw new InvalidArgumentError(
        `stage "${this.name}" is not under the auto-concurrency controller; use setConcurrency`,
      );
    }
    if (!Number.isInteger(n) || n < 1 || n > this.maxConcurrency) {
      throw new InvalidArgumentError(
        `stage "${this.name}": concurrency must be an integer in [1, ${this.maxConcurrency}], got ${n}`,
      );
    }
    this.#apply(n);
  }

  #apply(n: number): void {
    if (n === this.#concurrency) return;
    if (this.#running) {
      const now = this.#clock.now();
      this.#slotMs += this.#concurrency * (now - this.#slotT);
      this.#slotT = now;
    }
    this.#concurrency = n;
    if (this.spec.kind === "pipe") this.spec.executor.reserve?.(this.name, n);
    this.onConcurrency?.();
  }

  /** Runs the stage for one epoch with `runner`; resolves once its output queue is closed. Never rejects. */
  async run(
    input: BoundedQueue<unknown> | undefined,
    output: BoundedQueue<unknown>,
    ctx: RunContext,
    runner: StageRunner,
  ): Promise<void> {
    this.#clock = ctx.clock;
    this.#slotT = ctx.clock.now();
    this.#running = true;
    const spec = this.spec;
    try {
      if (spec.kind === "pipe") spec.executor.reserve?.(this.name, this.#concurrency);
      return await runner(this, input, output, ctx);
    } finally {
      this.#slotMs += this.#concurrency * (ctx.clock.now() - this.#slotT);
      this.#running = false;
    }
  }

  // ---- shared by the runners ------------------------------------------------------------------------------

  /** The clock of the running epoch. */
  now(): number {
    return this.#clock.now();
  }

  /** Work started (a task's compute, the source waiting on its iterator); returns the clock time. */
  workStarted(): number {
    const now = this.#clock.now();
    this.#workMs += this.#working * (now - this.#workT);
    this.#workT = now;
    if (this.#working++ === 0) this.#progressAt = now;
    return now;
  }

  /** Work ended (its output is ready, or it failed): progress. Returns the clock time. */
  workEnded(): number {
    const now = this.#clock.now();
    this.#workMs += this.#working * (now - this.#workT);
    this.#workT = now;
    this.#working--;
    this.#progressAt = now;
    return now;
  }

  /** Records one task's compute time. */
  record(ms: number): void {
    this.latency.record(ms);
  }

  /**
   * Takes the next item from the input queue without waiting, and counts it in: the item, {@link EMPTY} when none
   * is buffered, or {@link CLOSED} once the input is drained or the epoch stopped (an item taken then is counted
   * as cancelled).
   */
  takeNow(input: BoundedQueue<unknown>, ctx: RunContext): unknown {
    const item = input.tryGet();
    return item === EMPTY ? EMPTY : this.#admit(item, ctx);
  }

  /** Like {@link takeNow}, waiting while the input is empty (never {@link EMPTY}). */
  async take(input: BoundedQueue<unknown>, ctx: RunContext): Promise<unknown> {
    const item = this.takeNow(input, ctx);
    return item !== EMPTY ? item : this.#admit(await input.get(), ctx);
  }

  #admit(item: unknown, ctx: RunContext): unknown {
    if (item === CLOSED) return CLOSED;
    this.tasksIn++;
    if (!ctx.signal.aborted) return item;
    this.cancelled++;
    return CLOSED;
  }

  /** Puts a value on the output queue, waiting while it is full. */
  async put(output: BoundedQueue<unknown>, value: unknown): Promise<void> {
    if (!output.tryPut(value)) await output.put(value);
    this.itemsOut++;
  }

  /** Counts and logs a task's failure; ends the epoch once the stage is over its failure budget. */
  taskFailed(e: unknown, item: unknown, ctx: RunContext): void {
    if (ctx.signal.aborted) {
      this.cancelled++;
      return;
    }
    this.failed++;
    const what = describeItem(item);
    this.remember(e, what);
    ctx.event({ type: "failure", stage: this.name, item: what, error: e });
    // The failure that ends the epoch reaches its consumer as the epoch's error: logging it too printed it twice.
    if (this.#overBudget()) return ctx.fail(this, e, what);
    if (this.failed <= LOGGED_FAILURES) {
      ctx.log(failureLine(this.name, what, e));
    } else if (this.failed === LOGGED_FAILURES + 1) {
      ctx.log(`sluice pipeline: stage "${this.name}": further failures are counted but not logged`);
    }
  }

  /** Keeps one of the stage's first errors for {@link PipelineFailure}. */
  remember(e: unknown, what: string): void {
    if (this.errors.length < KEPT_ERRORS) this.errors.push({ stage: this.name, item: what, error: e });
  }

  #overBudget(): boolean {
    const max = this.spec.kind === "pipe" ? this.spec.maxFailures : 0;
    if (typeof max === "number") return this.failed > max;
    const finished = this.done + this.dropped + this.failed;
    return finished >= max.after && this.failed / finished > max.rate;
  }

  // ---- read by stats and the controller --------------------------------------------------------------------

  /**
   * Time spent working, integrated over concurrent tasks, including work under way, ms: from each task's start to
   * its end, less the time its tasks waited for capacity their executor's other work held (`Executor.waitMs`:
   * queued for a Worker of a pool another stage shares), which is waiting, not work.
   */
  busyMs(now: number): number {
    const waited = this.spec.kind === "pipe" ? this.spec.executor.waitMs?.(this.name) ?? 0 : 0;
    return Math.max(0, this.#workMs + this.#working * (now - this.#workT) - waited);
  }

  /** Concurrency integrated over the time the stage ran, slot·ms (utilization = busyMs / slotMs). */
  slotMs(now: number): number {
    return this.#slotMs + (this.#running ? this.#concurrency * (now - this.#slotT) : 0);
  }

  /** How long the stage has had work running with no progress (0 when it has none running). */
  noProgressMs(now: number): number {
    return this.#working > 0 ? now - this.#progressAt : 0;
  }

  /** Items that entered but are not accounted for yet (0 when the stage is idle). */
  get unaccounted(): number {
    return this.tasksIn -
      (this.done + this.dropped + this.failed + this.cancelled + this.inFlight + this.held);
  }
}

/**
 * The log line of a failed task: `sluice pipeline: stage "NAME" failed on ITEM: Class: message` (the item named
 * once). The backend's parent prints a child's failures with it too.
 */
export function failureLine(stage: string, item: string, error: unknown): string {
  return `sluice pipeline: stage "${stage}" failed on ${item}: ${errorText(error, item)}`;
}
