/**
 * A built pipeline: iterate it (`for await`) to run one epoch (one pass over the source); read `stats()` at
 * any time; change a stage's concurrency while it runs through `stage(name).setConcurrency(n)`; `stop()` it
 * (or `await using` it) to cancel in-flight work and terminate Workers.
 * @module
 */

import { errorText, InvalidArgumentError, PipelineFailure, PipelineStoppedError } from "../errors.ts";
import type { Executor } from "./executor.ts";
import { BoundedQueue, CLOSED, EMPTY, type QueueCounters } from "./queue.ts";
import { type RunContext, Stage, type StageKind, type StageSpec } from "./stage.ts";
import { Tracer } from "./trace.ts";

/** Statistics of one stage (cumulative over epochs; queue figures are for the current or last epoch). */
export interface StageStats {
  name: string;
  kind: StageKind | "consumer";
  concurrency: number;
  ordered: boolean;
  /** Tasks admitted. Invariant: `tasksIn = done + dropped + failed + cancelled + inFlight + held`. */
  tasksIn: number;
  done: number;
  dropped: number;
  failed: number;
  cancelled: number;
  inFlight: number;
  held: number;
  /** Items put on the output queue (differs from `done` for generators, aggregate, disaggregate). */
  itemsOut: number;
  /** Task compute time percentiles and mean, milliseconds (time blocked on a full output queue excluded). */
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  meanMs: number;
  /** Compute time / (wall time × concurrency): near 1 means the stage's slots are always busy. */
  utilization: number;
  /** The input queue (null for the source). */
  input: QueueCounters | null;
  /** Time spent waiting on a full output queue (backpressure), summed over tasks, ms. */
  blockedPutMs: number;
  /** Time spent waiting on an empty input queue (starved), ms. */
  starvedMs: number;
  /** Output items per second of pipeline running time. */
  itemsPerSec: number;
  /** How much this stage looks like the bottleneck: input-queue-full fraction + output-queue-empty fraction. */
  pressure: number;
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
  /** Name of the likely bottleneck (its input queue full, its output queue empty), or null if none stands out. */
  bottleneck: string | null;
}

/** Options of the sink, the queue between the last stage and the consumer. */
export interface SinkOptions {
  /** Items buffered for the consumer (default 3). */
  bufferSize?: number;
}

/** Options of `build()`. */
export interface BuildOptions {
  /** Milliseconds between `onReport` calls (and JSONL lines) while an epoch runs (default 10000). */
  reportInterval?: number;
  /** Called with fresh stats every `reportInterval` ms while running, and once when an epoch ends. */
  onReport?: (stats: PipelineStats) => void;
  /** Aborting it stops the pipeline; the `for await` then throws the signal's reason. */
  signal?: AbortSignal;
  /** Writes a Chrome trace-event JSON file (Perfetto, chrome://tracing) at the end of each epoch. */
  trace?: string;
  /** Where failure log lines go (default `console.error`). */
  log?: (message: string) => void;
  /** JSONL file appended with one stats line per report (default: the `SLUICE_STATS_JSONL` env variable). */
  statsJsonl?: string;
}

/** What a running stage lets a controller (a tuner) do. */
export interface StageControl {
  readonly name: string;
  readonly kind: StageKind;
  /** Tasks the stage may run at once. */
  readonly concurrency: number;
  /** Changes the stage's concurrency, effective immediately, also while it runs. */
  setConcurrency(n: number): void;
}

/** Name of the consumer row in stats. */
export const CONSUMER = "(consumer)";
const DEFAULT_REPORT_MS = 10_000;
/** Above this pressure (max 2) a stage is named the bottleneck. */
const BOTTLENECK_PRESSURE = 1.3;

interface Epoch {
  readonly ac: AbortController;
  readonly queues: BoundedQueue<unknown>[];
  runs: Promise<void>[];
  readonly t0: number;
  failure: unknown;
  reason: unknown;
  aborted: boolean;
  finishing: Promise<void> | undefined;
  timer: ReturnType<typeof setInterval> | undefined;
  onSignal: (() => void) | undefined;
}

/** A built pipeline. Create with `PipelineBuilder`. */
export class Pipeline<T> implements AsyncIterable<T>, AsyncDisposable {
  readonly #stages: Stage[];
  readonly #bufferSize: number;
  readonly #opts: BuildOptions;
  readonly #continuous: boolean;
  readonly #tracer: Tracer | undefined;
  readonly #jsonl: string | undefined;
  #epoch: Epoch | undefined;
  #lastQueues: BoundedQueue<unknown>[] = [];
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
    this.#continuous = specs[0].continuous === true;
    this.#tracer = opts.trace === undefined ? undefined : new Tracer(opts.trace);
    this.#jsonl = opts.statsJsonl ?? envJsonl();
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
    const now = performance.now();
    const elapsedMs = this.#activeMs + (epoch === undefined ? 0 : now - epoch.t0);
    const queues = epoch?.queues ?? this.#lastQueues;
    const counters = queues.map((q) => q.counters());
    const rows = this.#stages.map((s, i) => stageStats(s, counters[i - 1], counters[i], elapsedMs));
    rows.push(this.#consumerStats(counters[counters.length - 1], elapsedMs));
    let best: StageStats | undefined;
    for (const r of rows) if (best === undefined || r.pressure > best.pressure) best = r;
    return {
      elapsedMs,
      epochs: this.#epochs,
      running: epoch !== undefined,
      consumed: this.#consumed,
      discarded: this.#discarded,
      stages: rows,
      bottleneck: best !== undefined && best.pressure >= BOTTLENECK_PRESSURE ? best.name : null,
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
      t0: performance.now(),
      failure: undefined,
      reason: undefined,
      aborted: false,
      finishing: undefined,
      timer: undefined,
      onSignal: undefined,
    };
    this.#epoch = epoch;
    this.#epochs++;
    this.#lastQueues = queues;
    this.#watchSignal(epoch);
    if (epoch.aborted) return epoch;
    const ctx = this.#runContext(epoch);
    epoch.runs = this.#stages.map((s, i) => s.run(i === 0 ? undefined : queues[i - 1], queues[i], ctx));
    this.#startReports(epoch);
    return epoch;
  }

