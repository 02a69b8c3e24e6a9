/**
 * `cacheLoader`: a training loop's compute-only ceiling ("headspace"): real batches first, then the first few
 * replayed for free.
 * @module
 */

import { InvalidArgumentError } from "../errors.ts";
import { ownedBatch, slotOf } from "./batch/batch_slots.ts";
import type { Batch } from "./batch/collate.ts";

/** Options of {@link cacheLoader}. */
export interface CacheLoaderOptions {
  /** Batches kept for replay (the first ones). */
  numCached: number;
  /** Real batches yielded before the replay starts (default `numCached`; at least `numCached`). */
  replayAfter?: number;
  /** Batches yielded in all, real and replayed. */
  stopAfter: number;
}

/**
 * Measures a training loop's compute-only ceiling ("headspace"). It yields real batches from `loader` for the
 * first `replayAfter` steps, keeping the first `numCached` of them; from then on it stops the real loader and
 * replays the kept batches in a cycle until `stopAfter` batches were yielded in all. The training loop's speed
 * during the replay is what it reaches with data loading for free: the gap between that and its speed on the
 * real loader is the data-loading headroom.
 *
 * A kept batch survives its consumer's `using` (`for await (using batch of cacheLoader(...))`): the cache yields
 * it behind a view whose `Symbol.dispose` does nothing, and disposes the kept batches itself when the replay
 * ends. Batches it does not keep are yielded as they are, so `using` frees them as usual. Kept batches are
 * yielded by reference, again and again: a loop that writes into a batch changes the cache. A kept batch that
 * views a loader's batch slot (`slots` option) is copied first and its slot given back, since the loader
 * reuses the slot for later batches.
 * @param loader the real loader (any async iterable of batches)
 * @param opts how many batches to keep, when to start replaying, when to stop
 * @returns the batches: real ones, then the kept ones again and again
 * @throws {InvalidArgumentError} when `numCached`, `replayAfter` or `stopAfter` is not a positive integer in order
 * @example Compare a training step's speed on real batches with its speed on replayed ones
 * ```ts
 * import { cacheLoader, videoClassificationLoader } from "@sluice/sluice";
 *
 * await using loader = await videoClassificationLoader({
 *   dataset: "data/train",
 *   batchSize: 8,
 *   clip: { numFrames: 16, width: 112, height: 112 },
 * });
 * let t0 = performance.now(), step = 0;
 * for await (using batch of cacheLoader(loader, { numCached: 4, replayAfter: 50, stopAfter: 100 })) {
 *   void batch; // a training step here
 *   if (++step % 50 === 0) {
 *     console.log(step <= 50 ? "real" : "replayed", ((performance.now() - t0) / 50).toFixed(1), "ms a step");
 *     t0 = performance.now();
 *   }
 * }
 * ```
 */
export async function* cacheLoader<T>(loader: AsyncIterable<T>, opts: CacheLoaderOptions): AsyncGenerator<T> {
  const { numCached, stopAfter } = opts;
  const replayAfter = opts.replayAfter ?? numCached;
  if (!Number.isInteger(numCached) || numCached < 1) {
    throw new InvalidArgumentError(`cacheLoader: numCached must be a positive integer, got ${numCached}`);
  }
  if (!Number.isInteger(replayAfter) || replayAfter < numCached) {
    throw new InvalidArgumentError(
      `cacheLoader: replayAfter (${replayAfter}) must be an integer >= numCached`,
    );
  }
  if (!Number.isInteger(stopAfter) || stopAfter < 1) {
    throw new InvalidArgumentError(`cacheLoader: stopAfter must be a positive integer, got ${stopAfter}`);
  }
  const kept: T[] = [], views: T[] = [];
  try {
    let yielded = 0;
    for await (const batch of loader) {
      if (kept.length < numCached) {
        const own = slotOf(batch) === undefined ? batch : ownedBatch(batch as Batch) as T;
        kept.push(own);
        views.push(undisposable(own));
        yield views[views.length - 1];
      } else yield batch;
      if (++yielded >= stopAfter || yielded >= replayAfter) break; // leaving the loop stops the real loader
    }
    for (let i = 0; yielded < stopAfter && views.length > 0; i++, yielded++) yield views[i % views.length];
  } finally {
    for (const b of kept) (b as Partial<Disposable>)[Symbol.dispose]?.();
  }
}

/** `x` behind a view whose `Symbol.dispose` does nothing (non-objects and non-disposables as they are). */
function undisposable<T>(x: T): T {
  if (
    x === null || typeof x !== "object" || typeof (x as Partial<Disposable>)[Symbol.dispose] !== "function"
  ) {
    return x;
  }
  return new Proxy(x, {
    get: (target, key) => key === Symbol.dispose ? () => {} : Reflect.get(target, key, target),
  });
}
