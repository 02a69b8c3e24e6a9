/**
 * A built pipeline: iterate it (`for await`) to run one epoch (one pass over the source); read `stats()` at
 * any time; change a stage's concurrency while it runs through `stage(name).setConcurrency(n)` (or hand it to the
 * auto-concurrency controller with `"auto"`); `stop()` it (or `await using` it) to cancel in-flight work and
 * terminate Workers. Stats and events leave through hooks (`hooks.ts`); a stage with work running and no progress
 * for `stallThresholdMs` is reported as stalled.
 * @module
 */

import { errorText, InvalidArgumentError, PipelineFailure, PipelineStoppedError } from "../errors.ts";
import type { OptionSpec } from "../options.ts";
import { AutoController, type ControllerStats } from "./auto_controller.ts";
import { type AutoConcurrencyOptions, autoConfig, type Sample, type StageSample } from "./auto_policy.ts";
import { bottleneckIndex, type Load, loadScore } from "./bottleneck.ts";
import { type Clock, realClock } from "./clock.ts";
import type { Executor } from "./executor.ts";
import { envStatsJsonl, HookSet, jsonlStatsHook, type PipelineHook } from "./hooks.ts";
import { BoundedQueue, CLOSED, EMPTY, QUEUE_SLACK, type QueueCounters } from "./queue.ts";
import { RUNNERS } from "./runners.ts";
import { type RunContext, Stage, type StageBound, type StageKind, type StageSpec } from "./stage.ts";
import { Tracer } from "./trace.ts";

/** Statistics of one stage (cumulative over epochs; queue figures are for the current or last epoch). */
export interface StageStats {
  /** The stage's name (`"(consumer)"` for the code iterating the pipeline). */
  name: string;
  /** What kind of stage it is; `"consumer"` for the last row. */
  kind: StageKind | "consumer";
  /** Tasks it may run at once now. */
  concurrency: number;
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

/** Options of the sink, the queue between the last stage and the consumer. */
export interface SinkOptions {
  /** Items buffered for the consumer (default 3). */
  bufferSize?: number;
}

/** `reportInterval`, declared once (the pipeline's, the loader's). */
export const REPORT_INTERVAL_OPTION = {
  kind: "number",
  above: 0,
  default: 10_000,
  doc: "milliseconds between reports while an epoch runs",
} as const satisfies OptionSpec;

/** Options of `build()`. */
export interface BuildOptions {
  /** Milliseconds between reports to the hooks (`onReport`, JSONL lines) while an epoch runs (default 10000). */
  reportInterval?: number;
  /** Called with fresh stats every `reportInterval` ms while running, and once when an epoch ends. */
  onReport?: (stats: PipelineStats) => void;
  /** Receivers of stats and events (stalls, concurrency changes); see `jsonlStatsHook`. */
  hooks?: PipelineHook[];
  /** Aborting it stops the pipeline; the `for await` then throws the signal's reason. */
  signal?: AbortSignal;
  /** Writes a Chrome trace-event JSON file (Perfetto, chrome://tracing) at the end of each epoch. */
  trace?: string;
  /** Where failure, stall and controller log lines go (default `console.error`). */
  log?: (message: string) => void;
  /** JSONL file appended with one stats line per report (default: the `SLUICE_STATS_JSONL` env variable). */
  statsJsonl?: string;
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

/** What a running stage lets a controller (a tuner) do. */
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
}

/** Name of the consumer row in stats. */
const CONSUMER = "(consumer)";
const DEFAULT_STALL_MS = 30_000;

interface Epoch {
  readonly ac: AbortController;
  readonly queues: BoundedQueue<unknown>[];
  runs: Promise<void>[];
  readonly t0: number;
  failure: unknown;
  reason: unknown;
  aborted: boolean;
  finishing: Promise<void> | undefined;
  reportTimer: unknown;
  stallTimer: unknown;
  onSignal: (() => void) | undefined;
}

/** A built pipeline. Create with `PipelineBuilder`. */
export class Pipeline<T> implements AsyncIterable<T>, AsyncDisposable {
  readonly #stages: Stage[];
  readonly #bufferSize: number;
  readonly #opts: BuildOptions;
  readonly #continuous: boolean;
  readonly #tracer: Tracer | undefined;
  readonly #clock: Clock;
  readonly #log: (message: string) => void;
  readonly #hooks: HookSet;
  readonly #stallMs: number;
  readonly #controller: AutoController;
  /** Stages stalled now, with the time their stall was reported. */
  readonly #stalled = new Map<Stage, number>();
  #epoch: Epoch | undefined;
  #lastQueues: BoundedQueue<unknown>[] = [];
  /** The queue counters of the epochs before the current one, summed per queue (the controller's windows span epochs). */
  #pastQueues: Pick<QueueCounters, "putWaitMs" | "getWaitMs" | "elapsedMs" | "itemMs">[] = [];
  #epochs = 0;
  #activeMs = 0;
  #consumed = 0;
  #discarded = 0;
  #stopped = false;

