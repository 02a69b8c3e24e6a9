/**
 * A built pipeline: iterate it (`for await`) to run one epoch (one pass over the source); read `stats()` at
 * any time; change a stage's concurrency while it runs through `stage(name).setConcurrency(n)` (or hand it to the
 * auto-concurrency controller with `"auto"`); `stop()` it (or `await using` it) to cancel in-flight work and
 * terminate Workers. This module runs epochs; beside each epoch run the hooks' reports (`hooks.ts`, the one way
 * stats and events leave), the stall watch (`stall_watch.ts`) and the auto-concurrency controller
 * (`auto_controller.ts`, which uses only `stats()` and the stage controls). The stats rows are computed in
 * `stats_rows.ts`; their shapes are in the leaf `stats.ts`.
 * @module
 */

import { errorText, InvalidArgumentError, PipelineFailure, PipelineStoppedError } from "../errors.ts";
import { AutoController } from "./auto_controller.ts";
import type { AutoConcurrencyOptions, AutoConfig } from "./auto_policy.ts";
import { type Clock, realClock } from "./clock.ts";
import type { Executor } from "./executor.ts";
import { HookSet, type PipelineEvent, type PipelineHook } from "./hooks.ts";
import { BoundedQueue, CLOSED, EMPTY, QUEUE_SLACK } from "./queue.ts";
import { RUNNERS } from "./runners.ts";
import { type RunContext, Stage, type StageControl, type StageSpec } from "./stage.ts";
import { StallWatch } from "./stall_watch.ts";
import type { PipelineStats } from "./stats.ts";
import { bottleneckOf, QueueTotals, statsRows } from "./stats_rows.ts";
import { Tracer } from "./trace.ts";

/** Options of the sink, the queue between the last stage and the consumer. */
export interface SinkOptions {
  /** Items buffered for the consumer (default 3). */
  bufferSize?: number;
}

/** Options of `build()`. */
export interface BuildOptions {
  /** Milliseconds between reports to the hooks while an epoch runs (default 10000). */
  reportInterval?: number;
  /**
   * Receivers of stats (every `reportInterval` ms while running, and once as each epoch ends) and events
   * (failures, stalls, concurrency changes): the one way stats leave a pipeline; see `jsonlStatsHook`.
   */
  hooks?: PipelineHook[];
  /** Aborting it stops the pipeline; the `for await` then throws the signal's reason. */
  signal?: AbortSignal;
  /** Writes a Chrome trace-event JSON file (Perfetto, chrome://tracing) at the end of each epoch. */
  trace?: string;
  /** Where failure, stall and controller log lines go (default `console.error`). */
  log?: (message: string) => void;
  /** A stage with work running and no progress for this long is reported as stalled (default 30000 ms). */
  stallThresholdMs?: number;
  /** Tuning of the auto-concurrency controller (stages built with `concurrency: "auto"`). */
  autoConcurrency?: AutoConcurrencyOptions;
  /**
   * The time source for stats, stall watch, reports and the controller (default: wall-clock time). Tests and
   * simulations pass a virtual clock to get the same decisions from the same timings.
   */
  clock?: Clock;
}

/** {@link BuildOptions} checked at `build()`'s door: the controller's tuning with every default in force. */
export interface ResolvedBuildOptions extends Omit<BuildOptions, "autoConcurrency"> {
  /** Tuning of the auto-concurrency controller, defaults applied. */
  autoConcurrency: AutoConfig;
}

interface Epoch {
  readonly ac: AbortController;
  readonly queues: BoundedQueue<unknown>[];
  runs: Promise<void>[];
  readonly t0: number;
  failure: unknown;
  reason: unknown;
  aborted: boolean;
  finishing: Promise<void> | undefined;
  onSignal: (() => void) | undefined;
}

/** A built pipeline. Create with `PipelineBuilder`. */
export class Pipeline<T> implements AsyncIterable<T>, AsyncDisposable {
  readonly #stages: Stage[];
  readonly #bufferSize: number;
  readonly #opts: ResolvedBuildOptions;
  readonly #continuous: boolean;
  readonly #tracer: Tracer | undefined;
  readonly #clock: Clock;
  readonly #log: (message: string) => void;
  readonly #hooks: HookSet;
  readonly #stalls: StallWatch;
  /** The auto-concurrency controller: beside the pipeline, it reads `stats()` and changes `auto` stages. */
  readonly #controller: AutoController;
  #epoch: Epoch | undefined;
  #lastQueues: BoundedQueue<unknown>[] = [];
  readonly #queueTotals = new QueueTotals();
  #epochs = 0;
  #activeMs = 0;
  #consumed = 0;
  #discarded = 0;
  #stopped = false;

