// A virtual clock for pipeline tests: time moves only when the test advances it, timers fire in time order, and
// between two timers every promise chain the last one started runs to completion. A pipeline built with it
// (`build({ clock })`) whose stage functions wait with `clock.sleep` runs the same way every time.
import type { Clock } from "../../src/pipeline/clock.ts";

interface Timer {
  at: number;
  seq: number;
  fn: () => void;
}

export class FakeClock implements Clock {
  #now = 0;
  #seq = 0;
  #timers: Timer[] = [];
  readonly #channel = new MessageChannel();
  #wake: (() => void) | undefined;

  constructor() {
    this.#channel.port1.onmessage = () => {
      const w = this.#wake;
      this.#wake = undefined;
      w?.();
    };
  }

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

  /** Lets every pending promise chain run (one real macrotask turn, after all microtasks). */
  settle(): Promise<void> {
    return new Promise((resolve) => {
      this.#wake = resolve;
      this.#channel.port2.postMessage(null);
    });
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

  /** Closes the message channel (test sanitizers check that resources are closed). */
  close(): void {
    this.#channel.port1.close();
    this.#channel.port2.close();
  }
}
