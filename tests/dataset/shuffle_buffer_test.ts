import assert from "node:assert/strict";
import { ShuffleBuffer } from "../../src/dataset/shuffle_buffer.ts";

/** 10 videos of 4 clips, grouped by video as the sampler plans them: "v:c". */
const grouped = Array.from({ length: 40 }, (_, i) => `${Math.floor(i / 4)}:${i % 4}`);

function run(size: number, seed: number, epoch: number, chunk = 4): string[] {
  const buf = new ShuffleBuffer<string>(size, seed, grouped.length);
  const out: string[] = [];
  for (let i = 0; i < grouped.length; i += chunk) out.push(...buf.push(epoch, grouped.slice(i, i + chunk)));
  assert.equal(buf.length, 0, "the last item of the epoch empties the buffer");
  return out;
}

Deno.test("shuffle buffer: every item exactly once; same seed and epoch, same order; videos interleave", () => {
  const a = run(16, 3, 0);
  assert.deepEqual([...a].sort(), [...grouped].sort());
  assert.deepEqual(run(16, 3, 0), a);
  assert.deepEqual(run(16, 3, 0, 1), a, "the order does not depend on how items are chunked");
  assert.notDeepEqual(run(16, 3, 1), a, "epochs differ");
  assert.notDeepEqual(run(16, 4, 0), a, "seeds differ");
  // Batches of 4 from the grouped plan hold one video each; through the buffer they mix videos.
  const videosPerBatch = (xs: string[]) =>
    Array.from(
      { length: xs.length / 4 },
      (_, b) => new Set(xs.slice(b * 4, b * 4 + 4).map((x) => x.split(":")[0])).size,
    );
  assert.deepEqual(videosPerBatch(grouped), Array(10).fill(1));
  const mixed = videosPerBatch(a);
  assert.ok(mixed.reduce((s, n) => s + n, 0) / mixed.length >= 2.5, `videos per batch ${mixed}`);
  // Memory bound: at most `size` items are held at any time.
  const buf = new ShuffleBuffer<string>(16, 3, grouped.length);
  let held = 0;
  for (let i = 0; i < 36; i += 4) {
    buf.push(0, grouped.slice(i, i + 4));
    held = Math.max(held, buf.length);
  }
  assert.equal(held, 16);
});

Deno.test("shuffle buffer: size 0 passes items through; a new epoch drops what a stopped one left behind", () => {
  assert.deepEqual(run(0, 3, 0), grouped);
  const buf = new ShuffleBuffer<string>(8, 1, grouped.length);
  buf.push(0, grouped.slice(0, 6));
  assert.equal(buf.length, 6);
  const next = buf.push(1, grouped.slice(0, 4));
  assert.deepEqual(next, []);
  assert.equal(buf.length, 4);
  assert.throws(() => new ShuffleBuffer(-1, 0, 1), /size must be an integer >= 0/);
});
