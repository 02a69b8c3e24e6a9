import assert from "node:assert/strict";
import { cacheLoader } from "../../src/data/cache_loader.ts";
import { InvalidArgumentError } from "../../src/errors.ts";

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
