/**
 * One running pipeline stage: admits up to `concurrency` tasks from its input queue, runs them on its executor,
 * puts their outputs on its output queue (in completion order, or input order when `ordered`), and keeps the
 * counters the stats are built from. Concurrency may change while it runs ({@link Stage.setConcurrency}).
 * @module
 */

import { errorText, InvalidArgumentError, type StageError } from "../errors.ts";
import { describeItem } from "./describe.ts";
import { type Executor, mainThread, type PipeFn, type TaskContext } from "./executor.ts";
import { type BoundedQueue, CLOSED, EMPTY } from "./queue.ts";
import { LatencySketch } from "./sketch.ts";
import type { Tracer } from "./trace.ts";

/** Extra room in a stage's input queue beyond its concurrency. */
export const QUEUE_SLACK = 2;
/** Failures logged per stage before further ones are only counted. */
const LOGGED_FAILURES = 10;
/** First errors kept per stage for {@link PipelineFailure}. */
const KEPT_ERRORS = 3;

/** When a stage gives up: more than `n` failures, or a failure rate above `rate` once `after` tasks finished. */
export type MaxFailures = number | { rate: number; after: number };

/** Default failure budget: give up when more than half of the tasks fail, judged after 20 tasks. */
export const DEFAULT_MAX_FAILURES: MaxFailures = { rate: 0.5, after: 20 };

/** The kinds of stage a pipeline is made of. */
export type StageKind = "source" | "pipe" | "aggregate" | "disaggregate";

/** Everything the builder knows about a stage. */
export interface StageSpec {
  kind: StageKind;
  name: string;
  concurrency: number;
  ordered: boolean;
  fn?: PipeFn | string;
  executor: Executor;
  maxFailures: MaxFailures;
  /** Source only. */
  source?: Iterable<unknown> | AsyncIterable<unknown>;
  /** Source only: re-iterate the source for each epoch. */
  continuous?: boolean;
  /** Aggregate only. */
  size?: number;
  /** Aggregate only. */
  dropLast?: boolean;
}

/** What a running epoch gives its stages. */
export interface RunContext {
  readonly signal: AbortSignal;
  /** Ends the epoch with an error (a stage exceeded its failure budget, the source threw). */
  fail(stage: Stage, error: unknown): void;
  log(message: string): void;
  readonly tracer: Tracer | undefined;
}

/** An aggregate's result for an item that went into a batch still being filled. */
const HELD: unique symbol = Symbol("sluice.stage.held");

function isThenable(x: unknown): x is PromiseLike<unknown> {
  return x !== null && typeof x === "object" && typeof (x as PromiseLike<unknown>).then === "function";
}

function isAsyncIterable(x: unknown): x is AsyncIterable<unknown> {
  return x !== null && typeof x === "object" &&
    typeof (x as AsyncIterable<unknown>)[Symbol.asyncIterator] === "function";
}

/** A stage of a built pipeline. Counters are cumulative over epochs. */
export class Stage {
  readonly name: string;
  readonly kind: StageKind;
  readonly ordered: boolean;
  readonly spec: StageSpec;
  #concurrency: number;

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
  /** Items held inside the stage (an `aggregate`'s partial batch). */
  held = 0;
  /** Items put on the output queue. */
  itemsOut = 0;
  /** Sum of task compute time (ms), excluding time blocked on a full output queue. */
  busyMs = 0;
  /** Task compute time distribution. */
  readonly latency: LatencySketch = new LatencySketch();
  /** The first few errors. */
  readonly errors: StageError[] = [];

  #input: BoundedQueue<unknown> | undefined;
  #wake: (() => void) | undefined;
  #drained: (() => void) | undefined;
  #batch: unknown[] = [];
  #lanes: number[] = [];
  #nextLane = 0;

  constructor(spec: StageSpec) {
    this.spec = spec;
    this.name = spec.name;
    this.kind = spec.kind;
    this.ordered = spec.ordered;
    this.#concurrency = spec.concurrency;
  }

  /** Tasks this stage may run at once. */
  get concurrency(): number {
    return this.#concurrency;
  }

