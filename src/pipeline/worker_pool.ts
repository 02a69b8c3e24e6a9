/**
 * `WorkerPool`: an {@link Executor} that runs the exported functions of one module inside a pool of Deno Workers,
 * one task per Worker at a time. This is how synchronous FFmpeg FFI work reaches every core. Arguments and
 * results move as transferables (see `transfer.ts` for the convention). A Worker that dies mid-task fails that
 * task with {@link WorkerCrashedError} and is replaced; `close()` terminates every Worker (the pool starts new
 * ones lazily if used again). Errors thrown by an export keep their class (`serializeError` in `error_wire.ts`).
 *
 * The pool's size may change while it runs: {@link WorkerPool.resize} sets it, and each pipeline stage running
 * on the pool claims its concurrency ({@link WorkerPool.reserve}); the pool runs up to the larger of the two.
 * Workers start lazily when calls wait; shrinking retires idle Workers at once and busy ones after their task.
 *
 * A stage's task that finds every Worker busy (or one still starting) waits; the pool counts that time per stage
 * ({@link WorkerPool.waits}, {@link WorkerPool.waitMs}), and the stage does not count it as work (see
 * `wait_ledger.ts`): stages sharing a pool are judged by the Worker time they use, not by how long they queued.
 * @module
 */

import { InvalidArgumentError, PipelineStoppedError, WorkerCrashedError } from "../errors.ts";
import { deserializeError, type SerializedError } from "../error_wire.ts";
import type { Executor, PipeFn, TaskContext } from "./executor.ts";
import { collectTransferables } from "./transfer.ts";
import { WaitLedger } from "./wait_ledger.ts";
import { type Call, type CallAnswer, type SlotOwner, WorkerSlot } from "./worker_slot.ts";

/** Options of a {@link WorkerPool}. */
export interface WorkerPoolOptions {
  /**
   * Workers it may run at once (default: `navigator.hardwareConcurrency`); change it later with
   * {@link WorkerPool.resize}. Stages that claim more concurrency grow the pool ({@link WorkerPool.reserve}).
   */
  size?: number;
  /**
   * How long `close()` waits for each Worker to finish its current task and run the module's `release` export
   * before terminating it anyway (default 2000 ms).
   */
  releaseTimeoutMs?: number;
}

