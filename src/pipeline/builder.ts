/**
 * `PipelineBuilder`: describes a pipeline stage by stage (source → pipe/aggregate/disaggregate … → sink) and
 * builds a {@link Pipeline}. Each call returns a builder typed by the items flowing at that point.
 * @module
 */

import { InvalidArgumentError } from "../errors.ts";
import { checkOption, resolveTable, tsVocabulary } from "../options.ts";
import { type Executor, mainThread, type TaskContext } from "./executor.ts";
import { AUTO_CONCURRENCY_OPTIONS } from "./auto_policy.ts";
import { type BuildOptions, Pipeline, type ResolvedBuildOptions, type SinkOptions } from "./pipeline.ts";
import { REPORT_INTERVAL_OPTION } from "./hooks.ts";
import {
  DEFAULT_MAX_FAILURES,
  MAX_FAILURES_OPTION,
  type MaxFailures,
  type PipeSpec,
  type StageSpec,
} from "./stage.ts";
import type { StageBound } from "./stats.ts";

/** Options of `addSource`. */
export interface SourceOptions {
  /** Stage name in stats (default `"source"`). */
  name?: string;
  /** Re-iterate the source for each epoch (each `for await` over the pipeline); default false. */
  continuous?: boolean;
}

/** Default bound for `maxConcurrency`. */
const DEFAULT_MAX_CONCURRENCY = 64;

/** Options of `pipe`. */
export interface PipeOptions {
  /**
   * Tasks run at once (default: the executor's `size`, 1 on the main thread), changeable while running. `"auto"`
   * hands it to the pipeline's auto-concurrency controller, which starts at 1 and finds the value that gives the
   * most throughput (see `BuildOptions.autoConcurrency`). A `WorkerPool` executor grows to fit
   * (`WorkerPool.reserve`).
   */
  concurrency?: number | "auto";
  /** The most tasks the controller may run at once (default 64; `"cpu"` stages also share the CPU budget). */
  maxConcurrency?: number;
  /**
   * What limits the stage's useful concurrency, for the controller: `"cpu"` (it computes: Workers, synchronous
   * FFI; such stages share the machine's cores) or `"io"` (it mostly waits: network, disk, a subprocess).
   * Default: `"cpu"` with an executor other than the main thread, else `"io"`.
   */
  bound?: StageBound;
  /** Stage name in stats (default: the function's or export's name, else `pipe<N>`). */
  name?: string;
  /**
   * Emit outputs in input order (default false: completion order). A finished task frees its slot at once; its
   * output waits in a reorder buffer (at most `2 × concurrency + 2` tasks between admission and emission, so a
   * slow task cannot make it grow without bound). An async-iterable output keeps its slot until it is streamed
   * out in its turn, so an ordered stage's generator bodies run one at a time.
   */
  ordered?: boolean;
  /** Where tasks run (default: the main thread). A `WorkerPool` runs the export named by a string `fn`. */
  executor?: Executor;
  /** Failure budget before the pipeline ends with `PipelineFailure` (default `{ rate: 0.5, after: 20 }`). */
  maxFailures?: MaxFailures;
}

/** Options of `aggregate`. */
export interface AggregateOptions {
  /** Stage name in stats (default `aggregate<N>`). */
  name?: string;
  /** Drop a last batch shorter than `n` (counted as dropped) instead of emitting it. Default false. */
  dropLast?: boolean;
}

/** The output type of a stage function: async iterables stream their elements, `undefined` drops. */
export type Output<R> = R extends AsyncIterable<infer V> ? V : Exclude<Awaited<R>, undefined>;

/** Builds a pipeline stage by stage; `T` is the type of the items at the current end. */
export class PipelineBuilder<T = never> {
  readonly #specs: StageSpec[];

  /**
   * Starts an empty description; the first call must be `addSource`.
   * @param specs the stages described so far, source first (each call passes them on to the builder it
   *   returns; leave it out to start empty)
   */
  constructor(specs: StageSpec[] = []) {
    this.#specs = specs;
  }

