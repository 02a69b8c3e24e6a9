import assert from "node:assert/strict";
import { ClipSampler, clipSeed, type SampledVideo } from "../../src/dataset/sampler.ts";
import { InvalidArgumentError } from "../../src/errors.ts";

const videos: SampledVideo[] = Array.from({ length: 11 }, (_, i) => ({
  start: 0,
  end: 4 + i * 0.5,
  keyframes: Array.from({ length: 8 + i }, (_, k) => k * 0.5),
}));

Deno.test("same seed and epoch give the same plan; epochs differ", () => {
  const a = new ClipSampler(videos, { seed: 7, clipsPerVideo: 2, clipDurationSec: 1, rank: 0, worldSize: 1 });
  const b = new ClipSampler(videos, { seed: 7, clipsPerVideo: 2, clipDurationSec: 1, rank: 0, worldSize: 1 });
  assert.deepEqual(a.epoch(3), b.epoch(3));
  assert.notDeepEqual(a.epoch(0).map((c) => c.video), a.epoch(1).map((c) => c.video));
  const c = new ClipSampler(videos, { seed: 8, clipsPerVideo: 2, clipDurationSec: 1, rank: 0, worldSize: 1 });
  assert.notDeepEqual(a.epoch(0), c.epoch(0));
});

Deno.test("one rank without shuffle covers every (video, clip) exactly once, in order", () => {
  const s = new ClipSampler(videos, {
    shuffle: false,
    clipsPerVideo: 3,
    clipDurationSec: 1,
    rank: 0,
    worldSize: 1,
  });
  const plan = s.epoch(0);
  assert.equal(plan.length, 33);
  assert.deepEqual(
    plan.map((c) => [c.video, c.clip]),
    Array.from({ length: 33 }, (_, i) => [Math.floor(i / 3), i % 3]),
  );
  assert.deepEqual(plan.map((c) => c.position), Array.from({ length: 33 }, (_, i) => i));
});

Deno.test("ranks get disjoint shards covering the dataset; pad and drop keep ranks equal", () => {
  for (const worldSize of [2, 3, 4]) {
    const n = videos.length; // 11: not a multiple of 2, 3 or 4
    const dropPlans = Array.from(
      { length: worldSize },
      (_, rank) => new ClipSampler(videos, { seed: 1, rank, worldSize, remainder: "drop" }).epoch(2),
    );
    const padPlans = Array.from(
      { length: worldSize },
      (_, rank) => new ClipSampler(videos, { seed: 1, rank, worldSize, remainder: "pad" }).epoch(2),
    );
    for (const p of dropPlans) assert.equal(p.length, Math.floor(n / worldSize));
    for (const p of padPlans) assert.equal(p.length, Math.ceil(n / worldSize));
    const dropped = dropPlans.flat().map((c) => c.video);
    assert.equal(new Set(dropped).size, dropped.length, "drop: shards are disjoint");
    assert.equal(dropped.length, n - (n % worldSize));
    const padded = padPlans.flat().map((c) => c.video);
    assert.deepEqual([...new Set(padded)].sort((a, b) => a - b), Array.from({ length: n }, (_, i) => i));
    assert.equal(padded.length - new Set(padded).size, (worldSize - (n % worldSize)) % worldSize);
  }
});

Deno.test("groupByVideo keeps a video's clips adjacent; without it clips are shuffled individually", () => {
  const grouped = new ClipSampler(videos, { seed: 2, clipsPerVideo: 3, rank: 0, worldSize: 1 }).epoch(0);
  for (let i = 0; i < grouped.length; i += 3) {
    assert.deepEqual(
      grouped.slice(i, i + 3).map((c) => [c.video, c.clip]),
      [0, 1, 2].map((c) => [grouped[i].video, c]),
    );
  }
  const loose = new ClipSampler(videos, {
    seed: 2,
    clipsPerVideo: 3,
    groupByVideo: false,
    rank: 0,
    worldSize: 1,
  });
  const plan = loose.epoch(0);
  assert.ok(plan.some((c, i) => i > 0 && c.video !== plan[i - 1].video && c.clip !== 0), "clips interleave");
  assert.equal(new Set(plan.map((c) => `${c.video}/${c.clip}`)).size, 33);
});

Deno.test("RANK and WORLD_SIZE come from the environment by default", () => {
  Deno.env.set("RANK", "1");
  Deno.env.set("WORLD_SIZE", "3");
  try {
    const s = new ClipSampler(videos, { seed: 4 });
    assert.equal(s.options.rank, 1);
    assert.equal(s.options.worldSize, 3);
    assert.deepEqual(s.epoch(0), new ClipSampler(videos, { seed: 4, rank: 1, worldSize: 3 }).epoch(0));
  } finally {
    Deno.env.delete("RANK");
    Deno.env.delete("WORLD_SIZE");
  }
});

Deno.test("random windows lie inside the video and have the clip duration", () => {
  const s = new ClipSampler(videos, {
    seed: 3,
    clipsPerVideo: 4,
    clipDurationSec: 1.5,
    rank: 0,
    worldSize: 1,
  });
  for (const c of s.epoch(0)) {
    const v = videos[c.video];
    assert.ok(c.start >= v.start && c.end <= v.end, `${c.start}..${c.end} inside ${v.start}..${v.end}`);
    assert.ok(Math.abs(c.end - c.start - 1.5) < 1e-9);
  }
});

