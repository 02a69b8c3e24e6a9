/**
 * `ShuffleBuffer`: interleaves a stream of items through a seeded buffer, as WebDataset's `shuffle(n)` does. The
 * loader demuxes each video once (all of its clips in one open of the file), so clips arrive grouped by video;
 * the buffer holds up to `size` of them and, once full, emits a uniformly drawn one for each one that comes in,
 * so a batch mixes clips of many videos. The PRNG is seeded per epoch, and the input order is the sampler's (the
 * loader keeps it through its ordered stages), so the same seed gives the same output order in every run.
 *
 * The buffer knows how many items an epoch has and empties itself (in seeded random order) when the last one
 * arrives; items of a new epoch start a fresh buffer and PRNG.
 * @module
 */

import { InvalidArgumentError } from "../errors.ts";
import { hashSeed, mulberry32 } from "./random.ts";

/** Seed-part tag of the shuffle buffer's PRNG (keeps its draws apart from the sampler's). */
const SHUFFLE_DRAW = 0x73687566;

/** A seeded shuffle buffer for one stream of epochs; see the module docs. */
export class ShuffleBuffer<T> {
  readonly #size: number;
  readonly #seed: number;
  readonly #perEpoch: number;
  #buffer: T[] = [];
  #epoch = -1;
  #seen = 0;
  #rand: () => number = Math.random;

  /**
   * @param size items held (0 passes items through unchanged)
   * @param seed the sampler's seed
   * @param perEpoch items in one epoch (the buffer empties when the last one arrives)
   */
  constructor(size: number, seed: number, perEpoch: number) {
    if (!Number.isInteger(size) || size < 0) {
      throw new InvalidArgumentError(`shuffle buffer: size must be an integer >= 0, got ${size}`);
    }
    this.#size = size;
    this.#seed = seed;
    this.#perEpoch = perEpoch;
  }

  /** Items held now. */
  get length(): number {
    return this.#buffer.length;
  }

  /** Takes the items of `epoch` that just arrived, in arrival order; returns the items to emit now, in order. */
  push(epoch: number, items: readonly T[]): T[] {
    if (this.#size === 0) return [...items];
    if (epoch !== this.#epoch) {
      this.#epoch = epoch;
      this.#seen = 0;
      this.#buffer = []; // an epoch stopped early leaves items behind: they belong to no later epoch
      this.#rand = mulberry32(hashSeed(this.#seed, epoch, SHUFFLE_DRAW));
    }
    const out: T[] = [];
    for (const item of items) {
      this.#seen++;
      if (this.#buffer.length < this.#size) {
        this.#buffer.push(item);
        continue;
      }
      const j = Math.floor(this.#rand() * this.#buffer.length);
      out.push(this.#buffer[j]);
      this.#buffer[j] = item;
    }
    if (this.#seen >= this.#perEpoch) {
      while (this.#buffer.length > 0) {
        const j = Math.floor(this.#rand() * this.#buffer.length);
        out.push(this.#buffer[j]);
        this.#buffer[j] = this.#buffer[this.#buffer.length - 1];
        this.#buffer.pop();
      }
    }
    return out;
  }
}