  /**
   * Changes how many tasks may run at once, effective immediately (also while running): raising it admits more
   * tasks at once, lowering it lets running tasks finish and admits new ones only below the new bound. The input
   * queue's bound follows (concurrency + a small slack). Source, aggregate and disaggregate stages stay at 1.
   */
  setConcurrency(n: number): void {
    if (!Number.isInteger(n) || n < 1) {
      throw new InvalidArgumentError(
        `stage "${this.name}": concurrency must be a positive integer, got ${n}`,
      );
    }
    if (this.kind !== "pipe") {
      throw new InvalidArgumentError(
        `stage "${this.name}" is a ${this.kind} stage; its concurrency is fixed at 1`,
      );
    }
    this.#concurrency = n;
    if (this.#input !== undefined) this.#input.capacity = n + QUEUE_SLACK;
    this.#wakeDispatcher();
  }

  /** Runs the stage for one epoch; resolves once its output queue is closed. Never rejects. */
  run(
    input: BoundedQueue<unknown> | undefined,
    output: BoundedQueue<unknown>,
    ctx: RunContext,
  ): Promise<void> {
    if (this.kind === "source") return this.#runSource(output, ctx);
    return this.#runStage(input!, output, ctx);
  }

  // ---- source ---------------------------------------------------------------------------------------------

  async #runSource(output: BoundedQueue<unknown>, ctx: RunContext): Promise<void> {
    const src = this.spec.source!;
    const it = isAsyncIterable(src)
      ? src[Symbol.asyncIterator]()
      : (src as Iterable<unknown>)[Symbol.iterator]();
    const aborted = abortPromise(ctx.signal);
    let finished = false;
    try {
      while (!ctx.signal.aborted) {
        const t0 = performance.now();
        let r = it.next() as IteratorResult<unknown> | Promise<IteratorResult<unknown>>;
        if (isThenable(r)) {
          const raced = await Promise.race([r, aborted.promise]);
          if (raced === undefined) break;
          r = raced;
        }
        const dt = performance.now() - t0;
        this.latency.record(dt);
        this.busyMs += dt;
        if (r.done) {
          finished = true;
          break;
        }
        this.tasksIn++;
        this.done++;
        await this.#put(output, r.value);
      }
    } catch (e) {
      finished = true;
      this.failed++;
      this.#remember(e, "the source iterator");
      ctx.fail(this, e);
    } finally {
      aborted.dispose();
      if (!finished) closeIterator(it);
      output.close();
    }
  }

  // ---- pipe / aggregate / disaggregate ---------------------------------------------------------------------

