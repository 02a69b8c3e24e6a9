/**
 * The bounded FIFO queue between two pipeline stages. It is where backpressure happens: a producer that finds
 * the queue full waits, a consumer that finds it empty waits, and the queue measures both waits and its own
 * time-weighted occupancy so the stats can name the bottleneck. Fast paths (`tryPut`, `tryGet`) never allocate.
 * @module
 */

/** Returned by {@link BoundedQueue.tryGet} when nothing is buffered. */
export const EMPTY: unique symbol = Symbol("sluice.queue.empty");
/** Returned by {@link BoundedQueue.get} once the queue is closed and drained. */
export const CLOSED: unique symbol = Symbol("sluice.queue.closed");

/** Extra room in a stage's input queue beyond its concurrency (also an ordered stage's reorder slack). */
export const QUEUE_SLACK = 2;

interface Getter<T> {
  /** When it started waiting (clock ms). */
  t: number;
  resolve: (value: T | typeof CLOSED) => void;
}
interface Putter<T> {
  item: T;
  /** When it started waiting (clock ms). */
  t: number;
  resolve: (accepted: boolean) => void;
}

import { type Clock, realClock } from "./clock.ts";
import type { QueueCounters } from "./stats.ts";

/** A bounded async FIFO with cheap occupancy accounting. */
export class BoundedQueue<T> {
  #items: T[] = [];
  #head = 0;
  #capacity: number;
  #closed = false;
  readonly #getters: Getter<T>[] = [];
  readonly #putters: Putter<T>[] = [];
  readonly #onChange: ((length: number) => void) | undefined;
  // Time accounting.
  readonly #clock: Clock;
  readonly #t0: number;
  #lastT: number;
  #area = 0;
  #fullMs = 0;
  #emptyMs = 0;
  #putWaitMs = 0;
  #getWaitMs = 0;

  /**
   * @param capacity the bound (at least 1)
   * @param onChange called with the new length whenever it changes (used for tracing; leave unset otherwise)
   * @param clock where waits and occupancy are timed (default: wall-clock time)
   */
  constructor(capacity: number, onChange?: (length: number) => void, clock: Clock = realClock) {
    this.#capacity = Math.max(1, Math.floor(capacity));
    this.#onChange = onChange;
    this.#clock = clock;
    this.#t0 = clock.now();
    this.#lastT = this.#t0;
  }

  /** Items buffered now (not counting producers waiting to put). */
  get length(): number {
    return this.#items.length - this.#head;
  }

  /** Producers waiting on a full queue; each holds one item. */
  get waitingPuts(): number {
    return this.#putters.length;
  }

  /** Whether {@link close} was called. */
  get closed(): boolean {
    return this.#closed;
  }

  /** The bound. Raising it admits waiting producers at once; lowering it makes producers wait sooner. */
  get capacity(): number {
    return this.#capacity;
  }

  set capacity(n: number) {
    this.#capacity = Math.max(1, Math.floor(n));
    this.#admitPutters();
  }

  /** Puts without waiting. `false` when full; throws nothing; a closed queue drops the item and says `true`. */
  tryPut(item: T): boolean {
    if (this.#closed) return true;
    const getter = this.#getters.shift();
    if (getter !== undefined) {
      this.#getWaitMs += this.#clock.now() - getter.t;
      getter.resolve(item);
      return true;
    }
    if (this.length >= this.#capacity) return false;
    this.#push(item);
    return true;
  }

  /** Puts, waiting while full. Resolves `false` if the queue was aborted before the item got in. */
  put(item: T): Promise<boolean> {
    if (this.tryPut(item)) return Promise.resolve(!this.#closed);
    return new Promise<boolean>((resolve) => this.#putters.push({ item, t: this.#clock.now(), resolve }));
  }

  /** Takes without waiting: an item, or {@link EMPTY}, or {@link CLOSED} once closed and drained. */
  tryGet(): T | typeof EMPTY | typeof CLOSED {
    if (this.length > 0) return this.#shift();
    return this.#closed ? CLOSED : EMPTY;
  }

  /** Takes, waiting while empty; {@link CLOSED} once closed and drained. */
  get(): Promise<T | typeof CLOSED> | T | typeof CLOSED {
    const x = this.tryGet();
    if (x !== EMPTY) return x;
    return new Promise((resolve) => this.#getters.push({ t: this.#clock.now(), resolve }));
  }

  /** No more puts: consumers drain what is buffered, then see {@link CLOSED}. Waiting producers still get in. */
  close(): void {
    if (this.#closed) return;
    // Producers already waiting hold items that were accounted as produced: let them in first.
    for (const p of this.#putters.splice(0)) {
      this.#putWaitMs += this.#clock.now() - p.t;
      this.#push(p.item);
      p.resolve(true);
    }
    this.#closed = true;
    this.#releaseGetters();
  }

  /** Closes and discards everything buffered; waiting producers get `false`. Returns the items discarded. */
  abort(): T[] {
    this.#tick();
    const dropped = this.#items.slice(this.#head);
    this.#items = [];
    this.#head = 0;
    this.#closed = true;
    for (const p of this.#putters.splice(0)) {
      this.#putWaitMs += this.#clock.now() - p.t;
      dropped.push(p.item);
      p.resolve(false);
    }
    this.#releaseGetters();
    this.#onChange?.(0);
    return dropped;
  }

  #releaseGetters(): void {
    for (const g of this.#getters.splice(0)) {
      this.#getWaitMs += this.#clock.now() - g.t;
      g.resolve(CLOSED);
    }
  }

  /** Snapshot of the counters (one small object). */
  counters(): QueueCounters {
    this.#tick();
    const elapsedMs = this.#lastT - this.#t0;
    const elapsed = Math.max(1e-9, elapsedMs);
    let putWaitMs = this.#putWaitMs;
    for (const p of this.#putters) putWaitMs += this.#lastT - p.t;
    let getWaitMs = this.#getWaitMs;
    for (const g of this.#getters) getWaitMs += this.#lastT - g.t;
    return {
      length: this.length,
      capacity: this.#capacity,
      meanOccupancy: this.#area / elapsed,
      fullFraction: this.#fullMs / elapsed,
      emptyFraction: this.#emptyMs / elapsed,
      putWaitMs,
      getWaitMs,
      elapsedMs,
      fullMs: this.#fullMs,
      emptyMs: this.#emptyMs,
      itemMs: this.#area,
    };
  }

  #push(item: T): void {
    this.#tick();
    this.#items.push(item);
    this.#onChange?.(this.length);
  }

  #shift(): T {
    this.#tick();
    const item = this.#items[this.#head];
    (this.#items as (T | undefined)[])[this.#head] = undefined;
    this.#head++;
    if (this.#head === this.#items.length) {
      this.#items.length = 0;
      this.#head = 0;
    } else if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    this.#admitPutters();
    this.#onChange?.(this.length);
    return item;
  }

  #admitPutters(): void {
    while (this.#putters.length > 0 && this.length < this.#capacity) {
      const p = this.#putters.shift()!;
      this.#putWaitMs += this.#clock.now() - p.t;
      this.#push(p.item);
      p.resolve(true);
    }
  }

  /** Integrates occupancy up to now. */
  #tick(): void {
    const now = this.#clock.now();
    const dt = now - this.#lastT;
    if (dt <= 0) return;
    const len = this.length;
    this.#area += len * dt;
    if (len >= this.#capacity) this.#fullMs += dt;
    else if (len === 0) this.#emptyMs += dt;
    this.#lastT = now;
  }
}
