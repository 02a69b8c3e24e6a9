/**
 * The time source of a pipeline: every duration its stats, stall watch and auto-concurrency controller see is
 * read from one {@link Clock}, so a test or a simulation can run a pipeline on virtual time and get the same
 * decisions from the same measurements.
 * @module
 */

/** Reads time and sets timers; the pipeline's only source of time. */
export interface Clock {
  /** Milliseconds from an arbitrary origin, monotonic (`performance.now()` for the real clock). */
  now(): number;
  /** Calls `fn` once after `ms` milliseconds; returns a handle for {@link Clock.clearTimer}. */
  setTimer(fn: () => void, ms: number): unknown;
  /** Cancels a timer set by {@link Clock.setTimer}; unknown or fired handles are ignored. */
  clearTimer(handle: unknown): void;
}

/** Wall-clock time: `performance.now()` and `setTimeout`. */
export const realClock: Clock = {
  now: () => performance.now(),
  setTimer: (fn, ms) => setTimeout(fn, ms),
  clearTimer: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};
