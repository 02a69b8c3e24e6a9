/**
 * Executors decide where a pipe stage's work runs. The default runs the stage function on the main thread (right
 * for async I/O and light work); `WorkerPool` runs exported functions of a module inside Deno Workers.
 * @module
 */

import { InvalidArgumentError } from "../errors.ts";

/** What every task receives besides its item. */
export interface TaskContext {
  /** Aborted when the pipeline stops; long tasks should give up when it fires. */
  readonly signal: AbortSignal;
  /** The stage's name. */
  readonly stage: string;
}

/** A stage function: returns the output, `undefined` to drop the item, or an async iterable of many outputs. */
export type PipeFn<I = unknown, R = unknown> = (item: I, ctx: TaskContext) => R;

/** Runs the tasks of a stage. A pipeline calls `close()` on the executors of its stages when it stops. */
export interface Executor {
  /** How many tasks it can usefully run at once; the default concurrency of stages that use it. */
  readonly size: number;
  /**
   * Runs one task. `task` is the stage function, or, for executors that run module exports elsewhere
   * (a `WorkerPool`), an export name. May return a value, a promise, or an async iterable.
   */
  run(task: PipeFn | string, item: unknown, ctx: TaskContext): unknown;
  /**
   * A stage's claim: stage `stage` will run up to `n` tasks at once on this executor. Called when the stage starts
   * and whenever its concurrency changes; an executor with a bounded capacity (a `WorkerPool`) grows to fit.
   */
  reserve?(stage: string, n: number): void;
  /**
   * Milliseconds the tasks of stage `stage` have spent waiting for this executor's capacity while other work held
   * it (a `WorkerPool`'s queue), waits under way included: the stage does not count them as work.
   */
  waitMs?(stage: string): number;
  /** Releases resources (e.g. terminates Workers). The executor may start again lazily on the next `run`. */
  close(): void | Promise<void>;
}

/** The default executor: calls the stage function on the main thread. */
export const mainThread: Executor = {
  size: 1,
  run(task: PipeFn | string, item: unknown, ctx: TaskContext): unknown {
    if (typeof task === "string") {
      throw new InvalidArgumentError(
        `stage "${ctx.stage}": export name "${task}" needs an executor that runs modules (a WorkerPool)`,
      );
    }
    return task(item, ctx);
  },
  close(): void {},
};