  /**
   * The source: pulled only as fast as the pipeline drains.
   * @param source any `Iterable` or `AsyncIterable` (an array, a generator, a stream of records)
   * @param opts the stage's name in stats, and whether each epoch iterates the source again (`continuous`)
   * @returns a builder whose items are the source's
   * @throws {InvalidArgumentError} when the builder has a source already, or `source` is null or a primitive
   */
  addSource<U>(source: Iterable<U> | AsyncIterable<U>, opts: SourceOptions = {}): PipelineBuilder<U> {
    if (this.#specs.length > 0) {
      throw new InvalidArgumentError("addSource must be the first stage, and only once");
    }
    if (source === null || typeof source !== "object" && typeof source !== "function") {
      throw new InvalidArgumentError("addSource needs an Iterable or AsyncIterable");
    }
    return this.#with<U>({
      kind: "source",
      name: opts.name ?? "source",
      source,
      continuous: opts.continuous ?? false,
    });
  }

  /**
   * A stage that maps each item with `fn` (sync, async, or an async generator yielding many outputs; returning
   * `undefined` drops the item). With a `WorkerPool` executor, `fn` is the name of an export of the pool's module.
   * @param fn the function, given each item and its task's context (stage name, abort signal)
   * @param opts the stage's concurrency (tasks at once, or `"auto"`), executor, order, failure budget and name
   * @returns a builder whose items are `fn`'s outputs (an async iterable's elements; `undefined` dropped)
   * @throws {InvalidArgumentError} before `addSource`, or for an option out of range (naming it)
   */
  pipe<R>(fn: (item: T, ctx: TaskContext) => R, opts?: PipeOptions): PipelineBuilder<Output<R>>;
  /**
   * A stage that runs an export of the module of `opts.executor` (a `WorkerPool`) on each item.
   * @param exportName the export's name
   * @param opts the stage's options, with the executor that runs the export
   * @returns a builder whose items are the export's results
   * @throws {InvalidArgumentError} before `addSource`, or for an option out of range (naming it)
   */
  pipe<U = unknown>(exportName: string, opts: PipeOptions & { executor: Executor }): PipelineBuilder<U>;
  /**
   * Implementation of the two overloads above.
   * @param fn the function, or the export's name
   * @param opts the stage's options
   * @returns a builder with the stage added
   * @throws {InvalidArgumentError} before `addSource`, or for an option out of range (naming it)
   */
  pipe(
    fn: ((item: T, ctx: TaskContext) => unknown) | string,
    opts: PipeOptions = {},
  ): PipelineBuilder<unknown> {
    this.#needSource("pipe");
    return this.#with(resolvePipeOptions(fn, opts, this.#specs.length));
  }

  /**
   * A stage that flattens each incoming array (or iterable) into its elements.
   * @param opts the stage's name in stats (default `disaggregate<N>`)
   * @returns a builder whose items are the elements
   * @throws {InvalidArgumentError} before `addSource`
   */
  disaggregate(opts: { name?: string } = {}): PipelineBuilder<T extends Iterable<infer E> ? E : unknown> {
    this.#needSource("disaggregate");
    return this.#with({ kind: "disaggregate", name: opts.name ?? `disaggregate${this.#specs.length}` });
  }

  /**
   * A stage that groups items into arrays; the last batch may be shorter unless `dropLast`.
   * @param n the items in each array
   * @param opts the stage's name in stats, and whether a short last batch is dropped (`dropLast`)
   * @returns a builder whose items are the arrays
   * @throws {InvalidArgumentError} before `addSource`, or when `n` is not a positive integer
   */
  aggregate(n: number, opts: AggregateOptions = {}): PipelineBuilder<T[]> {
    this.#needSource("aggregate");
    if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError(`aggregate: n must be >= 1, got ${n}`);
    return this.#with({
      kind: "aggregate",
      name: opts.name ?? `aggregate${this.#specs.length}`,
      size: n,
      dropLast: opts.dropLast ?? false,
    });
  }

  /**
   * Sets the sink: the queue the consumer reads from. Optional before `build`.
   * @param opts the items the sink buffers for the consumer (`bufferSize`, default 3)
   * @returns the builder's last step, where only `build` remains
   * @throws {InvalidArgumentError} before `addSource`, or when `bufferSize` is not a positive integer
   */
  addSink(opts: SinkOptions = {}): SinkBuilder<T> {
    this.#needSource("addSink");
    const size = opts.bufferSize ?? 3;
    if (!Number.isInteger(size) || size < 1) {
      throw new InvalidArgumentError(`addSink: bufferSize must be a positive integer, got ${size}`);
    }
    return new SinkBuilder<T>(this.#specs, { bufferSize: size });
  }

  /**
   * Builds with a default sink (3 items); nothing runs until the pipeline is iterated.
   * @param opts the pipeline's hooks, report interval (ms), signal, trace file, log, stall threshold (ms),
   *   auto-concurrency tuning and clock
   * @returns the pipeline
   * @throws {InvalidArgumentError} before `addSource`, or for an option out of range (naming it)
   */
  build(opts: BuildOptions = {}): Pipeline<T> {
    return this.addSink().build(opts);
  }

  #needSource(what: string): void {
    if (this.#specs.length === 0) throw new InvalidArgumentError(`${what}: call addSource first`);
  }

  #with<U>(spec: StageSpec): PipelineBuilder<U> {
    if (this.#specs.some((s) => s.name === spec.name)) {
      spec = { ...spec, name: uniqueName(this.#specs, spec.name) };
    }
    return new PipelineBuilder<U>([...this.#specs, spec]);
  }
}

/** The builder after `addSink`: only `build` remains. */
export class SinkBuilder<T> {
  readonly #specs: StageSpec[];
  readonly #sink: SinkOptions;

  /**
   * Use `PipelineBuilder.addSink`.
   * @param specs the stages described, source first
   * @param sink the sink's options, checked
   */
  constructor(specs: StageSpec[], sink: SinkOptions) {
    this.#specs = specs;
    this.#sink = sink;
  }

  /**
   * Builds the pipeline; nothing runs until it is iterated. Options are checked here, unless they were resolved
   * at a door already ({@link resolvedBuildOptions}).
   * @param opts the pipeline's hooks, report interval (ms), signal, trace file, log, stall threshold (ms),
   *   auto-concurrency tuning and clock
   * @returns the pipeline
   * @throws {InvalidArgumentError} for an option out of range
   */
  build(opts: BuildOptions = {}): Pipeline<T> {
    const resolved = RESOLVED_BUILDS.has(opts) ? opts as ResolvedBuildOptions : resolveBuildOptions(opts);
    return new Pipeline<T>(this.#specs, this.#sink, resolved);
  }
}

/** Options {@link resolvedBuildOptions} vouched for. */
const RESOLVED_BUILDS = new WeakSet<object>();

const BUILD_WORDS = tsVocabulary("build: ");

/**
 * The door of `build()`'s options: checks them and applies the defaults (the controller's `cpuBudget`: the
 * cores). Throws `InvalidArgumentError` naming the option.
 */
export function resolveBuildOptions(opts: BuildOptions): ResolvedBuildOptions {
  if (opts.reportInterval !== undefined) {
    checkOption(REPORT_INTERVAL_OPTION, opts.reportInterval, BUILD_WORDS, "reportInterval");
  }
  if (opts.stallThresholdMs !== undefined && !(opts.stallThresholdMs > 0)) {
    throw new InvalidArgumentError(`build: stallThresholdMs must be > 0 ms, got ${opts.stallThresholdMs}`);
  }
  const auto = resolveTable(
    AUTO_CONCURRENCY_OPTIONS,
    opts.autoConcurrency ?? {},
    BUILD_WORDS,
    "autoConcurrency",
  );
  return {
    ...opts,
    autoConcurrency: { ...auto, cpuBudget: auto.cpuBudget ?? navigator.hardwareConcurrency ?? 1 },
  };
}

/**
 * Options resolved at another door (the loader's, whose table holds these): `build()` takes them as they are,
 * unchecked.
 */
export function resolvedBuildOptions(opts: ResolvedBuildOptions): ResolvedBuildOptions {
  RESOLVED_BUILDS.add(opts);
  return opts;
}

const PIPE_WORDS = tsVocabulary("pipe: ");

/**
 * The door of a `pipe()` stage's options: checks them and applies the defaults; the stage's spec. Throws
 * `InvalidArgumentError` naming the option.
 * @param fn the stage function, or the export an executor runs
 * @param stages stages before this one (its default name)
 */
export function resolvePipeOptions(
  fn: ((item: never, ctx: TaskContext) => unknown) | string,
  opts: PipeOptions,
  stages: number,
): PipeSpec {
  const executor = opts.executor ?? mainThread;
  if (typeof fn === "string" && opts.executor === undefined) {
    throw new InvalidArgumentError(`pipe("${fn}"): an export name needs an executor such as a WorkerPool`);
  }
  const auto = opts.concurrency === "auto";
  const concurrency = auto ? 1 : opts.concurrency ?? executor.size;
  if (!Number.isInteger(concurrency) || (concurrency as number) < 1) {
    throw new InvalidArgumentError(
      `pipe: concurrency must be a positive integer or "auto", got ${opts.concurrency}`,
    );
  }
  const maxConcurrency = opts.maxConcurrency ?? Math.max(DEFAULT_MAX_CONCURRENCY, concurrency as number);
  if (!Number.isInteger(maxConcurrency) || maxConcurrency < 1) {
    throw new InvalidArgumentError(
      `pipe: maxConcurrency must be a positive integer, got ${maxConcurrency}`,
    );
  }
  if (opts.bound !== undefined && opts.bound !== "cpu" && opts.bound !== "io") {
    throw new InvalidArgumentError(`pipe: bound must be "cpu" or "io", got ${opts.bound}`);
  }
  if (opts.maxFailures !== undefined) {
    checkOption(MAX_FAILURES_OPTION, opts.maxFailures, PIPE_WORDS, "maxFailures");
  }
  const fnName = typeof fn === "string" ? fn : fn.name;
  return {
    kind: "pipe",
    name: opts.name ?? (fnName || `pipe${stages}`),
    fn: fn as PipeSpec["fn"],
    executor,
    concurrency: concurrency as number,
    auto,
    maxConcurrency,
    bound: opts.bound ?? (executor === mainThread ? "io" : "cpu"),
    ordered: opts.ordered ?? false,
    maxFailures: opts.maxFailures ?? DEFAULT_MAX_FAILURES,
  };
}

function uniqueName(specs: StageSpec[], name: string): string {
  for (let i = 2;; i++) {
    const candidate = `${name}#${i}`;
    if (!specs.some((s) => s.name === candidate)) return candidate;
  }
}
