/**
 * `SlotRing`: a fixed number of batch slots and the credits that guard them. A producer `acquire()`s a free
 * slot (waiting while all are out), writes a batch into it, hands it to the consumer; the slot comes back only
 * when the consumer `release()`s it. So at most `slots` batches exist at once and memory never grows with a
 * slow or stalled consumer.
 *
 * Free slots are reused last released, first: the slots in use stay the few whose pages are committed already
 * (a memfd keeps a page once written), so the memory a ring takes is the most slots ever out at once, not all
 * of them by turns (FIFO reuse touched every slot of a 1024-slot ring in time, whatever was out at once).
 *
 * Where the bytes live is a {@link SlotMemory}: {@link HostSlots} (one memfd, `shm.ts`, that a trainer maps
 * read-write) or `CudaSlots` (one device allocation exported by CUDA IPC, `cuda_slots.ts`). Slot `i` starts at
 * byte `i × slotBytes` of it; `slotBytes` is a whole number of pages so every slot is page-aligned.
 *
 * A clip's place in a batch is a plain offset inside its slot ({@link SlotRing.clipOffset}), so a decoder can be
 * told to write its pixels there directly (host: a Worker builds a view at `address + offset`; Workers share the
 * process's address space): the loader's `slots` option does so (`src/loader/batch/batch_slots.ts`).
 * @module
 */

import { InvalidArgumentError, ServeError } from "../errors.ts";
import type { MemoryDescriptor } from "./descriptor.ts";
import { pageAlign, SharedMemory } from "./shm.ts";

/** Storage of a ring's slots. */
export interface SlotMemory extends Disposable {
  /** Total bytes. */
  readonly size: number;
  /** How a peer maps this memory (the `memory` message). */
  describe(): MemoryDescriptor;
  /** Copies `bytes` to byte `offset`. */
  write(offset: number, bytes: Uint8Array): void;
  /** Reads `length` bytes at `offset` (tests and diagnostics). */
  read(offset: number, length: number): Uint8Array;
}

/** Host slots: one memfd mapped here; a trainer maps it through `/proc/<pid>/fd/<fd>`. */
export class HostSlots implements SlotMemory {
  readonly shm: SharedMemory;
  constructor(name: string, size: number) {
    this.shm = new SharedMemory(name, size);
  }
  get size(): number {
    return this.shm.size;
  }
  describe(): MemoryDescriptor {
    return { kind: "host", fd: this.shm.fd, size: this.shm.size };
  }
  write(offset: number, bytes: Uint8Array): void {
    this.shm.bytes.set(bytes, offset);
  }
  read(offset: number, length: number): Uint8Array {
    return this.shm.bytes.slice(offset, offset + length);
  }
  /** A view of `length` bytes at `offset` (valid until disposal). */
  view(offset: number, length: number): Uint8Array<ArrayBuffer> {
    return this.shm.bytes.subarray(offset, offset + length);
  }
  [Symbol.dispose](): void {
    this.shm.close();
  }
}

/** Counters of a ring. */
export interface SlotRingStats {
  /** Slots in the ring. */
  slots: number;
  /** Bytes per slot. */
  slotBytes: number;
  /** Slots handed out and not released. */
  inUse: number;
  /** Producers waiting for a slot now. */
  waiting: number;
  /** Total time producers waited for a slot, ms (a stalled or slow consumer). */
  waitedMs: number;
  /** Slots handed out so far. */
  acquired: number;
  /** Slots given back so far. */
  released: number;
}

/** Slots, their memory and their credits; see the module docs. */
export class SlotRing implements Disposable {
  readonly slots: number;
  /** Distance between slot starts (a whole number of pages). */
  readonly slotBytes: number;
  readonly memory: SlotMemory;
  readonly #free: number[];
  readonly #used: boolean[];
  readonly #waiters: { resolve: (slot: number) => void; reject: (e: unknown) => void; t0: number }[] = [];
  #closed = false;
  #waitedMs = 0;
  #acquired = 0;
  #released = 0;

