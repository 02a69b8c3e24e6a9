/**
 * Parent → child: the frames the parent sends a backend child (INIT, NEXT_EPOCH, CREDIT), numbered in the order
 * they go out and written one at a time to the child's stdin. Credits are batched: they go out `bufferSize / 4`
 * (at least 1) at a time, or at once when the consumer is about to wait (so the child must not); credits granted
 * while a write is in flight are merged into one CREDIT frame. Batching saves a pipe write and a wake-up of the
 * child per item; the child's lead shrinks by less than a batch, and it is never left without credit while the
 * parent waits.
 * @module
 */

import { creditPayload, encodeFrame, FrameType, type FrameTypeCode } from "./protocol.ts";

/** The parent's outgoing frames and credits. */
export class Outbox {
  readonly #write: (bytes: Uint8Array) => Promise<void>;
  readonly #creditBatch: number;
  #frames: Uint8Array[] = [];
  #credit = 0;
  #granted = 0;
  #seq = 0;
  #flushing = false;
  #closed = false;

  /**
   * @param write writes bytes to the child's stdin (rejects once the child is gone)
   * @param bufferSize items the parent buffers: the credits' batch is a quarter of it
   */
  constructor(write: (bytes: Uint8Array) => Promise<void>, bufferSize: number) {
    this.#write = write;
    this.#creditBatch = Math.max(1, Math.floor(bufferSize / 4));
  }

  /** Credits granted so far: the child may have sent this many ITEM frames, no more. */
  get granted(): number {
    return this.#granted;
  }

  /** Queues a control frame and starts writing. */
  send(type: FrameTypeCode, payload: Uint8Array): void {
    this.#frames.push(encodeFrame(type, payload, this.#seq++));
    this.#flush();
  }

  /** Grants `n` credits; they go out with the batch, or now when `consumerWaits` (no item is buffered). */
  grant(n: number, consumerWaits: boolean): void {
    this.#credit += n;
    this.#granted += n;
    if (this.#credit >= this.#creditBatch || consumerWaits) this.#flush();
  }

  /** Drops what is not written yet; nothing more goes out (the child is being stopped). */
  close(): void {
    this.#closed = true;
    this.#frames = [];
  }

  #flush(): void {
    if (this.#flushing || this.#closed) return;
    void this.#flushLoop();
  }

  async #flushLoop(): Promise<void> {
    this.#flushing = true;
    try {
      while (!this.#closed && (this.#frames.length > 0 || this.#credit > 0)) {
        let bytes = this.#frames.shift();
        if (bytes === undefined) {
          bytes = encodeFrame(FrameType.CREDIT, creditPayload(this.#credit), this.#seq++);
          this.#credit = 0;
        }
        await this.#write(bytes);
      }
    } catch {
      // The child is gone; the stdout pump reports how it ended.
    } finally {
      this.#flushing = false;
    }
  }
}