  /** Use `PipelineBuilder.build()`. */
  constructor(specs: StageSpec[], sink: SinkOptions, opts: BuildOptions) {
    this.#stages = specs.map((s) => new Stage(s));
    this.#bufferSize = sink.bufferSize ?? 3;
    this.#opts = opts;
    this.#continuous = specs[0].kind === "source" && specs[0].continuous;
    this.#tracer = opts.trace === undefined ? undefined : new Tracer(opts.trace);
    this.#clock = opts.clock ?? realClock;
    this.#log = opts.log ?? ((m: string) => console.error(m));
    this.#stallMs = opts.stallThresholdMs ?? DEFAULT_STALL_MS;
    const hooks = [...opts.hooks ?? []];
    const onReport = opts.onReport;
    if (onReport !== undefined) hooks.push({ report: (s) => onReport(s) });
    const jsonl = opts.statsJsonl ?? envStatsJsonl();
    if (jsonl !== undefined) hooks.push(jsonlStatsHook(jsonl));
    this.#hooks = new HookSet(hooks, this.#log);
    this.#controller = new AutoController(
      autoConfig(opts.autoConcurrency),
      this.#clock,
      () => this.#sample(),
      (name, to, reason) => this.#adjust(name, to, reason),
      () => this.#stages.filter((s) => s.auto).map((s) => s.name),
    );
    const startController = () => {
      if (this.#epoch !== undefined && !this.#epoch.aborted) this.#controller.start();
    };
    for (const s of this.#stages) s.onAuto = startController;
  }

  /** The stages, source first. */
  get stages(): readonly StageControl[] {
    return this.#stages;
  }

  /** The stage called `name`; throws if there is none. Use it to change concurrency while running. */
  stage(name: string): StageControl {
    const s = this.#stages.find((x) => x.name === name);
    if (s === undefined) {
      const names = this.#stages.map((x) => x.name).join(", ");
      throw new InvalidArgumentError(`no stage named "${name}" (stages: ${names})`);
    }
    return s;
  }

  /** Runs one epoch: one pass over the source (again for each `for await` when the source is `continuous`). */
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

  /** Current statistics; cheap enough to poll (a few small objects, no per-item state). */
  stats(): PipelineStats {
    const epoch = this.#epoch;
    const now = this.#clock.now();
    const elapsedMs = this.#activeMs + (epoch === undefined ? 0 : now - epoch.t0);
    const queues = epoch?.queues ?? this.#lastQueues;
    const counters = queues.map((q) => q.counters());
    const rows = this.#stages.map((s, i) =>
      this.#stageStats(s, counters[i - 1], counters[i], elapsedMs, now)
    );
    rows.push(this.#consumerStats(counters[counters.length - 1], elapsedMs));
    const b = bottleneckIndex(rows.map(rowLoad));
    return {
      elapsedMs,
      epochs: this.#epochs,
      running: epoch !== undefined,
      consumed: this.#consumed,
      discarded: this.#discarded,
      stages: rows,
      bottleneck: b < 0 ? null : rows[b].name,
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
      reportTimer: undefined,
      stallTimer: undefined,
      onSignal: undefined,
    };
    this.#epoch = epoch;
    this.#epochs++;
    this.#addPastQueues();
    this.#lastQueues = queues;
    this.#watchSignal(epoch);
    if (epoch.aborted) return epoch;
    const ctx = this.#runContext(epoch);
    epoch.runs = this.#stages.map((s, i) =>
      s.run(i === 0 ? undefined : queues[i - 1], queues[i], ctx, RUNNERS[s.spec.kind])
    );
    this.#startTimers(epoch);
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
      fail: (stage, error) => {
        if (epoch.failure !== undefined || epoch.aborted) return;
        epoch.failure = this.#failure(stage, error);
        this.#abort(epoch, epoch.failure);
      },
    };
  }