  #makeQueues(): BoundedQueue<unknown>[] {
    const n = this.#stages.length;
    const queues: BoundedQueue<unknown>[] = [];
    for (let i = 0; i < n; i++) {
      const last = i === n - 1;
      const capacity = last ? this.#bufferSize : this.#stages[i + 1].concurrency + 2;
      const name = last ? "sink" : `${this.#stages[i + 1].name}.in`;
      const tracer = this.#tracer;
      queues.push(new BoundedQueue(capacity, tracer && ((len) => tracer.counter(name, len))));
    }
    return queues;
  }

  #runContext(epoch: Epoch): RunContext {
    const log = this.#opts.log ?? ((m: string) => console.error(m));
    return {
      signal: epoch.ac.signal,
      tracer: this.#tracer,
      log,
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
    clearInterval(epoch.timer);
    if (epoch.onSignal !== undefined) this.#opts.signal?.removeEventListener("abort", epoch.onSignal);
    await Promise.all(epoch.runs);
    for (const s of this.#stages) s.resetEpoch();
    if (epoch.aborted || !this.#continuous) await this.#closeExecutors();
    this.#activeMs += performance.now() - epoch.t0;
    this.#epoch = undefined;
    this.#tracer?.write();
    this.#report();
  }

  async #closeExecutors(): Promise<void> {
    const seen = new Set<Executor>();
    for (const s of this.#stages) seen.add(s.spec.executor);
    await Promise.all([...seen].map((e) => e.close()));
  }

  // ---- reports --------------------------------------------------------------------------------------------

  #startReports(epoch: Epoch): void {
    if (this.#opts.onReport === undefined && this.#jsonl === undefined) return;
    epoch.timer = setInterval(() => this.#report(), this.#opts.reportInterval ?? DEFAULT_REPORT_MS);
  }

  #report(): void {
    if (this.#opts.onReport === undefined && this.#jsonl === undefined) return;
    const stats = this.stats();
    this.#opts.onReport?.(stats);
    if (this.#jsonl === undefined) return;
    Deno.writeTextFileSync(this.#jsonl, JSON.stringify({ t: Date.now(), ...stats }) + "\n", { append: true });
  }

  #consumerStats(sink: QueueCounters | undefined, elapsedMs: number): StageStats {
    const inFlight = 0;
    return {
      name: CONSUMER,
      kind: "consumer",
      concurrency: 1,
      ordered: true,
      tasksIn: this.#consumed,
      done: this.#consumed,
      dropped: 0,
      failed: 0,
      cancelled: 0,
      inFlight,
      held: 0,
      itemsOut: this.#consumed,
      p50Ms: 0,
      p90Ms: 0,
      p99Ms: 0,
      meanMs: 0,
      utilization: 0,
      input: sink ?? null,
      blockedPutMs: 0,
      starvedMs: sink?.getWaitMs ?? 0,
      itemsPerSec: rate(this.#consumed, elapsedMs),
      pressure: (sink?.fullFraction ?? 0) + 1,
    };
  }
}

function stageStats(
  s: Stage,
  input: QueueCounters | undefined,
  output: QueueCounters | undefined,
  elapsedMs: number,
): StageStats {
  const lat = s.latency;
  const inputFull = s.kind === "source" ? 1 : input?.fullFraction ?? 0;
  return {
    name: s.name,
    kind: s.kind,
    concurrency: s.concurrency,
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
    utilization: elapsedMs > 0 ? Math.min(1, s.busyMs / (elapsedMs * s.concurrency)) : 0,
    input: input ?? null,
    blockedPutMs: output?.putWaitMs ?? 0,
    starvedMs: input?.getWaitMs ?? 0,
    itemsPerSec: rate(s.itemsOut, elapsedMs),
    pressure: inputFull + (output?.emptyFraction ?? 0),
  };
}

function rate(n: number, ms: number): number {
  return ms > 0 ? n / (ms / 1000) : 0;
}

function envJsonl(): string | undefined {
  try {
    return Deno.env.get("SLUICE_STATS_JSONL") || undefined;
  } catch {
    return undefined; // no --allow-env: no JSONL
  }
}
