import assert from "node:assert/strict";
import { SUBSTITUTE_ATTEMPTS, substitutePositions } from "../../src/loader/batch/replace.ts";
import { ClipSampler } from "../../src/dataset/sampler.ts";

const videos = Array.from({ length: 10 }, () => ({ start: 0, end: 10 }));

Deno.test("substitutes: seeded by (seed, epoch, position), other videos first, distinct, never the failed clip", () => {
  const plan = new ClipSampler(videos, { seed: 3, clipsPerVideo: 4, rank: 0, worldSize: 1 }).epoch(2);
  for (const position of [0, 7, 39]) {
    const a = substitutePositions(plan, position, 3, 2);
    assert.deepEqual(substitutePositions(plan, position, 3, 2), a, "deterministic");
    assert.equal(a.length, SUBSTITUTE_ATTEMPTS);
    assert.equal(new Set(a).size, a.length);
    assert.ok(!a.includes(position));
    assert.ok(a.every((p) => plan[p].video !== plan[position].video), "a broken file's own clips come last");
    assert.notDeepEqual(substitutePositions(plan, position, 3, 3), a, "epochs differ");
    assert.notDeepEqual(substitutePositions(plan, position, 4, 2), a, "seeds differ");
  }
  assert.notDeepEqual(substitutePositions(plan, 0, 3, 2), substitutePositions(plan, 1, 3, 2));
});

Deno.test("substitutes: a one-video plan falls back to the video's other clips; a one-clip plan has none", () => {
  const one = new ClipSampler([{ start: 0, end: 10 }], { seed: 1, clipsPerVideo: 5, rank: 0, worldSize: 1 })
    .epoch(0);
  const s = substitutePositions(one, 2, 1, 0);
  assert.deepEqual([...s].sort(), [0, 1, 3, 4]);
  const single = new ClipSampler([{ start: 0, end: 10 }], { seed: 1, rank: 0, worldSize: 1 }).epoch(0);
  assert.deepEqual(substitutePositions(single, 0, 1, 0), []);
});