  #failure(stage: Stage, error: unknown): PipelineFailure {
    const counts = this.#stages.map((s) => ({ stage: s.name, tasksIn: s.tasksIn, failed: s.failed }));
    const errors = this.#stages.flatMap((s) => s.errors);
    const what = stage.kind === "source"
      ? `the source "${stage.name}" threw: ${errorText(error)}`
      : `stage "${stage.name}" exceeded its maxFailures (${stage.failed} of ${stage.tasksIn} tasks failed; ` +
        `last: ${errorText(error)})`;
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
    this.#stopTimers(epoch);
    if (epoch.onSignal !== undefined) this.#opts.signal?.removeEventListener("abort", epoch.onSignal);
    await Promise.all(epoch.runs);
    if (epoch.aborted || !this.#continuous) await this.#closeExecutors();
    this.#activeMs += this.#clock.now() - epoch.t0;
    this.#epoch = undefined;
    this.#watchStalls(); // stalled stages that ended with the epoch made progress
    this.#stalled.clear();
    this.#tracer?.write();
    this.#hooks.report(() => this.stats(), true);
  }

  async #closeExecutors(): Promise<void> {
    const seen = new Set<Executor>();
    for (const s of this.#stages) if (s.spec.kind === "pipe") seen.add(s.spec.executor);
    await Promise.all([...seen].map((e) => e.close()));
  }

  // ---- timers: reports, stall watch, auto concurrency -------------------------------------------------------

