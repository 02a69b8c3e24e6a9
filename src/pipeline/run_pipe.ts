/**
 * The pipe runner: admits up to `concurrency` tasks from the input queue, runs them on the stage's executor and
 * puts their outputs on the output queue, in completion order or, for an ordered stage, in input order.
 *
 * An ordered stage frees a task's concurrency slot as soon as the task finishes; its output waits in a reorder
 * buffer until every earlier output has been emitted. So that one slow task cannot make the buffer grow without
 * bound (head-of-line blocking), the stage admits a task only while fewer than `2 × concurrency + QUEUE_SLACK`
 * tasks are between admission and emission: at most `concurrency` running and the rest finished, waiting for
 * their turn (counted as `held`). An output that is an async iterable keeps its task's slot until it has been
 * streamed out, since its body runs while it is consumed.
 * @module
 */

import type { PipeFn, TaskContext } from "./executor.ts";
import { type BoundedQueue, CLOSED, EMPTY, QUEUE_SLACK } from "./queue.ts";
import { isAsyncIterable, isThenable } from "./results.ts";
import type { PipeSpec, RunContext, Stage } from "./stage.ts";

/** Runs a pipe stage for one epoch; resolves once its output queue is closed. Never rejects. */
export function runPipe(
  stage: Stage,
  spec: PipeSpec,
  input: BoundedQueue<unknown>,
  output: BoundedQueue<unknown>,
  ctx: RunContext,
): Promise<void> {
  return new PipeRun(stage, spec, input, output, ctx).run();
}

/** Tasks an ordered stage may have between admission and emission, beyond twice its concurrency. */
export function reorderWindow(concurrency: number): number {
  return 2 * concurrency + QUEUE_SLACK;
}

/** An ordered task's result that emits nothing (it was dropped or failed). */
const SKIP: unique symbol = Symbol("sluice.pipe.skip");

/** An ordered task's streamed output, still holding the task's slot until it has been emitted. */
class Pending {
  constructor(
    readonly stream: AsyncIterable<unknown>,
    readonly item: unknown,
    readonly t0: number,
    readonly lane: number,
    readonly computeMs: number,
  ) {}
}

class PipeRun {
  readonly #stage: Stage;
  readonly #fn: PipeFn | string;
  readonly #spec: PipeSpec;
  readonly #input: BoundedQueue<unknown>;
  readonly #output: BoundedQueue<unknown>;
  readonly #ctx: RunContext;
  readonly #taskCtx: TaskContext;
  #wake: (() => void) | undefined;
  #idle: (() => void) | undefined;
  readonly #lanes: number[] = [];
  #nextLane = 0;
  // Ordered stages: sequence numbers of admitted tasks, the next one to emit, finished results by number.
  #seq = 0;
  #next = 0;
  readonly #results = new Map<number, unknown>();
  #emitting = false;

  constructor(
    stage: Stage,
    spec: PipeSpec,
    input: BoundedQueue<unknown>,
    output: BoundedQueue<unknown>,
    ctx: RunContext,
  ) {
    this.#stage = stage;
    this.#spec = spec;
    this.#fn = spec.fn;
    this.#input = input;
    this.#output = output;
    this.#ctx = ctx;
    this.#taskCtx = { signal: ctx.signal, stage: stage.name };
  }