/** A pool of Deno Workers running the exports of one module. */
export class WorkerPool implements Executor {
  /** The module each Worker imports. */
  readonly moduleUrl: string;
  /**
   * Time the tasks of each stage waited for a free Worker (calls made through {@link run}, by its context's stage
   * name); a stage's steps may record other waits for this pool's capacity here too (thread tokens).
   */
  readonly waits: WaitLedger = new WaitLedger();
  readonly #releaseTimeoutMs: number;
  readonly #slots: WorkerSlot[] = [];
  readonly #pending: Call[] = [];
  /** Workers being retired (releasing, then terminated); `close()` waits for them. */
  readonly #retiring = new Set<Promise<void>>();
  /** The size set by the constructor or {@link resize}. */
  #base: number;
  /** Concurrency claimed per stage ({@link reserve}). */
  readonly #claims = new Map<string, number>();
  #size: number;
  #nextId = 1;
  #nextIndex = 0;
  #crashes = 0;
  /** How the pool's Workers reach it: a call's answer, a death. */
  readonly #owner: SlotOwner = {
    answered: (slot, msg) => this.#onAnswer(slot, msg),
    crashed: (slot, reason, error) => this.#crash(slot, reason, error),
  };

  /**
   * A pool for the exports of one module; no Worker starts until a call needs one.
   * @param moduleUrl the module whose exports tasks call (resolve relative paths with `import.meta.resolve`)
   * @param opts the pool's size (Workers) and how long `close()` waits for each Worker's release (ms)
   * @throws {TypeError} when `moduleUrl` is not an absolute URL
   * @throws {InvalidArgumentError} when `opts.size` is not a positive integer
   */
  constructor(moduleUrl: string | URL, opts: WorkerPoolOptions = {}) {
    this.moduleUrl = new URL(moduleUrl).href;
    this.#base = checkSize(opts.size ?? navigator.hardwareConcurrency ?? 1, "size");
    this.#size = this.#base;
    this.#releaseTimeoutMs = opts.releaseTimeoutMs ?? 2000;
  }

  /**
   * Workers the pool may run at once (the default concurrency of stages using it): the larger of the size set by
   * the constructor or {@link resize} and the largest concurrency a stage claimed ({@link reserve}).
   */
  get size(): number {
    return this.#size;
  }

  /**
   * Sets the pool's size while it runs. Growing lets waiting calls start at once (Workers start lazily);
   * shrinking retires idle Workers now and busy ones as soon as their current task finishes (running tasks are
   * never cut short), each running the module's `release` export first, as in {@link close}. The pool never runs
   * fewer Workers than a stage using it claimed ({@link reserve}).
   * @param n the pool's new size, in Workers
   * @throws {InvalidArgumentError} when `n` is not a positive integer
   */
  resize(n: number): void {
    this.#base = checkSize(n, "resize");
    this.#apply();
  }

  /**
   * A stage's claim on the pool: `stage` wants to run `n` tasks at once. Pipeline stages call it when they start
   * and whenever their concurrency changes (`setConcurrency`, the auto-concurrency controller), so raising a stage
   * above the pool's size grows the pool. Stages sharing one pool (the loader's demux and decode, in-process)
   * share its Workers first come, first served: the pool runs as many Workers as the largest claim (or the size
   * set by {@link resize}, if larger), not their sum. Give each stage its own pool to keep their Workers apart.
   * @param stage the claiming stage's name (a later claim of the same name replaces it)
   * @param n the tasks it runs at once, in Workers
   * @throws {InvalidArgumentError} when `n` is not a positive integer
   */
  reserve(stage: string, n: number): void {
    this.#claims.set(stage, checkSize(n, "reserve"));
    this.#apply();
  }

  #apply(): void {
    let size = this.#base;
    for (const n of this.#claims.values()) if (n > size) size = n;
    const grew = size > this.#size;
    this.#size = size;
    if (grew) return this.#pump();
    // Shrinking: retire idle Workers now; busy ones retire when their task ends (see #onAnswer).
    for (let i = this.#slots.length - 1; i >= 0 && this.#slots.length > size; i--) {
      if (this.#slots[i].idle) this.#retireSlot(this.#slots[i]);
    }
  }

  /** Workers that died mid-task (or while idle) and were replaced. */
  get crashes(): number {
    return this.#crashes;
  }

  /** Workers running now. */
  get workers(): number {
    return this.#slots.length;
  }

  /**
   * Calls an export of the pool's module in a free Worker (queued while all are busy).
   * @param name the export's name
   * @param args its arguments, structured-cloned into the Worker
   * @param transfer the buffers of `args` to move rather than copy (default: none; they are detached here)
   * @returns what the export returned (awaited), its buffers transferred (see `transferable`)
   * @throws what the export threw, in its own class (a `MediaError` stays one); a `TypeError` when the module
   *   has no such export (the import's error when the module failed to import); `WorkerCrashedError` when the
   *   Worker died running it; `PipelineStoppedError` when the pool closes before the call settles; a
   *   `DataCloneError` when `args` cannot be cloned or `transfer` moved
   */
  call<R = unknown>(name: string, args: unknown[] = [], transfer: Transferable[] = []): Promise<R> {
    return this.#call(name, args, transfer, undefined);
  }

  /**
   * {@link call}, counting the time it waits for a Worker (a free one, and started) as `stage`'s (when given). A
   * call still queued when `signal` aborts leaves the queue, rejected with the signal's reason (one a Worker runs
   * already finishes: its Worker cannot be interrupted).
   */
  #call<R>(
    name: string,
    args: unknown[],
    transfer: Transferable[],
    stage: string | undefined,
    signal?: AbortSignal,
  ): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const waited = stage === undefined ? undefined : this.waits.begin(stage);
      const onAbort = () => {
        const i = this.#pending.indexOf(call);
        if (i >= 0) this.#pending.splice(i, 1)[0].reject(signal!.reason);
      };
      const done = () => (waited?.(), signal?.removeEventListener("abort", onAbort));
      const call: Call = {
        id: this.#nextId++,
        name,
        args,
        transfer,
        // settling ends the wait too (a call rejected before any Worker ran it)
        resolve: (v) => (done(), resolve(v as R)),
        reject: (e) => (done(), reject(e)),
        waited,
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#pending.push(call);
      this.#pump();
    });
  }

  /**
   * How long a stage's tasks have waited for this pool: for a free Worker (or other capacity of it).
   * @param stage the stage's name, as its tasks' context gives it
   * @returns milliseconds waited, summed over its tasks (waits under way included); 0 for a stage never seen
   */
  waitMs(stage: string): number {
    return this.waits.ms(stage);
  }

  /**
   * Calls export `name` with `args` once in every Worker running now (each after its current task), e.g. to
   * read per-Worker diagnostics.
   * @param name the export's name
   * @param args its arguments, structured-cloned into each Worker (nothing is transferred)
   * @returns one result per Worker, in Worker order; no Workers, no results
   * @throws as {@link call} does, the first of its calls to fail (`WorkerCrashedError` also for a call pinned
   *   to a Worker that died before running it)
   */
  callEach<R = unknown>(name: string, args: unknown[] = []): Promise<R[]> {
    return Promise.all(this.#slots.map((slot) =>
      new Promise<R>((resolve, reject) => {
        slot.pin({
          id: this.#nextId++,
          name,
          args,
          transfer: [],
          resolve: resolve as (v: unknown) => void,
          reject,
        });
      })
    ));
  }

  /**
   * Executor entry: runs export `task` on `item`, transferring every buffer found in the item. Queued while every
   * Worker is busy; it leaves the queue when `ctx.signal` aborts.
   * @param task the export's name (a function cannot run in a Worker)
   * @param item the stage's item, the export's one argument; its buffers move to the Worker (detached here)
   * @param ctx the task's stage (whose wait it counts) and signal
   * @returns what the export returned, as {@link call}
   * @throws {InvalidArgumentError} when `task` is a function; as {@link call} otherwise, or the signal's reason
   *   when it aborts before a Worker takes the task
   */
  run(task: PipeFn | string, item: unknown, ctx: TaskContext): Promise<unknown> {
    if (typeof task !== "string") {
      throw new InvalidArgumentError(
        `stage "${ctx.stage}": a WorkerPool runs exports of ${this.moduleUrl}; pass the export name, not a function`,
      );
    }
    return this.#call(task, [item], collectTransferables(item), ctx.stage, ctx.signal);
  }

  /**
   * Stops every Worker; queued and running calls reject with `PipelineStoppedError`. Terminating a Worker does
   * not free what native code allocated in it, nor stop native code running in it, so each Worker first lets
   * its running call finish and calls the module's `release` export, if it has one (decoders, scalers, GPU
   * contexts cached per thread), and is terminated when that returns or after `releaseTimeoutMs`.
   */
  async close(): Promise<void> {
    const err = new PipelineStoppedError(`WorkerPool ${this.moduleUrl} was closed`);
    const slots = this.#slots.splice(0);
    for (const c of this.#pending.splice(0)) c.reject(err);
    for (const slot of slots) slot.rejectCalls(() => err);
    // Tracked with the pool's other retirements: a second close() while this one runs (the loader's, after its
    // pipeline's) waits for them too, instead of returning while these Workers still run native code.
    for (const slot of slots) this.#track(slot.retire(this.#releaseTimeoutMs));
    await Promise.all([...this.#retiring]);
  }

  /** Same as {@link close}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** Takes a Worker out of the pool and retires it in the background (`close()` waits for it). */
  #retireSlot(slot: WorkerSlot): void {
    this.#slots.splice(this.#slots.indexOf(slot), 1);
    this.#track(slot.retire(this.#releaseTimeoutMs));
  }

  /** Keeps a retirement in `#retiring` until it ends (every `close()` waits for all of them). */
  #track(retirement: Promise<void>): void {
    const p = retirement.finally(() => this.#retiring.delete(p));
    this.#retiring.add(p);
  }

  /** Gives queued calls to free Workers, starting Workers while the pool's size allows. */
  #pump(): void {
    while (this.#pending.length > 0) {
      const slot = this.#slots.find((s) => s.current === undefined) ?? this.#spawn();
      if (slot === undefined) return;
      slot.dispatch(this.#pending.shift()!);
    }
  }

  /** Starts one more Worker, unless the pool runs as many as its size already. */
  #spawn(): WorkerSlot | undefined {
    if (this.#slots.length >= this.#size) return undefined;
    const slot = new WorkerSlot(this.#nextIndex++, this.moduleUrl, this.#owner);
    this.#slots.push(slot);
    return slot;
  }

  /** Settles a Worker's call with its answer, then gives the Worker its next call (or retires it). */
  #onAnswer(slot: WorkerSlot, msg: CallAnswer): void {
    const c = slot.current;
    if (c === undefined || c.id !== msg.id) return;
    slot.current = undefined;
    if (msg.type === "result") c.resolve(msg.value);
    else c.reject(rebuildError(msg.error, slot, c.name, this.moduleUrl));
    const pinned = slot.pinned.shift();
    if (pinned !== undefined) return slot.dispatch(pinned);
    if (this.#slots.length > this.#size) this.#retireSlot(slot); // the pool shrank while this task ran
    this.#pump();
  }

  /** Replaces a Worker that died, failing the call it ran and those pinned to it with `WorkerCrashedError`. */
  #crash(slot: WorkerSlot, reason: string, error?: SerializedError): void {
    const i = this.#slots.indexOf(slot);
    if (i < 0) return; // already replaced or closed
    this.#slots.splice(i, 1);
    slot.worker.terminate();
    this.#crashes++;
    const options = error === undefined ? undefined : { cause: deserializeError(error) };
    const died = `WorkerPool ${this.moduleUrl}: worker ${slot.index} died`;
    slot.rejectCalls((c, running) =>
      new WorkerCrashedError(
        running
          ? `${died} while running "${c.name}": ${reason}; it was replaced`
          : `${died} before running "${c.name}": ${reason}`,
        c.name,
        options,
      )
    );
    this.#pump();
  }
}

/**
 * The error a Worker's export threw, as an instance of its own class (a `MediaError` stays a `MediaError`, with
 * its fields and cause chain); where it was thrown goes into the stack, not the message.
 */
function rebuildError(e: SerializedError, slot: WorkerSlot, name: string, url: string): Error {
  const err = deserializeError(e);
  const stack = err.stack ?? `${err.name}: ${err.message}`;
  Object.defineProperty(err, "stack", {
    value: `${stack}\n    at export "${name}" of ${url} (in Worker sluice-pool-${slot.index})`,
    writable: true,
    configurable: true,
  });
  return err;
}

/** `n` as a pool size, or an `InvalidArgumentError` naming `what` was given it. */
function checkSize(n: number, what: string): number {
  if (!Number.isInteger(n) || n < 1) {
    throw new InvalidArgumentError(`WorkerPool: ${what} needs a positive integer, got ${n}`);
  }
  return n;
}
