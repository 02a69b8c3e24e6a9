/**
 * `BufferPool`: a few `ArrayBuffer`s of one size kept for reuse, so a steady stream of same-sized buffers (a
 * loader's clip buffers and batch buffers without batch slots) stops costing fresh pages: with the process's mmap
 * threshold pinned (`mmap_threshold.ts`) every such buffer is a mapping of its own whose pages fault in zeroed on
 * first write and are unmapped when it is freed, which the loader measured at about 260 page faults and a tenth of
 * its CPU per clip.
 *
 * A buffer enters the pool by `ArrayBuffer.prototype.transfer()`: its memory moves to a new `ArrayBuffer` that only
 * the pool holds, and the buffer given (with every view of it) is detached, reading as empty. So memory that
 * anything else can still see is never handed out again: a view kept by mistake reads as empty, never as a later
 * clip's pixels. Beyond its capacity, or of another size, a buffer given back is freed at once (detached).
 * @module
 */

/** A bounded pool of `ArrayBuffer`s of `bytes` bytes each; see the module docs. */
export class BufferPool {
  /** The size of every buffer of the pool. */
  readonly bytes: number;
  /** Buffers kept at most. */
  readonly capacity: number;
  readonly #free: ArrayBuffer[] = [];
  #reused = 0;

  /**
   * @param bytes size of the pooled buffers
   * @param capacity buffers kept at most (the rest are freed when given back)
   */
  constructor(bytes: number, capacity: number) {
    this.bytes = bytes;
    this.capacity = capacity;
  }

  /** Buffers waiting for reuse. */
  get size(): number {
    return this.#free.length;
  }

  /** Buffers handed out again so far. */
  get reused(): number {
    return this.#reused;
  }

  /** A buffer of {@link bytes} bytes from the pool (its old contents), or undefined when the pool is empty. */
  take(): ArrayBuffer | undefined {
    const b = this.#free.pop();
    if (b !== undefined) this.#reused++;
    return b;
  }

  /**
   * Takes `buffer` back (moved in, detaching the one given) when it is exactly {@link bytes} long and the pool
   * has room; otherwise frees it now. A `SharedArrayBuffer` or a detached buffer is left alone.
   */
  give(buffer: ArrayBufferLike): void {
    if (!(buffer instanceof ArrayBuffer) || buffer.detached) return;
    if (buffer.byteLength === this.bytes && this.#free.length < this.capacity) {
      this.#free.push(buffer.transfer());
    } else {
      buffer.transfer(0);
    }
  }

  /** Frees every pooled buffer. */
  clear(): void {
    for (const b of this.#free.splice(0)) b.transfer(0);
  }
}