  /**
   * `slots` slots of at least `batchBytes` each in `memory` (built by `makeMemory` for the page-aligned total).
   */
  constructor(slots: number, batchBytes: number, makeMemory: (size: number) => SlotMemory) {
    if (!Number.isInteger(slots) || slots < 1 || slots > 1024) {
      throw new InvalidArgumentError(`slot ring: slots must be an integer in [1, 1024], got ${slots}`);
    }
    if (!Number.isSafeInteger(batchBytes) || batchBytes < 1) {
      throw new InvalidArgumentError(
        `slot ring: batch size must be a positive byte count, got ${batchBytes}`,
      );
    }
    this.slots = slots;
    this.slotBytes = pageAlign(batchBytes);
    this.memory = makeMemory(this.slots * this.slotBytes);
    this.#free = Array.from({ length: slots }, (_, i) => slots - 1 - i); // popped: slot 0 first
    this.#used = new Array(slots).fill(false);
  }

  /** Byte offset of slot `slot` in the memory. */
  offset(slot: number): number {
    return slot * this.slotBytes;
  }

  /** Byte offset of clip `index` of a batch in `slot` when each clip takes `clipBytes`. */
  clipOffset(slot: number, index: number, clipBytes: number): number {
    if ((index + 1) * clipBytes > this.slotBytes) {
      throw new InvalidArgumentError(
        `slot ring: clip ${index} of ${clipBytes} bytes does not fit a slot of ${this.slotBytes}`,
      );
    }
    return this.offset(slot) + index * clipBytes;
  }

  /** A free slot now, or undefined. */
  tryAcquire(): number | undefined {
    if (this.#closed) throw new ServeError("closed", "slot ring is closed");
    const slot = this.#free.pop();
    if (slot !== undefined) this.#take(slot);
    return slot;
  }

  /** A free slot, waiting (first come, first served) until the consumer releases one. */
  acquire(signal?: AbortSignal): Promise<number> {
    const now = this.tryAcquire();
    if (now !== undefined) return Promise.resolve(now);
    signal?.throwIfAborted();
    return new Promise((resolve, reject) => {
      const waiter = { resolve, reject, t0: performance.now() };
      this.#waiters.push(waiter);
      signal?.addEventListener("abort", () => {
        const i = this.#waiters.indexOf(waiter);
        if (i >= 0) {
          this.#waiters.splice(i, 1);
          reject(signal.reason);
        }
      }, { once: true });
    });
  }

  /** Gives `slot` back; throws a {@link ServeError} ("bad-release") when it is not out. */
  release(slot: number): void {
    if (!Number.isInteger(slot) || slot < 0 || slot >= this.slots || !this.#used[slot]) {
      throw new ServeError("bad-release", `slot ${slot} is not in use (ring of ${this.slots})`);
    }
    this.#used[slot] = false;
    this.#released++;
    const w = this.#waiters.shift();
    if (w !== undefined) {
      this.#waitedMs += performance.now() - w.t0;
      this.#take(slot);
      w.resolve(slot);
    } else {
      this.#free.push(slot);
    }
  }

  /** Releases every slot that is out (the consumer is gone). */
  releaseAll(): void {
    for (let s = this.slots - 1; s >= 0; s--) if (this.#used[s]) this.release(s); // slot 0 reused first
  }

  /** Whether `slot` is out now. */
  isInUse(slot: number): boolean {
    return this.#used[slot] === true;
  }

  stats(): SlotRingStats {
    const now = performance.now();
    const waiting = this.#waiters.reduce((ms, w) => ms + (now - w.t0), 0);
    return {
      slots: this.slots,
      slotBytes: this.slotBytes,
      inUse: this.#used.filter((u) => u).length,
      waiting: this.#waiters.length,
      waitedMs: this.#waitedMs + waiting,
      acquired: this.#acquired,
      released: this.#released,
    };
  }

  /** Fails waiting producers and frees the memory. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    const err = new ServeError("closed", "slot ring closed");
    for (const w of this.#waiters.splice(0)) w.reject(err);
    this.memory[Symbol.dispose]();
  }

  [Symbol.dispose](): void {
    this.close();
  }

  #take(slot: number): void {
    this.#used[slot] = true;
    this.#acquired++;
  }
}