  async run(): Promise<void> {
    const stage = this.#stage;
    const input = this.#input;
    const signal = this.#ctx.signal;
    input.capacity = stage.concurrency + QUEUE_SLACK;
    stage.onConcurrency = () => {
      input.capacity = stage.concurrency + QUEUE_SLACK;
      this.#wakeDispatcher();
    };
    const onAbort = () => {
      this.#wakeDispatcher();
      this.#checkIdle();
    };
    signal.addEventListener("abort", onAbort);
    try {
      for (;;) {
        while (!this.#canAdmit() && !signal.aborted) await new Promise<void>((r) => this.#wake = r);
        if (signal.aborted) break;
        let item = stage.takeNow(input, this.#ctx);
        if (item === EMPTY) item = await stage.take(input, this.#ctx);
        if (item === CLOSED) break;
        stage.inFlight++;
        this.#task(item, this.#spec.ordered ? this.#seq++ : -1);
      }
      if (!this.#isIdle()) await new Promise<void>((r) => this.#idle = r);
    } finally {
      signal.removeEventListener("abort", onAbort);
      stage.onConcurrency = undefined;
      this.#cancelBuffered();
      this.#output.close();
    }
  }

  #canAdmit(): boolean {
    const stage = this.#stage;
    if (stage.inFlight >= stage.concurrency) return false;
    return !this.#spec.ordered || this.#seq - this.#next < reorderWindow(stage.concurrency);
  }

  // ---- tasks ----------------------------------------------------------------------------------------------

  /**
   * Runs one task. Unordered (`seq` < 0), it puts its output(s) on the output queue itself. Ordered, it leaves its
   * result in the reorder buffer under `seq`, frees its slot (unless the result is a stream, which keeps it until
   * emitted) and starts the emitter when its turn has come.
   */
  async #task(item: unknown, seq: number): Promise<void> {
    const stage = this.#stage;
    const ctx = this.#ctx;
    const lane = ctx.tracer === undefined ? 0 : this.#takeLane();
    const t0 = stage.workStarted();
    let working = true;
    let computeMs = -1; // set when known before the work ends (streamed outputs)
    let result: unknown = SKIP;
    try {
      let r = this.#spec.executor.run(this.#fn, item, this.#taskCtx);
      if (isThenable(r)) r = await r;
      if (r === undefined) {
        stage.dropped++;
      } else if (seq >= 0) {
        result = r;
        if (!isAsyncIterable(r)) stage.held++;
      } else if (isAsyncIterable(r)) {
        computeMs = stage.now() - t0;
        computeMs += await this.#emitStream(r);
        stage.done++;
      } else {
        working = false;
        computeMs = stage.workEnded() - t0;
        await stage.put(this.#output, r);
        stage.done++;
      }
    } catch (e) {
      stage.taskFailed(e, item, ctx);
    }
    if (working) {
      const t1 = stage.workEnded();
      if (computeMs < 0) computeMs = t1 - t0;
    }
    if (seq < 0) return this.#finishTask(t0, lane, computeMs);
    if (isAsyncIterable(result)) {
      this.#results.set(seq, new Pending(result, item, t0, lane, computeMs));
    } else {
      this.#results.set(seq, result);
      this.#finishTask(t0, lane, computeMs);
    }
    if (seq === this.#next && !this.#emitting) void this.#emit();
  }

  /**
   * Streams an async iterable's elements out; returns the time spent waiting on it (its compute time). Called
   * while the task counts as working; time blocked putting an element does not count.
   */
  async #emitStream(stream: AsyncIterable<unknown>): Promise<number> {
    const stage = this.#stage;
    const it = stream[Symbol.asyncIterator]();
    let computeMs = 0;
    for (;;) {
      const t = stage.now();
      const r = await it.next();
      computeMs += stage.now() - t;
      if (r.done) break;
      stage.workEnded();
      await stage.put(this.#output, r.value);
      stage.workStarted();
      if (this.#ctx.signal.aborted) {
        await it.return?.();
        break;
      }
    }
    return computeMs;
  }

  #finishTask(t0: number, lane: number, computeMs: number): void {
    const stage = this.#stage;
    stage.record(computeMs);
    const tracer = this.#ctx.tracer;
    if (tracer !== undefined) {
      tracer.span(stage.name, lane, t0, stage.now());
      this.#lanes.push(lane);
    }
    stage.inFlight--;
    this.#wakeDispatcher();
    this.#checkIdle();
  }

  // ---- ordered: the emitter ----------------------------------------------------------------------------

  /** Emits finished results in input order, as long as the next one is ready. One emitter runs at a time. */
  async #emit(): Promise<void> {
    const stage = this.#stage;
    const results = this.#results;
    this.#emitting = true;
    try {
      while (results.has(this.#next) && !this.#ctx.signal.aborted) {
        const r = results.get(this.#next);
        results.delete(this.#next);
        if (r instanceof Pending) {
          await this.#emitPending(r);
        } else if (r !== SKIP) {
          await stage.put(this.#output, r);
          stage.held--;
          stage.done++;
        }
        this.#next++;
        this.#wakeDispatcher();
      }
    } finally {
      this.#emitting = false;
      this.#checkIdle();
    }
  }

  async #emitPending(p: Pending): Promise<void> {
    const stage = this.#stage;
    let computeMs = p.computeMs;
    stage.workStarted();
    try {
      computeMs += await this.#emitStream(p.stream);
      stage.done++;
    } catch (e) {
      stage.taskFailed(e, p.item, this.#ctx);
    } finally {
      stage.workEnded();
      this.#finishTask(p.t0, p.lane, computeMs);
    }
  }

  /** Results still buffered when the epoch stopped are cancelled (their streams closed). */
  #cancelBuffered(): void {
    const stage = this.#stage;
    for (const r of this.#results.values()) {
      if (r === SKIP) continue;
      stage.cancelled++;
      if (r instanceof Pending) {
        stage.inFlight--;
        const it = r.stream[Symbol.asyncIterator]();
        it.return?.()?.then(undefined, () => {});
      } else {
        stage.held--;
      }
    }
    this.#results.clear();
  }

  // ---- plumbing -------------------------------------------------------------------------------------------

  #isIdle(): boolean {
    if (this.#stage.inFlight > this.#pendingCount() || this.#emitting) return false;
    return this.#results.size === 0 || this.#ctx.signal.aborted;
  }

  /** Streamed outputs waiting in the reorder buffer: in flight, but nothing runs them until their turn. */
  #pendingCount(): number {
    if (!this.#ctx.signal.aborted) return 0;
    let n = 0;
    for (const r of this.#results.values()) if (r instanceof Pending) n++;
    return n;
  }

  #checkIdle(): void {
    const idle = this.#idle;
    if (idle === undefined || !this.#isIdle()) return;
    this.#idle = undefined;
    idle();
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
