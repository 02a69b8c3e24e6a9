/**
 * `PoolLease`: one pipeline's share of a {@link WorkerPool} that several pipelines use at once (the node server's
 * one decode pool, which every rank's loader runs on). It runs tasks on the pool as the pool itself would, but
 * keeps them apart from the other pipelines' where a pipeline would otherwise touch everyone's:
 *
 * - closing a lease (what a pipeline does to its executors when an epoch is cut short or the loader closes)
 *   takes this pipeline's queued calls out of the pool's queue and waits for its running ones to finish, so
 *   nothing of it still writes anywhere; the pool and the other pipelines' tasks go on. The lease works again
 *   after (a later epoch's tasks).
 * - waits for a Worker are counted per lease (the pool's ledger under the lease's own stage names), so one
 *   pipeline's stage is never charged another's queueing;
 * - a stage's claim ({@link PoolLease.reserve}) does not grow the pool: its size is the node's budget, shared
 *   first come, first served (the pool's queue is FIFO over every lease's calls).
 * @module
 */

import type { TaskContext } from "./executor.ts";
import { WaitLedger } from "./wait_ledger.ts";
import type { WorkerPool } from "./worker_pool.ts";

/** What a pipeline's steps need of a pool of Workers: a {@link WorkerPool} itself, or a {@link PoolLease} of one. */
export type TaskPool = Pick<
  WorkerPool,
  "run" | "callEach" | "waits" | "waitMs" | "size" | "reserve" | "close"
>;

let leases = 0;

/** One pipeline's share of a shared {@link WorkerPool}; see the module docs. */
export class PoolLease implements TaskPool {
  /** Waits of this lease's stages for other capacity of the pool (thread tokens), besides Worker waits. */
  readonly waits: WaitLedger = new WaitLedger();
  readonly #pool: WorkerPool;
  readonly #prefix: string;
  readonly #running = new Set<Promise<unknown>>();
  #stop = new AbortController();

  /** @param pool the shared pool (the lease never closes or resizes it) */
  constructor(pool: WorkerPool) {
    this.#pool = pool;
    this.#prefix = `lease${++leases}:`;
  }

  /** The shared pool's size (the node's budget). */
  get size(): number {
    return this.#pool.size;
  }

  /** Calls of this lease queued or running now. */
  get inFlight(): number {
    return this.#running.size;
  }

  /** Runs export `task` on `item` in the shared pool, as this lease's; see {@link WorkerPool.run}. */
  run(task: Parameters<WorkerPool["run"]>[0], item: unknown, ctx: TaskContext): Promise<unknown> {
    const signal = AbortSignal.any([ctx.signal, this.#stop.signal]);
    return this.#track(this.#pool.run(task, item, { signal, stage: this.#prefix + ctx.stage }));
  }

  /** {@link WorkerPool.callEach} (diagnostics: every Worker of the shared pool answers). */
  callEach<R = unknown>(name: string, args: unknown[] = []): Promise<R[]> {
    return this.#pool.callEach<R>(name, args);
  }

  /** Milliseconds this lease's `stage` tasks waited for a Worker or other pool capacity. */
  waitMs(stage: string): number {
    return this.#pool.waitMs(this.#prefix + stage) + this.waits.ms(stage);
  }

  /** A stage's claim: ignored (the shared pool's size is the node's budget, not any one pipeline's). */
  reserve(_stage: string, _n: number): void {}

  /**
   * Takes this lease's queued calls out of the pool and waits for its running ones to end; the pool and other
   * leases go on, and this lease can run tasks again afterwards.
   */
  async close(): Promise<void> {
    this.#stop.abort(new DOMException("the pool lease was closed", "AbortError"));
    this.#stop = new AbortController();
    await Promise.allSettled([...this.#running]);
  }

  #track<T>(p: Promise<T>): Promise<T> {
    this.#running.add(p);
    const forget = () => this.#running.delete(p);
    p.then(forget, forget);
    return p;
  }
}
