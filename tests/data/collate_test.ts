import assert from "node:assert/strict";
import { collate, type DecodedClip } from "../../src/data/collate.ts";

// 2×2 frames whose every byte encodes (clip, frame, channel, pixel) so any misplacement shows.
function clip(id: number, frames: number, planar: boolean): DecodedClip {
  const W = 2, H = 2, data = new Uint8Array(frames * W * H * 3);
  for (let t = 0; t < frames; t++) {
    for (let p = 0; p < W * H; p++) {
      for (let c = 0; c < 3; c++) {
        const i = planar ? t * 12 + c * 4 + p : t * 12 + p * 3 + c;
        data[i] = id * 64 + t * 16 + c * 4 + p;
      }
    }
  }
  return {
    meta: { path: `v${id}.mp4`, video: id, label: 10 + id, start: id, end: id + 1 },
    data,
    pts: Array.from({ length: frames }, (_, t) => id + t / 10),
    width: W,
    height: H,
  };
}

Deno.test("BTHWC: frames back to back per clip, labels, metadata, short clips padded with their last frame", () => {
  const b = collate([clip(0, 3, false), clip(1, 2, false)], 3, "BTHWC");
  assert.deepEqual(b.shape, [2, 3, 2, 2, 3]);
  assert.deepEqual([...b.labels], [10, 11]);
  for (let bi = 0; bi < 2; bi++) {
    for (let t = 0; t < 3; t++) {
      for (let p = 0; p < 4; p++) {
        for (let c = 0; c < 3; c++) {
          const src = bi === 1 ? Math.min(t, 1) : t;
          assert.equal(b.data[(((bi * 3 + t) * 2 * 2) + p) * 3 + c], bi * 64 + src * 16 + c * 4 + p);
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
    pts: [1, 1.1, 1.1],
    padded: 1,
  });
  assert.equal(b.clips[0].padded, 0);
});

Deno.test("BCTHW: planar clips regrouped as [B, 3, T, H, W]", () => {
  const b = collate([clip(0, 2, true), clip(1, 2, true)], 2, "BCTHW");
  assert.deepEqual(b.shape, [2, 3, 2, 2, 2]);
  for (let bi = 0; bi < 2; bi++) {
    for (let c = 0; c < 3; c++) {
      for (let t = 0; t < 2; t++) {
        for (let p = 0; p < 4; p++) {
          assert.equal(b.data[((bi * 3 + c) * 2 + t) * 4 + p], bi * 64 + t * 16 + c * 4 + p);
        }
      }
    }
  }
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
