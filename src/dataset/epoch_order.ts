/**
 * Where each planned clip of an epoch comes out of the loader's front half: the sampler's plan is pure and the
 * shuffle buffer's draws depend only on the seed, the epoch and the count, so a clip's place in the epoch's output
 * (its batch and its index there) is known before anything is fetched or decoded. Decode-once grouping and the
 * batch slots both plan with it.
 * @module
 */

import type { ClipSampler } from "./sampler.ts";
import { ShuffleBuffer } from "./shuffle_buffer.ts";

/**
 * Where each planned clip of `sampler`'s `epoch` leaves the front: entry `p` is the output index of the clip at
 * plan position `p` (the shuffle buffer's permutation, a pure function of the plan's length, the buffer's size,
 * the seed and the epoch). The batch of output index `j` is `⌊j / batchSize⌋`, its slot `j mod batchSize`.
 */
export function epochOrder(sampler: ClipSampler, epoch: number): Int32Array {
  const n = sampler.length;
  const out = new ShuffleBuffer<number>(sampler.options.shuffleBuffer, sampler.options.seed, n)
    .push(epoch, Array.from({ length: n }, (_, p) => p));
  const order = new Int32Array(n);
  out.forEach((p, j) => order[p] = j);
  return order;
}
