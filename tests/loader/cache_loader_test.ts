import assert from "node:assert/strict";
import { cacheLoader } from "../../src/loader/cache_loader.ts";
import { InvalidArgumentError } from "../../src/errors.ts";
import type { Batch } from "../../src/loader/batch/collate.ts";
import { videoClassificationLoader } from "../../src/loader/loader.ts";
import { makeSyntheticDataset } from "../helpers/synthetic.ts";

function counting(n: number): { it: AsyncIterable<number>; pulled: () => number; closed: () => boolean } {
  let pulled = 0, closed = false;
  const it = {
    async *[Symbol.asyncIterator]() {
      try {
        for (let i = 0; i < n; i++) {
          pulled++;
          yield i;
        }
      } finally {
        closed = true;
      }
    },
  };
  return { it, pulled: () => pulled, closed: () => closed };
}

async function collect<T>(g: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of g) out.push(x);
  return out;
}

Deno.test("yields real batches, then replays the first numCached until stopAfter, and stops the real loader", async () => {
  const src = counting(100);
  const got = await collect(cacheLoader(src.it, { numCached: 3, replayAfter: 5, stopAfter: 12 }));
  assert.deepEqual(got, [0, 1, 2, 3, 4, 0, 1, 2, 0, 1, 2, 0]);
  assert.equal(src.pulled(), 5);
  assert.ok(src.closed());
});

Deno.test("replay starts right after the cached batches by default; a short loader still replays", async () => {
  assert.deepEqual(await collect(cacheLoader(counting(100).it, { numCached: 2, stopAfter: 5 })), [
    0,
    1,
    0,
    1,
    0,
  ]);
  assert.deepEqual(await collect(cacheLoader(counting(2).it, { numCached: 4, stopAfter: 5 })), [
    0,
    1,
    0,
    1,
    0,
  ]);
  assert.deepEqual(await collect(cacheLoader(counting(100).it, { numCached: 2, stopAfter: 1 })), [0]);
});

Deno.test("bad options are rejected", async () => {
  await assert.rejects(
    () => collect(cacheLoader(counting(1).it, { numCached: 0, stopAfter: 1 })),
    InvalidArgumentError,
  );
  await assert.rejects(
    () => collect(cacheLoader(counting(1).it, { numCached: 3, replayAfter: 2, stopAfter: 4 })),
    InvalidArgumentError,
  );
});

Deno.test("kept batches survive the consumer's `using` and are replayed intact; the cache frees them at the end", async () => {
  const ds = await Deno.makeTempDir({ prefix: "sluice-cache-" });
  try {
    makeSyntheticDataset(ds, { videos: 2, classes: 2, durationSec: 1, fps: 25, width: 64, height: 48 });
    await using loader = await videoClassificationLoader({
      dataset: ds,
      batchSize: 1,
      sampler: { seed: 1, clipsPerVideo: 2 },
      clip: { numFrames: 2, width: 32, height: 32 },
      concurrency: { decode: 1 },
      log: () => {},
    });
    const sums: number[] = [], kept: Batch[] = [];
    // Before: replaying batch 0 threw "Cannot perform Construct on a detached ArrayBuffer" (using had freed it).
    for await (using batch of cacheLoader(loader, { numCached: 2, replayAfter: 3, stopAfter: 7 })) {
      assert.equal(batch.data.length, 2 * 32 * 32 * 3, "pixels intact");
      sums.push((batch.data as Uint8Array).reduce((a, b) => a + b, 0));
      if (kept.length < 3) kept.push(batch);
    }
    assert.deepEqual(sums.slice(3), [sums[0], sums[1], sums[0], sums[1]]);
    assert.equal(kept[2].data.length, 0, "a batch the cache did not keep is freed by using");
    assert.equal(kept[0].data.length, 0, "the cache freed its batches when the replay ended");
  } finally {
    await Deno.remove(ds, { recursive: true });
  }
});