  async #runStage(
    input: BoundedQueue<unknown>,
    output: BoundedQueue<unknown>,
    ctx: RunContext,
  ): Promise<void> {
    this.#input = input;
    input.capacity = this.#concurrency + QUEUE_SLACK;
    const onAbort = () => this.#wakeDispatcher();
    ctx.signal.addEventListener("abort", onAbort);
    let turn: Promise<void> = Promise.resolve();
    try {
      for (;;) {
        while (this.inFlight >= this.#concurrency && !ctx.signal.aborted) {
          await new Promise<void>((r) => this.#wake = r);
        }
        if (ctx.signal.aborted) break;
        let item = input.tryGet();
        if (item === EMPTY) item = await input.get();
        if (item === CLOSED) break;
        this.tasksIn++;
        if (ctx.signal.aborted) {
          this.cancelled++;
          break;
        }
        this.inFlight++;
        if (!this.ordered) {
          this.#task(item, output, ctx, undefined, undefined);
          continue;
        }
        const prev = turn;
        let release!: () => void;
        turn = new Promise<void>((r) => release = r);
        this.#task(item, output, ctx, prev, release);
      }
      if (this.inFlight > 0) await new Promise<void>((r) => this.#drained = r);
      if (!ctx.signal.aborted) await this.#flushBatch(output);
    } finally {
      ctx.signal.removeEventListener("abort", onAbort);
      this.#input = undefined;
      output.close();
    }
  }

  async #task(
    item: unknown,
    output: BoundedQueue<unknown>,
    ctx: RunContext,
    prevTurn: Promise<void> | undefined,
    release: (() => void) | undefined,
  ): Promise<void> {
    const lane = ctx.tracer === undefined ? 0 : this.#takeLane();
    const t0 = performance.now();
    let computeMs = 0;
    try {
      let result = this.#call(item, ctx);
      if (isThenable(result)) result = await result;
      computeMs = performance.now() - t0;
      if (prevTurn !== undefined) await prevTurn;
      computeMs += await this.#emit(result, output, ctx);
    } catch (e) {
      if (computeMs === 0) computeMs = performance.now() - t0;
      if (prevTurn !== undefined) await prevTurn;
      this.#onFailure(e, item, ctx);
    } finally {
      this.latency.record(computeMs);
      this.busyMs += computeMs;
      if (ctx.tracer !== undefined) {
        ctx.tracer.span(this.name, lane, t0, performance.now());
        this.#lanes.push(lane);
      }
      this.inFlight--;
      release?.();
      this.#wakeDispatcher();
      if (this.inFlight === 0 && this.#drained !== undefined) {
        const d = this.#drained;
        this.#drained = undefined;
        d();
      }
    }
  }

  #call(item: unknown, ctx: RunContext): unknown {
    const taskCtx: TaskContext = { signal: ctx.signal, stage: this.name };
    switch (this.kind) {
      case "aggregate":
        return this.#aggregate(item);
      case "disaggregate":
        return item;
      default:
        return (this.spec.executor ?? mainThread).run(this.spec.fn!, item, taskCtx);
    }
  }

  #aggregate(item: unknown): unknown {
    this.#batch.push(item);
    if (this.#batch.length < this.spec.size!) return HELD;
    const batch = this.#batch;
    this.#batch = [];
    return batch;
  }

  /** Puts a task's result on the output queue; returns compute time spent producing streamed outputs. */
  async #emit(result: unknown, output: BoundedQueue<unknown>, ctx: RunContext): Promise<number> {
    if (result === HELD) {
      this.held++;
      return 0;
    }
    if (result === undefined) {
      this.dropped++;
      return 0;
    }
    if (this.kind === "aggregate") {
      const n = (result as unknown[]).length;
      this.held -= n - 1;
      this.done += n;
      await this.#put(output, result);
      return 0;
    }
    if (this.kind === "disaggregate") return await this.#emitMany(result, output, ctx);
    if (isAsyncIterable(result)) return await this.#emitStream(result, output, ctx);
    this.done++;
    await this.#put(output, result);
    return 0;
  }

  async #emitMany(result: unknown, output: BoundedQueue<unknown>, ctx: RunContext): Promise<number> {
    if (result === null || typeof result !== "object" || !(Symbol.iterator in result)) {
      throw new InvalidArgumentError(
        `stage "${this.name}": disaggregate needs an array or iterable, got ${describeItem(result)}`,
      );
    }
    for (const x of result as Iterable<unknown>) {
      if (ctx.signal.aborted) break;
      await this.#put(output, x);
    }
    this.done++;
    return 0;
  }

  async #emitStream(
    stream: AsyncIterable<unknown>,
    output: BoundedQueue<unknown>,
    ctx: RunContext,
  ): Promise<number> {
    const it = stream[Symbol.asyncIterator]();
    let computeMs = 0;
    for (;;) {
      const t0 = performance.now();
      const r = await it.next();
      computeMs += performance.now() - t0;
      if (r.done) break;
      await this.#put(output, r.value);
      if (ctx.signal.aborted) {
        await it.return?.();
        break;
      }
    }
    this.done++;
    return computeMs;
  }

  async #put(output: BoundedQueue<unknown>, value: unknown): Promise<void> {
    if (!output.tryPut(value)) await output.put(value);
    this.itemsOut++;
  }

  async #flushBatch(output: BoundedQueue<unknown>): Promise<void> {
    if (this.kind !== "aggregate" || this.#batch.length === 0) return;
    const batch = this.#batch;
    this.#batch = [];
    this.held -= batch.length;
    if (this.spec.dropLast) {
      this.dropped += batch.length;
      return;
    }
    this.done += batch.length;
    await this.#put(output, batch);
  }

  #onFailure(e: unknown, item: unknown, ctx: RunContext): void {
    if (ctx.signal.aborted) {
      this.cancelled++;
      return;
    }
    this.failed++;
    const what = describeItem(item);
    this.#remember(e, what);
    if (this.failed <= LOGGED_FAILURES) {
      ctx.log(`sluice pipeline: stage "${this.name}" failed on ${what}: ${errorText(e, what)}`);
    } else if (this.failed === LOGGED_FAILURES + 1) {
      ctx.log(`sluice pipeline: stage "${this.name}": further failures are counted but not logged`);
    }
    if (this.#overBudget()) ctx.fail(this, e);
  }

  #remember(e: unknown, what: string): void {
    if (this.errors.length < KEPT_ERRORS) this.errors.push({ stage: this.name, item: what, error: e });
  }

  #overBudget(): boolean {
    const max = this.spec.maxFailures;
    if (typeof max === "number") return this.failed > max;
    const finished = this.done + this.dropped + this.failed;
    return finished >= max.after && this.failed / finished > max.rate;
  }

  /** Items that entered but are not accounted for yet (0 when the stage is idle). */
  get unaccounted(): number {
    return this.tasksIn -
      (this.done + this.dropped + this.failed + this.cancelled + this.inFlight + this.held);
  }

  /** Clears per-epoch state that must not leak into the next epoch (a partial batch after a stop). */
  resetEpoch(): void {
    if (this.#batch.length > 0) {
      this.cancelled += this.#batch.length;
      this.held -= this.#batch.length;
      this.#batch = [];
    }
  }

  #takeLane(): number {
    return this.#lanes.pop() ?? this.#nextLane++;
  }

  #wakeDispatcher(): void {
    const w = this.#wake;
    if (w === undefined) return;
    this.#wake = undefined;
    w();
  }
}

function abortPromise(signal: AbortSignal): { promise: Promise<undefined>; dispose(): void } {
  let onAbort: (() => void) | undefined;
  const promise = new Promise<undefined>((resolve) => {
    onAbort = () => resolve(undefined);
    if (signal.aborted) resolve(undefined);
    else signal.addEventListener("abort", onAbort, { once: true });
  });
  return { promise, dispose: () => signal.removeEventListener("abort", onAbort!) };
}

function closeIterator(it: Iterator<unknown> | AsyncIterator<unknown>): void {
  try {
    const r = it.return?.();
    if (isThenable(r)) (r as Promise<unknown>).then(undefined, () => {});
  } catch {
    // The source's own cleanup failed while stopping; nothing left to report it to.
  }
}
