/**
 * `SlotTurns`: which of the loader's batches gets a batch slot next (`batch_slots.ts`). Where each clip of an
 * epoch ends up is known when the epoch is planned (`epochOrder`): output index `j` is clip `j mod B` of batch
 * `⌊j / B⌋`. Slots go to batches in batch order (a resumed epoch's from its resume batch), so the batch the
 * consumer waits for never waits behind a later one; and only to batches fewer than `lookahead` ahead of the
 * consumer's next one (delivered or dropped batches count as passed), which bounds decoding ahead.
 * @module
 */

import { InvalidArgumentError } from "../../errors.ts";
import type { ClipSampler } from "../../dataset/sampler.ts";
import { epochOrder } from "../../dataset/epoch_order.ts";

/** Where a clip goes: its batch of its epoch, its index in that batch, and the batch's key (`epoch/batch`). */
export interface SlotWhere {
  epoch: number;
  batch: number;
  index: number;
  key: string;
}

/** The order of the batches' slots; see the module docs. */
export class SlotTurns {
  readonly #sampler: ClipSampler;
  readonly #batchSize: number;
  readonly #lookahead: number;
  readonly #orders = new Map<number, Int32Array>();
  /** The next batch to get a slot: slots are acquired in batch order. */
  #next = { epoch: -1, batch: 0 };
  /** A resumed epoch's first batch (its earlier ones are never made). */
  #resume = { epoch: -1, batch: 0 };
  /** The consumer's next batch: batches before it were delivered (or dropped). */
  #passed = { epoch: -1, batch: 0 };
  /** Settles when {@link #passed} moves (a placement waiting for lookahead looks again). */
  #moved = Promise.withResolvers<void>();

  /**
   * @param sampler the loader's sampler (each epoch's output order)
   * @param batchSize clips per batch
   * @param lookahead batches beyond the consumer's next one that may have a slot
   */
  constructor(sampler: ClipSampler, batchSize: number, lookahead: number) {
    this.#sampler = sampler;
    this.#batchSize = batchSize;
    this.#lookahead = lookahead;
  }

  /**
   * Where the clip at `meta.position` of its epoch goes.
   * @throws {InvalidArgumentError} for a position the epoch does not have
   */
  where(meta: { epoch: number; position: number }): SlotWhere {
    const j = this.#order(meta.epoch)[meta.position];
    if (j === undefined) {
      throw new InvalidArgumentError(`batch slots: no position ${meta.position} in epoch ${meta.epoch}`);
    }
    const batch = Math.floor(j / this.#batchSize);
    return { epoch: meta.epoch, batch, index: j % this.#batchSize, key: `${meta.epoch}/${batch}` };
  }

  /**
   * For a batch without a slot: moves the next batch to its epoch when that starts; false when the batch is
   * behind the next one (its slot was given back already: a bug).
   */
  advance(where: { epoch: number; batch: number }): boolean {
    if (where.epoch > this.#next.epoch) {
      this.#next = { epoch: where.epoch, batch: where.epoch === this.#resume.epoch ? this.#resume.batch : 0 };
      if (where.epoch > this.#passed.epoch) this.#passed = { ...this.#next };
    }
    return where.epoch === this.#next.epoch && where.batch >= this.#next.batch;
  }

  /** The key of the next batch, which gets a slot now: the turn passes to the batch after it. */
  take(): string {
    const key = `${this.#next.epoch}/${this.#next.batch}`;
    this.#next.batch++;
    return key;
  }

  /** Whether the next batch to get a slot is `lookahead` or more batches beyond the consumer's next one. */
  tooFarAhead(): boolean {
    const p = this.#passed;
    return p.epoch === this.#next.epoch && this.#next.batch >= p.batch + this.#lookahead;
  }

  /**
   * Settles when the consumer's next batch moves (or `signal` aborts): a batch too far ahead looks again.
   * @throws the abort reason when `signal` has aborted already
   */
  moved(signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    return signal === undefined ? this.#moved.promise : Promise.race([this.#moved.promise, aborted(signal)]);
  }

  /** The consumer's next batch is after batch `batch` of `epoch` (it was delivered, or dropped). */
  pass(epoch: number, batch: number): void {
    const p = this.#passed;
    if (epoch < p.epoch || (epoch === p.epoch && batch < p.batch)) return;
    this.#passed = { epoch, batch: batch + 1 };
    this.#moved.resolve();
    this.#moved = Promise.withResolvers<void>();
  }

  /** `epoch` resumes at `batch`: its first turn goes to that batch (the earlier ones are never made). */
  resume(epoch: number, batch: number): void {
    this.#resume = { epoch, batch };
  }

  /** The epoch ended (or was abandoned): the next turn goes to the first batch of the epoch that starts next. */
  endEpoch(): void {
    this.#next = { epoch: -1, batch: 0 };
  }

  /** The output order of `epoch` (kept for it and the epoch before). */
  #order(epoch: number): Int32Array {
    let order = this.#orders.get(epoch);
    if (order === undefined) {
      order = epochOrder(this.#sampler, epoch);
      this.#orders.set(epoch, order);
      for (const e of this.#orders.keys()) if (e < epoch - 1) this.#orders.delete(e);
    }
    return order;
  }
}

/** A promise that settles when `signal` aborts. */
function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((r) => signal.addEventListener("abort", () => r(), { once: true }));
}
