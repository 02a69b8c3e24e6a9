import assert from "node:assert/strict";
import {
  encodeSyntheticVideo,
  makeSyntheticDataset,
  patternBits,
  readPattern,
} from "../../src/prep/synthetic.ts";
import { datasetFromDirectory } from "../../src/dataset/dataset.ts";

async function ffmpegRgb(path: string, w: number, h: number): Promise<Uint8Array> {
  const out = await new Deno.Command("ffmpeg", {
    args: [
      "-v",
      "error",
      "-i",
      path,
      "-vf",
      `scale=${w}:${h}:flags=bilinear`,
      "-f",
      "rawvideo",
      "-pix_fmt",
      "rgb24",
      "-",
    ],
    stdout: "piped",
  }).output();
  assert.equal(out.code, 0);
  return out.stdout;
}

async function ffprobeFrames(path: string): Promise<{ key: boolean; pts: number }[]> {
  const out = await new Deno.Command("ffprobe", {
    args: [
      "-v",
      "error",
      "-select_streams",
      "v:0",
      "-show_entries",
      "frame=key_frame,pts_time",
      "-of",
      "json",
      path,
    ],
    stdout: "piped",
  }).output();
  const j = JSON.parse(new TextDecoder().decode(out.stdout));
  return j.frames.map((f: { key_frame: number; pts_time: string }) => ({
    key: f.key_frame === 1,
    pts: Number(f.pts_time),
  }));
}

Deno.test("pattern bits: label, frame index and check row", () => {
  const bits = patternBits(0b10100001, 0x1234);
  const byte = (r: number) => bits.slice(r * 8, r * 8 + 8).reduce((a, b) => (a << 1) | (b ? 1 : 0), 0);
  assert.deepEqual([byte(0), byte(1), byte(2), byte(3)], [
    0b10100001,
    0x12,
    0x34,
    0b10100001 ^ 0x34 ^ 0x5a,
  ]);
});

Deno.test("encoded synthetic video: ffprobe sees every frame, a keyframe per GOP, and the pattern survives resizing", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sluice-syn-" });
  try {
    const path = `${dir}/v.mp4`;
    const encoder = encodeSyntheticVideo(path, { label: 37, frames: 50, fps: 25, gop: 10 });
    const frames = await ffprobeFrames(path);
    assert.equal(frames.length, 50);
    assert.deepEqual(
      frames.map((f) => f.pts),
      Array.from({ length: 50 }, (_, i) => i / 25).map((t) => Number(t.toFixed(6))),
    );
    if (encoder === "libx264") {
      assert.deepEqual(frames.flatMap((f, i) => f.key ? [i] : []), [0, 10, 20, 30, 40]);
    }
    for (const [w, h] of [[320, 240], [112, 112], [64, 48]]) {
      const rgb = await ffmpegRgb(path, w, h);
      const n = rgb.length / (w * h * 3);
      assert.equal(n, 50);
      for (let i = 0; i < n; i++) {
        assert.deepEqual(
          readPattern(rgb, w, h, i * w * h * 3),
          { label: 37, frameIndex: i },
          `${w}x${h} frame ${i}`,
        );
      }
    }
    assert.equal(
      readPattern(new Uint8Array(64 * 48 * 3).fill(128), 64, 48),
      null,
      "a flat frame is not a pattern",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("synthetic dataset: directory labels match the labels drawn in the frames", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sluice-syn-" });
  try {
    const progress: number[] = [];
    makeSyntheticDataset(dir, {
      videos: 5,
      classes: 3,
      durationSec: 0.4,
      width: 64,
      height: 48,
      onProgress: (d) => progress.push(d),
    });
    assert.deepEqual(progress, [1, 2, 3, 4, 5]);
    const ds = await datasetFromDirectory(dir);
    assert.deepEqual(ds.classes, ["class_00", "class_01", "class_02"]);
    assert.equal(ds.items.length, 5);
    for (const item of ds.items) {
      const rgb = await ffmpegRgb(item.path, 64, 48);
      assert.equal(readPattern(rgb, 64, 48)?.label, item.label, item.path);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
