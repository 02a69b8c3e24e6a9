/**
 * The batches a session has out (sent to its client, not released yet), by slot, and the credit its stream
 * waits for before it takes the next batch from the loader: a slot of the ring the client does not hold, and,
 * once the client reports what its code took (the `taken` message), fewer than {@link AHEAD} batches sent and
 * not taken. So decoding ahead of a slow trainer is bounded by {@link AHEAD} (plus the loader's own buffer),
 * not by `slots`, which bounds the batches the trainer may keep.
 * @module
 */

import type { VideoClassificationLoader } from "../loader/loader.ts";
import type { Batch } from "../loader/batch/collate.ts";

/** Batches a stream runs ahead of its client's code (sent, not taken yet), when the client reports it. */
export const AHEAD = 2;

/** A batch a session has out. */
export interface OutBatch {
  seq: number;
  /** The batch itself while it is in a slot of the loader's ring (disposing it gives the slot back). */
  batch: Batch | null;
  clips: Batch["clips"];
  /** The loader that made it (an `unused` release takes its delivery back there). */
  loader: VideoClassificationLoader;
}

/** See the module docs. */
export class OutBatches {
  readonly #out = new Map<number, OutBatch>();
  /** Settles when a batch is released or taken (a stream waiting for credit looks again). */
  #changed = Promise.withResolvers<void>();
  /** One past the `seq` of the last batch the client's code took; null until the client reports one. */
  #taken: number | null = null;

  /** Batches out. */
  get size(): number {
    return this.#out.size;
  }

  get(slot: number): OutBatch | undefined {
    return this.#out.get(slot);
  }

  set(slot: number, b: OutBatch): void {
    this.#out.set(slot, b);
  }

  /** Forgets the batch in `slot` (released) and wakes a stream waiting for credit. */
  delete(slot: number): void {
    this.#out.delete(slot);
    this.#wake();
  }

  values(): IterableIterator<OutBatch> {
    return this.#out.values();
  }

  clear(): void {
    this.#out.clear();
    this.#wake();
  }

  /** The client's code took every batch before `seq` `taken`. */
  took(taken: number): void {
    this.#taken = Math.max(this.#taken ?? 0, taken);
    this.#wake();
  }

  /** Batches out from `seq` `taken` on (sent, not taken by the client's code yet). */
  unconsumed(taken: number): OutBatch[] {
    return [...this.#out.values()].filter((b) => b.seq >= taken);
  }

  /**
   * Waits until the stream may take the next batch from the loader: fewer than `slots` batches out (null: the
   * ring's own `acquire` waits instead), and fewer than {@link AHEAD} not taken when the client reports them.
   */
  async credit(slots: number | null, signal: AbortSignal): Promise<void> {
    const aborted = new Promise<void>((r) => signal.addEventListener("abort", () => r(), { once: true }));
    const ahead = () => this.#taken !== null && this.unconsumed(this.#taken).length >= AHEAD;
    while (!signal.aborted && ((slots !== null && this.#out.size >= slots) || ahead())) {
      await Promise.race([this.#changed.promise, aborted]);
    }
  }

  #wake(): void {
    this.#changed.resolve();
    this.#changed = Promise.withResolvers<void>();
  }
}