Deno.test("uniform placement spreads clips from the start to the end of the video", () => {
  const s = new ClipSampler([{ start: 1, end: 11 }], {
    shuffle: false,
    placement: "uniform",
    clipsPerVideo: 3,
    clipDurationSec: 2,
    rank: 0,
    worldSize: 1,
  });
  assert.deepEqual(s.epoch(0).map((c) => [c.start, c.end]), [[1, 3], [5, 7], [9, 11]]);
  const one = new ClipSampler([{ start: 0, end: 10 }], {
    placement: "uniform",
    clipDurationSec: 2,
    rank: 0,
    worldSize: 1,
  });
  assert.deepEqual(one.epoch(0).map((c) => [c.start, c.end]), [[4, 6]]);
});

Deno.test("keyframe-aligned clips start at keyframes that leave room for the clip, never twice in a video's epoch", () => {
  const v: SampledVideo[] = [{ start: 0, end: 10, keyframes: [0, 2.4, 4.8, 7.2, 9.6] }];
  const plan = (clipsPerVideo: number, epoch: number) =>
    new ClipSampler(v, {
      seed: 5,
      clipsPerVideo,
      clipDurationSec: 2,
      keyframeAligned: true,
      rank: 0,
      worldSize: 1,
    })
      .epoch(epoch);
  for (let epoch = 0; epoch < 20; epoch++) {
    // Before: each clip drew its keyframe independently, so 3 clips of 4 fitting keyframes often shared one.
    const starts = plan(3, epoch).map((c) => c.start);
    for (const t of starts) assert.ok([0, 2.4, 4.8, 7.2].includes(t), `start ${t} is a fitting keyframe`);
    assert.equal(new Set(starts).size, 3, `epoch ${epoch}: distinct windows ${starts}`);
  }
  assert.notDeepEqual(plan(3, 0).map((c) => c.start).sort(), plan(3, 1).map((c) => c.start).sort());
  // More clips than fitting keyframes: the rest keep exact (unaligned) starts, all distinct.
  const many = plan(6, 0);
  assert.equal(many.filter((c) => [0, 2.4, 4.8, 7.2].includes(c.start)).length, 4);
  assert.equal(new Set(many.map((c) => c.start)).size, 6);
  const u = (keyframes: number[], clipsPerVideo: number) =>
    new ClipSampler([{ start: 0, end: 10, keyframes }], {
      shuffle: false,
      placement: "uniform",
      clipsPerVideo,
      clipDurationSec: 2,
      keyframeAligned: true,
      rank: 0,
      worldSize: 1,
    }).epoch(0).map((c) => c.start);
  // exact uniform starts 0, 4, 8 → keyframes at or before: 0, 2.4, 7.2
  assert.deepEqual(u([0, 2.4, 4.8, 7.2, 9.6], 3), [0, 2.4, 7.2]);
  // Before: 0, 4 and 8 all moved to keyframe 0 (the same window three times). Now: the next free keyframe.
  assert.deepEqual(u([0, 5, 9], 3), [0, 5, 8]);
});

Deno.test("each clip carries a seed of (seed, epoch, position), the same on every rank's copy of a plan", () => {
  const s = new ClipSampler(videos, { seed: 9, clipsPerVideo: 2, rank: 1, worldSize: 3 });
  const plan = s.epoch(4);
  assert.deepEqual(plan.map((c) => c.seed), plan.map((c) => clipSeed(9, 4, c.position)));
  assert.equal(new Set(plan.map((c) => c.seed)).size, plan.length);
  assert.notEqual(clipSeed(9, 4, 0), clipSeed(9, 4, 0, 1), "a substitute's seed differs from the clip's");
});

Deno.test("shuffleBuffer: defaults to max(64, 8 x clipsPerVideo) when grouping shuffled videos of 2+ clips, else 0", () => {
  // One clip per video (a manifest row, Kinetics-style): the plan is a full shuffle already, nothing to interleave.
  assert.equal(new ClipSampler(videos, {}).options.clipsPerVideo, 1);
  assert.equal(new ClipSampler(videos, {}).options.shuffleBuffer, 0);
  assert.equal(new ClipSampler(videos, { clipsPerVideo: 2 }).options.shuffleBuffer, 64);
  assert.equal(new ClipSampler(videos, { clipsPerVideo: 16 }).options.shuffleBuffer, 128);
  assert.equal(new ClipSampler(videos, { shuffle: false }).options.shuffleBuffer, 0);
  assert.equal(new ClipSampler(videos, { groupByVideo: false }).options.shuffleBuffer, 0);
  assert.equal(new ClipSampler(videos, { shuffleBuffer: 5 }).options.shuffleBuffer, 5);
  assert.throws(
    () => new ClipSampler(videos, { shuffleBuffer: -1 }),
    /shuffleBuffer must be an integer >= 0/,
  );
});

Deno.test("clips longer than the video take the whole video", () => {
  const s = new ClipSampler([{ start: 0.5, end: 2 }], { clipDurationSec: 5, rank: 0, worldSize: 1 });
  assert.deepEqual(s.epoch(0).map((c) => [c.start, c.end]), [[0.5, 2]]);
});

Deno.test("bad options are rejected with InvalidArgumentError", () => {
  assert.throws(() => new ClipSampler(videos, { rank: 2, worldSize: 2 }), InvalidArgumentError);
  assert.throws(() => new ClipSampler(videos, { clipsPerVideo: 0 }), InvalidArgumentError);
  assert.throws(() => new ClipSampler(videos, { clipDurationSec: -1 }), InvalidArgumentError);
  assert.throws(() => new ClipSampler([{ start: 2, end: 2 }]), InvalidArgumentError);
  assert.throws(() => new ClipSampler(videos, { rank: 0, worldSize: 1 }).epoch(-1), InvalidArgumentError);
});
