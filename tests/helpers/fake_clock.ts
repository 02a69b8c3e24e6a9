/**
 * A virtual clock for tests: time moves only when the test advances it, timers fire in time order, and between
 * two timers the promise chains the last one started run to completion (up to SETTLE_HOPS promise reactions
 * deep, all within microtasks: no real timer or message is involved, so nothing depends on how fast the machine
 * is). A pipeline built with it (`build({ clock })`) whose stage functions wait with `clock.sleep` runs the same
 * way every time; a backend's liveness watch (`spawnBackend({ clock })`) and a fetch's timers
 * (`fetchOnClock(clock, …)`) read it too, so a test asserts the limit that fired, at its exact time, instead of
 * bounding wall-clock durations.
 * @module
 */
import type { Clock } from "../../src/pipeline/clock.ts";

/** Microtask turns given to promise chains after each timer: far more than any pipeline step takes. */
const SETTLE_HOPS = 400;

interface Timer {
  at: number;
  seq: number;
  fn: () => void;
}

export class FakeClock implements Clock {
  #now = 0;
  #seq = 0;
  #timers: Timer[] = [];

  now(): number {
    return this.#now;
  }

  setTimer(fn: () => void, ms: number): unknown {
    const t: Timer = { at: this.#now + Math.max(0, ms), seq: this.#seq++, fn };
    let i = this.#timers.length;
    while (i > 0 && this.#timers[i - 1].at > t.at) i--;
    this.#timers.splice(i, 0, t);
    return t;
  }

  clearTimer(handle: unknown): void {
    const i = this.#timers.indexOf(handle as Timer);
    if (i >= 0) this.#timers.splice(i, 1);
  }

  /** Resolves after `ms` of virtual time. */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.setTimer(resolve, ms));
  }

  /** Lets pending promise chains run: {@link SETTLE_HOPS} microtask turns. */
  async settle(): Promise<void> {
    for (let i = 0; i < SETTLE_HOPS; i++) await null;
  }

  /** Advances to `t`, firing due timers in order and settling after each. */
  async runUntil(t: number): Promise<void> {
    await this.settle();
    while (this.#timers.length > 0 && this.#timers[0].at <= t) {
      const timer = this.#timers.shift()!;
      this.#now = timer.at;
      timer.fn();
      await this.settle();
    }
    this.#now = Math.max(this.#now, t);
  }

  /** Timers waiting. */
  get pending(): number {
    return this.#timers.length;
  }

  /** When each waiting timer is due, earliest first. */
  get due(): number[] {
    return this.#timers.map((t) => t.at);
  }

  /** Drops the timers left (nothing else to release). */
  close(): void {
    this.#timers = [];
  }
}