  /**
   * Use `PipelineBuilder.build()`, which checks the options this takes resolved.
   * @param specs the stages as the builder described them, source first
   * @param sink the queue between the last stage and the consumer (its size in items)
   * @param opts the build options, checked and defaulted (`resolveBuildOptions`)
   */
  constructor(specs: StageSpec[], sink: SinkOptions, opts: ResolvedBuildOptions) {
    this.#stages = specs.map((s) => new Stage(s));
    this.#bufferSize = sink.bufferSize ?? 3;
    this.#opts = opts;
    this.#continuous = specs[0].kind === "source" && specs[0].continuous;
    this.#tracer = opts.trace === undefined ? undefined : new Tracer(opts.trace);
    this.#clock = opts.clock ?? realClock;
    this.#log = opts.log ?? ((m: string) => console.error(m));
    const hooks = new HookSet(opts.hooks ?? [], this.#log, this.#clock, opts.reportInterval);
    const event = (e: PipelineEvent) => hooks.event(e);
    this.#hooks = hooks;
    this.#stalls = new StallWatch(this.#stages, opts.stallThresholdMs, this.#clock, this.#log, event);
    this.#controller = new AutoController(this, opts.autoConcurrency, this.#clock, event);
    const startController = () => {
      if (this.#epoch !== undefined && !this.#epoch.aborted) this.#controller.start();
    };
    for (const s of this.#stages) s.onAuto = startController;
  }

  /** The stages, source first. */
  get stages(): readonly StageControl[] {
    return this.#stages;
  }

  /**
   * One stage's controls: read its concurrency, or change it while the pipeline runs.
   * @param name the stage's name, as in `stats()` (a repeated name was made unique with `#2`, `#3`, …)
   * @returns the stage's controls (`setConcurrency`, `concurrency`, `auto`)
   * @throws {InvalidArgumentError} when no stage has that name (the message lists the names there are)
   */
  stage(name: string): StageControl {
    const s = this.#stages.find((x) => x.name === name);
    if (s === undefined) {
      const names = this.#stages.map((x) => x.name).join(", ");
      throw new InvalidArgumentError(`no stage named "${name}" (stages: ${names})`);
    }
    return s;
  }

  /**
   * Runs one epoch: one pass over the source (again for each `for await` when the source is `continuous`).
   * Leaving the loop early (`break`, a throw) cancels the epoch's work in flight.
   * @returns an iterator over the sink's items, in the order the last stage emits them
   * @throws {PipelineStoppedError} when the pipeline was stopped
   * @throws {InvalidArgumentError} when an epoch is running already, or the source has made its one pass (it is
   *   not `continuous`)
   * @throws {PipelineFailure} from `next()`, when a stage exceeds its `maxFailures` or the source throws; or the
   *   `signal`'s reason, when it aborts
   */
  [Symbol.asyncIterator](): AsyncIterator<T> {
    const epoch = this.#start();
    return {
      next: () => this.#next(epoch),
      return: async (value?: unknown) => {
        await this.#finish(epoch, true);
        return { done: true, value: value as T };
      },
    };
  }

  /** Cancels the running epoch (in-flight tasks are aborted or awaited), terminates Workers. Idempotent. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#epoch !== undefined) await this.#finish(this.#epoch, true);
    await this.#closeExecutors();
  }

  /** Same as {@link stop}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }

  /**
   * Current statistics; cheap enough to poll (a few small objects, no per-item state).
   * @returns totals over every epoch so far (the running one included: time in ms, items consumed and
   *   discarded), a row per stage (tasks, task-time percentiles in ms, utilization, time blocked), the bottleneck
   *   stage, the stalled stages and the auto-concurrency controller's state
   */
  stats(): PipelineStats {
    const epoch = this.#epoch;
    const now = this.#clock.now();
    const elapsedMs = this.#activeMs + (epoch === undefined ? 0 : now - epoch.t0);
    const rows = statsRows({
      stages: this.#stages,
      queues: (epoch?.queues ?? this.#lastQueues).map((q) => q.counters()),
      totals: this.#queueTotals,
      consumed: this.#consumed,
      now,
      elapsedMs,
      stalledMs: (s, t) => this.#stalls.stalledMs(s, t),
    });
    return {
      elapsedMs,
      epochs: this.#epochs,
      running: epoch !== undefined,
      consumed: this.#consumed,
      discarded: this.#discarded,
      stages: rows,
      bottleneck: bottleneckOf(rows),
      stalled: rows.filter((r) => r.stalledMs > 0).map((r) => r.name),
      controller: this.#controller.stats(),
    };
  }

  // ---- epochs ---------------------------------------------------------------------------------------------

  #start(): Epoch {
    if (this.#stopped) throw new PipelineStoppedError("the pipeline was stopped; build a new one");
    if (this.#epoch !== undefined) {
      throw new InvalidArgumentError("an epoch of this pipeline is already running");
    }
    if (this.#epochs > 0 && !this.#continuous) {
      throw new InvalidArgumentError(
        "the pipeline already made its pass over the source; use addSource(..., { continuous: true }) for epochs",
      );
    }
    const queues = this.#makeQueues();
    const epoch: Epoch = {
      ac: new AbortController(),
      queues,
      runs: [],
      t0: this.#clock.now(),
      failure: undefined,
      reason: undefined,
      aborted: false,
      finishing: undefined,
      onSignal: undefined,
    };
    this.#epoch = epoch;
    this.#epochs++;
    this.#queueTotals.add(this.#lastQueues.map((q) => q.counters()));
    this.#lastQueues = queues;
    this.#watchSignal(epoch);
    if (epoch.aborted) return epoch;
    const ctx = this.#runContext(epoch);
    epoch.runs = this.#stages.map((s, i) =>
      s.run(i === 0 ? undefined : queues[i - 1], queues[i], ctx, RUNNERS[s.spec.kind])
    );
    this.#startTimers();
    return epoch;
  }

  #makeQueues(): BoundedQueue<unknown>[] {
    const n = this.#stages.length;
    const queues: BoundedQueue<unknown>[] = [];
    for (let i = 0; i < n; i++) {
      const last = i === n - 1;
      const capacity = last ? this.#bufferSize : this.#stages[i + 1].concurrency + QUEUE_SLACK;
      const name = last ? "sink" : `${this.#stages[i + 1].name}.in`;
      const tracer = this.#tracer;
      queues.push(new BoundedQueue(capacity, tracer && ((len) => tracer.counter(name, len)), this.#clock));
    }
    return queues;
  }

  #runContext(epoch: Epoch): RunContext {
    return {
      signal: epoch.ac.signal,
      tracer: this.#tracer,
      log: this.#log,
      clock: this.#clock,
      event: (e) => this.#hooks.event(e),
      fail: (stage, error, item) => {
        if (epoch.failure !== undefined || epoch.aborted) return;
        epoch.failure = this.#failure(stage, error, item);
        this.#abort(epoch, epoch.failure);
      },
    };
  }

  #failure(stage: Stage, error: unknown, item?: string): PipelineFailure {
    const counts = this.#stages.map((s) => ({ stage: s.name, tasksIn: s.tasksIn, failed: s.failed }));
    const errors = this.#stages.flatMap((s) => s.errors);
    const what = stage.kind === "source"
      ? `the source "${stage.name}" threw: ${errorText(error)}`
      : `stage "${stage.name}" exceeded its maxFailures (${stage.failed} of ${stage.tasksIn} tasks failed; ` +
        `last: ${item === undefined ? "" : `on ${item}: `}${errorText(error, item)})`;
    return new PipelineFailure(`pipeline failed: ${what}`, counts, errors, { cause: error });
  }

  #watchSignal(epoch: Epoch): void {
    const signal = this.#opts.signal;
    if (signal === undefined) return;
    if (signal.aborted) {
      epoch.aborted = true;
      epoch.reason = signal.reason;
      return;
    }
    epoch.onSignal = () => this.#abort(epoch, signal.reason);
    signal.addEventListener("abort", epoch.onSignal, { once: true });
  }

  #abort(epoch: Epoch, reason: unknown): void {
    if (epoch.aborted) return;
    epoch.aborted = true;
    epoch.reason = reason;
    epoch.ac.abort(reason);
    for (const q of epoch.queues) this.#discarded += q.abort().length;
    // Tasks running in Workers end when their Workers are terminated.
    void this.#closeExecutors();
  }

