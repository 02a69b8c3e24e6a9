import assert from "node:assert/strict";
import { collate } from "../../src/loader/batch/collate.ts";
import type { DecodedClip } from "../../src/loader/clip/life.ts";

// 2×2 frames whose every sample encodes (clip, frame, channel, pixel) so any misplacement shows.
function clip(id: number, frames: number, planar: boolean, float = false): DecodedClip {
  const W = 2,
    H = 2,
    data = float ? new Float32Array(frames * W * H * 3) : new Uint8Array(frames * W * H * 3);
  for (let t = 0; t < frames; t++) {
    for (let p = 0; p < W * H; p++) {
      for (let c = 0; c < 3; c++) {
        const i = planar ? t * 12 + c * 4 + p : t * 12 + p * 3 + c;
        data[i] = id * 64 + t * 16 + c * 4 + p + (float ? 0.5 : 0);
      }
    }
  }
  const pts = Array.from({ length: frames }, (_, t) => id + t / 10);
  return {
    meta: {
      path: `v${id}.mp4`,
      video: id,
      label: 10 + id,
      start: id,
      end: id + 1,
      epoch: 0,
      position: id,
      seed: 7,
    },
    data,
    width: W,
    height: H,
    outcome: {
      pts,
      frameIndex: pts.map((_, t) => 10 * id + t),
      frameKind: pts.map((_, t) => t < frames - id ? "sampled" : "padded"),
      held: 0,
      padded: id,
      span: [id, id + frames / 10],
      rotation: 0,
      rotated: false,
      crop: [0, 0, 2, 2],
      flipped: false,
      decodedFrames: frames,
      skippedFrames: 0,
      passClips: 1,
    },
  };
}

Deno.test("BTHWC: frames back to back per clip, labels, metadata with the clip's outcome", () => {
  const b = collate([clip(0, 3, false), clip(1, 3, false)], 3, "BTHWC");
  assert.deepEqual(b.shape, [2, 3, 2, 2, 3]);
  assert.equal(b.dtype, "uint8");
  assert.deepEqual([...b.labels], [10, 11]);
  for (let bi = 0; bi < 2; bi++) {
    for (let t = 0; t < 3; t++) {
      for (let p = 0; p < 4; p++) {
        for (let c = 0; c < 3; c++) {
          assert.equal(b.data[(((bi * 3 + t) * 2 * 2) + p) * 3 + c], bi * 64 + t * 16 + c * 4 + p);
        }
      }
    }
  }
  assert.deepEqual(b.clips[1], {
    path: "v1.mp4",
    video: 1,
    label: 11,
    start: 1,
    end: 2,
    epoch: 0,
    position: 1,
    seed: 7,
    pts: [1, 1.1, 1.2],
    frameIndex: [10, 11, 12],
    frameKind: ["sampled", "sampled", "padded"],
    held: 0,
    padded: 1,
    span: [1, 1.3],
    rotation: 0,
    rotated: false,
    crop: [0, 0, 2, 2],
    flipped: false,
    decodedFrames: 3,
    skippedFrames: 0,
    passClips: 1,
  });
});

Deno.test("BCTHW: planar clips regrouped as [B, 3, T, H, W], bytes and floats alike", () => {
  for (const float of [false, true]) {
    const b = collate([clip(0, 2, true, float), clip(1, 2, true, float)], 2, "BCTHW");
    assert.deepEqual(b.shape, [2, 3, 2, 2, 2]);
    assert.equal(b.data instanceof Float32Array, float);
    assert.equal(b.dtype, float ? "float32" : "uint8");
    for (let bi = 0; bi < 2; bi++) {
      for (let c = 0; c < 3; c++) {
        for (let t = 0; t < 2; t++) {
          for (let p = 0; p < 4; p++) {
            assert.equal(
              b.data[((bi * 3 + c) * 2 + t) * 4 + p],
              bi * 64 + t * 16 + c * 4 + p + (float ? 0.5 : 0),
            );
          }
        }
      }
    }
  }
});

Deno.test("a clip with the wrong frame count, size or sample type is a bug, not a batch", () => {
  assert.throws(() => collate([clip(0, 2, false)], 3, "BTHWC"), /v0\.mp4 \[0, 1\) has 2 frames, the batch 3/);
  assert.throws(() => collate([clip(0, 2, false), clip(1, 2, false, true)], 2, "BTHWC"), /sample type/);
  assert.throws(() => collate([], 2, "BTHWC"), /no clips/);
});

Deno.test("a disposed batch frees its pixels and labels; shape and metadata stay", () => {
  const b = collate([clip(0, 2, false), clip(1, 2, false)], 2, "BTHWC");
  const pixels = b.data.buffer as ArrayBuffer;
  assert.equal(b.data.length, 2 * 2 * 2 * 2 * 3);
  {
    using _ = b;
  }
  assert.equal(pixels.detached, true);
  assert.equal(b.data.length, 0);
  assert.equal(b.labels.length, 0);
  assert.deepEqual(b.shape, [2, 2, 2, 2, 3]);
  assert.equal(b.clips[1].path, "v1.mp4");
  b[Symbol.dispose](); // twice is harmless
});

Deno.test("a mismatched clip is named by its file and window, in rounded seconds", () => {
  const odd = clip(1, 3, false);
  odd.meta.start = 1 / 3;
  odd.meta.end = 1 / 3 + 0.32;
  odd.width = 4;
  assert.throws(
    () => collate([clip(0, 3, false), odd], 3, "BTHWC"),
    { message: "collate: clip v1.mp4 [0.333, 0.653) is 4x2, batch is 2x2" },
  );
});