  #startTimers(epoch: Epoch): void {
    const clock = this.#clock;
    if (this.#hooks.reporting) {
      const every = this.#opts.reportInterval ?? REPORT_INTERVAL_OPTION.default;
      const report = () => {
        this.#hooks.report(() => this.stats(), false);
        epoch.reportTimer = clock.setTimer(report, every);
      };
      epoch.reportTimer = clock.setTimer(report, every);
    }
    const watchEvery = Math.max(10, Math.min(1000, this.#stallMs / 4));
    const watch = () => {
      this.#watchStalls();
      epoch.stallTimer = clock.setTimer(watch, watchEvery);
    };
    epoch.stallTimer = clock.setTimer(watch, watchEvery);
    if (this.#stages.some((s) => s.auto)) this.#controller.start();
  }

  #stopTimers(epoch: Epoch): void {
    if (epoch.reportTimer !== undefined) this.#clock.clearTimer(epoch.reportTimer);
    if (epoch.stallTimer !== undefined) this.#clock.clearTimer(epoch.stallTimer);
    epoch.reportTimer = undefined;
    epoch.stallTimer = undefined;
    this.#controller.stop();
  }

  /** Reports each stage whose work made no progress for longer than the threshold (once per stall), and recoveries. */
  #watchStalls(): void {
    const now = this.#clock.now();
    for (const s of this.#stages) {
      const idle = s.noProgressMs(now);
      const since = this.#stalled.get(s);
      if (idle >= this.#stallMs && since === undefined) {
        this.#stalled.set(s, now - idle);
        s.stalls++;
        const running = s.kind === "source" ? "waiting on its iterator" : `${s.inFlight} task(s) running`;
        this.#log(
          `sluice pipeline: stage "${s.name}" stalled: no progress for ${secs(idle)} (${running})`,
        );
        this.#hooks.event({ type: "stall", stage: s.name, noProgressMs: idle, inFlight: s.inFlight });
      } else if (idle < this.#stallMs && since !== undefined) {
        this.#stalled.delete(s);
        const stalledMs = now - idle - since;
        this.#log(`sluice pipeline: stage "${s.name}" made progress again after ${secs(stalledMs)}`);
        this.#hooks.event({ type: "resume", stage: s.name, stalledMs });
      }
    }
  }

  #adjust(name: string, to: number, reason: string): void {
    const s = this.#stages.find((x) => x.name === name);
    if (s === undefined || !s.auto || s.concurrency === to) return;
    const from = s.concurrency;
    s.adjust(to);
    this.#hooks.event({ type: "concurrency", stage: name, from, to, reason });
  }

  /** Adds the last epoch's queue counters to those of the epochs before it. */
  #addPastQueues(): void {
    this.#lastQueues.forEach((q, i) => {
      const c = q.counters(),
        p = this.#pastQueues[i] ??= { putWaitMs: 0, getWaitMs: 0, elapsedMs: 0, itemMs: 0 };
      p.putWaitMs += c.putWaitMs;
      p.getWaitMs += c.getWaitMs;
      p.elapsedMs += c.elapsedMs;
      p.itemMs += c.itemMs;
    });
  }

  /** Every stage's counters now, cumulative over the epochs (each epoch has new queues), for the controller. */
  #sample(): Sample {
    const now = this.#clock.now();
    const queues = this.#epoch?.queues ?? this.#lastQueues;
    const counters = queues.map((q, i) => {
      const c = q.counters(), p = this.#pastQueues[i];
      return p === undefined ? c : {
        ...c,
        putWaitMs: c.putWaitMs + p.putWaitMs,
        getWaitMs: c.getWaitMs + p.getWaitMs,
        elapsedMs: c.elapsedMs + p.elapsedMs,
        itemMs: c.itemMs + p.itemMs,
      };
    });
    const stages: StageSample[] = this.#stages.map((s, i) => {
      const slotMs = s.slotMs(now);
      const input = i === 0 ? undefined : counters[i - 1];
      return {
        name: s.name,
        auto: s.auto,
        concurrency: s.concurrency,
        maxConcurrency: s.maxConcurrency,
        bound: s.bound,
        finished: s.done + s.dropped + s.failed,
        busyMs: s.busyMs(now),
        slotMs,
        blockedMs: counters[i].putWaitMs,
        inputItemMs: input === undefined ? slotMs : input.itemMs,
        inputCapacity: input === undefined ? 1 : input.capacity,
      };
    });
    const sink = counters[counters.length - 1];
    stages.push({
      name: CONSUMER,
      auto: false,
      concurrency: 1,
      maxConcurrency: 1,
      bound: undefined,
      finished: this.#consumed,
      busyMs: sink.elapsedMs - sink.getWaitMs,
      slotMs: sink.elapsedMs,
      blockedMs: 0,
      inputItemMs: sink.itemMs,
      inputCapacity: sink.capacity,
    });
    return { t: now, stages };
  }

  // ---- stats rows -----------------------------------------------------------------------------------------

  #stageStats(
    s: Stage,
    input: QueueCounters | undefined,
    output: QueueCounters | undefined,
    elapsedMs: number,
    now: number,
  ): StageStats {
    const lat = s.latency;
    const slotMs = s.slotMs(now);
    const utilization = slotMs > 0 ? Math.min(1, s.busyMs(now) / slotMs) : 0;
    const inputFill = input === undefined ? 1 : input.meanOccupancy / input.capacity;
    const blockedPutMs = output?.putWaitMs ?? 0;
    const blockedFraction = slotMs > 0 ? Math.min(1, blockedPutMs / slotMs) : 0;
    const idle = s.noProgressMs(now);
    return {
      name: s.name,
      kind: s.kind,
      concurrency: s.concurrency,
      auto: s.auto,
      bound: s.bound ?? null,
      ordered: s.ordered,
      tasksIn: s.tasksIn,
      done: s.done,
      dropped: s.dropped,
      failed: s.failed,
      cancelled: s.cancelled,
      inFlight: s.inFlight,
      held: s.held,
      itemsOut: s.itemsOut,
      p50Ms: lat.quantile(0.5),
      p90Ms: lat.quantile(0.9),
      p99Ms: lat.quantile(0.99),
      meanMs: lat.mean,
      utilization,
      input: input ?? null,
      blockedPutMs,
      blockedFraction,
      starvedMs: input?.getWaitMs ?? 0,
      itemsPerSec: rate(s.itemsOut, elapsedMs),
      pressure: loadScore({ busy: utilization, blocked: blockedFraction, inputFill }),
      stalledMs: idle >= this.#stallMs ? idle : 0,
      stalls: s.stalls,
    };
  }

  #consumerStats(sink: QueueCounters | undefined, elapsedMs: number): StageStats {
    const utilization = sink === undefined || sink.elapsedMs <= 0
      ? 0
      : Math.max(0, 1 - sink.getWaitMs / sink.elapsedMs);
    const inputFill = sink === undefined ? 0 : sink.meanOccupancy / sink.capacity;
    return {
      name: CONSUMER,
      kind: "consumer",
      concurrency: 1,
      auto: false,
      bound: null,
      ordered: true,
      tasksIn: this.#consumed,
      done: this.#consumed,
      dropped: 0,
      failed: 0,
      cancelled: 0,
      inFlight: 0,
      held: 0,
      itemsOut: this.#consumed,
      p50Ms: 0,
      p90Ms: 0,
      p99Ms: 0,
      meanMs: 0,
      utilization,
      input: sink ?? null,
      blockedPutMs: 0,
      blockedFraction: 0,
      starvedMs: sink?.getWaitMs ?? 0,
      itemsPerSec: rate(this.#consumed, elapsedMs),
      pressure: loadScore({ busy: utilization, blocked: 0, inputFill }),
      stalledMs: 0,
      stalls: 0,
    };
  }
}

function rowLoad(r: StageStats): Load {
  return {
    busy: r.utilization,
    blocked: r.blockedFraction,
    inputFill: r.input === null ? 1 : r.input.meanOccupancy / r.input.capacity,
  };
}

function rate(n: number, ms: number): number {
  return ms > 0 ? n / (ms / 1000) : 0;
}

function secs(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}