  async #next(epoch: Epoch): Promise<IteratorResult<T>> {
    if (!epoch.aborted) {
      const sink = epoch.queues[epoch.queues.length - 1];
      let x = sink.tryGet();
      if (x === EMPTY) x = await sink.get();
      if (x !== CLOSED) {
        this.#consumed++;
        return { done: false, value: x as T };
      }
    }
    await this.#finish(epoch, false);
    if (epoch.failure !== undefined) throw epoch.failure;
    if (epoch.aborted && epoch.reason !== undefined) throw epoch.reason;
    return { done: true, value: undefined };
  }

  #finish(epoch: Epoch, cancel: boolean): Promise<void> {
    if (cancel && epoch.finishing === undefined) this.#abort(epoch, undefined);
    epoch.finishing ??= this.#settle(epoch);
    return epoch.finishing;
  }

  async #settle(epoch: Epoch): Promise<void> {
    this.#stopTimers();
    if (epoch.onSignal !== undefined) this.#opts.signal?.removeEventListener("abort", epoch.onSignal);
    await Promise.all(epoch.runs);
    if (epoch.aborted || !this.#continuous) await this.#closeExecutors();
    this.#activeMs += this.#clock.now() - epoch.t0;
    this.#epoch = undefined;
    this.#stalls.end();
    this.#tracer?.write();
    this.#hooks.report(() => this.stats(), true);
  }

  async #closeExecutors(): Promise<void> {
    const seen = new Set<Executor>();
    for (const s of this.#stages) if (s.spec.kind === "pipe") seen.add(s.spec.executor);
    await Promise.all([...seen].map((e) => e.close()));
  }

  // ---- what runs beside an epoch: reports, the stall watch, the auto-concurrency controller --------------

  #startTimers(): void {
    this.#hooks.startReports(() => this.stats());
    this.#stalls.start();
    if (this.#stages.some((s) => s.auto)) this.#controller.start();
  }

  #stopTimers(): void {
    this.#hooks.stopReports();
    this.#stalls.stop();
    this.#controller.stop();
  }
}
