import assert from "node:assert/strict";
import { decodeVideo } from "../../src/media/decode.ts";
import { frameAt, type VideoFrames } from "../../src/media/frames.ts";
import { VideoPackets } from "../../src/media/packets.ts";
import { readPackets } from "../helpers/read_packets.ts";
import { framesOnScreen, sameBytes } from "../helpers/decode_oracles.ts";
import { generateClip, hasFfmpegCliSync, sharedMedia } from "../helpers/media.ts";
import { mulberry32 } from "../../src/dataset/random.ts";

const cli = hasFfmpegCliSync();

/** Asserts that `win` holds exactly the frames of `full` on screen during `[s, e)`, byte for byte. */
function assertWindow(full: VideoFrames, win: VideoFrames, [s, e]: [number, number]): void {
  const expected = framesOnScreen(Array.from(full.pts), [s, e]);
  assert.deepEqual(Array.from(win.pts), expected.map((i) => full.pts[i]), `pts of window [${s}, ${e})`);
  for (let k = 0; k < expected.length; k++) {
    assert.ok(
      sameBytes(frameAt(win, k), frameAt(full, expected[k])),
      `frame at ${win.pts[k]} of [${s}, ${e})`,
    );
  }
}

async function checkRandomWindows(
  path: string,
  seed: number,
  count: number,
  opts: { streamIndex?: number } = {},
) {
  const size = { width: 96, height: 72 };
  const full = await decodeVideo(readPackets(path, opts), size);
  const last = full.pts[full.pts.length - 1];
  const next = mulberry32(seed);
  for (let n = 0; n < count; n++) {
    const s = next() * last;
    const e = s + 0.05 + next() * 1.5;
    const win = await decodeVideo(readPackets(path, { ...opts, window: [s, e] }), size);
    assertWindow(full, win, [s, e]);
  }
}

Deno.test({
  name:
    "decode windows: random windows of a B-frame H.264 clip = the full decode's frames on screen in [s, e)",
  ignore: !cli,
  fn: async () => {
    const clip = await generateClip({ width: 160, height: 120, durationSec: 4, bframes: 3, gop: 25 });
    await checkRandomWindows(clip, 1, 12);
  },
});

Deno.test({
  name: "decode windows: windows starting on a non-keyframe and on exact frame times",
  ignore: !cli,
  fn: async () => {
    const clip = await generateClip({ width: 160, height: 120, durationSec: 3, bframes: 2, gop: 12 });
    const full = await decodeVideo(readPackets(clip));
    // 25 fps, keyframes every 12 frames: frame 13 (0.52 s) is a non-keyframe; [0.52, 0.6) holds frames 13 and 14;
    // [0.5, 1.3) starts with frame 12 (0.48 s), on screen at 0.5.
    for (
      const w of [[0.52, 0.6], [0.52, 0.52 + 1e-9], [0.5, 1.3], [0.0, 0.04], [2.9, 3.5]] as [number, number][]
    ) {
      const packets = readPackets(clip, { window: w });
      assert.ok((packets.flags[0] & 1) === 1, "window packets start at a keyframe");
      assertWindow(full, await decodeVideo(packets), w);
    }
  },
});

Deno.test({
  name: "decode windows: HEVC with B-frames and VP9 (alt-ref) random windows",
  ignore: !cli,
  fn: async () => {
    const hevc = await generateClip({
      codec: "libx265",
      width: 128,
      height: 96,
      durationSec: 3,
      bframes: 3,
      gop: 20,
    });
    await checkRandomWindows(hevc, 2, 6);
    const vp9 = await generateClip({
      codec: "libvpx-vp9",
      container: "webm",
      width: 128,
      height: 96,
      durationSec: 3,
      gop: 20,
    });
    await checkRandomWindows(vp9, 3, 6);
  },
});

Deno.test({
  name: "decode windows: shared B-frame file (h264_nasa_bframes_aac.mp4, stream 0) random windows",
  ignore: sharedMedia("h264_nasa_bframes_aac.mp4") === null,
  fn: async () => {
    await checkRandomWindows(sharedMedia("h264_nasa_bframes_aac.mp4")!, 4, 8, { streamIndex: 0 });
  },
});

Deno.test({
  name:
    "decode windows: frameRate on a window samples s + k/fps < e from the latest frame at or before the position",
  ignore: !cli,
  fn: async () => {
    const clip = await generateClip({ width: 160, height: 120, durationSec: 3, bframes: 2 });
    const full = await decodeVideo(readPackets(clip));
    const [s, e, fps] = [0.61, 2.2, 6];
    const win = await decodeVideo(readPackets(clip, { window: [s, e] }), { frameRate: fps });
    // Hand-computed expectation: positions s + k/6 < 2.2 → k = 0..9; position k shows the latest frame whose time t has
    // round((t - s)·fps) <= k, never a frame at or after e.
    assert.equal(win.shape[0], 10);
    for (let k = 0; k < 10; k++) {
      const position = s + k / fps;
      assert.ok(Math.abs(win.pts[k] - position) < 1e-9);
      let pick = -1;
      for (let i = 0; i < full.pts.length; i++) {
        if (full.pts[i] < e && Math.floor((full.pts[i] - s) * fps + 0.5 + 1e-9) <= k) pick = i;
      }
      assert.ok(sameBytes(frameAt(win, k), frameAt(full, pick)), `position ${k} shows frame ${pick}`);
    }
  },
});

Deno.test({
  name: "decode windows: decoding deserialize(serialize(p)) gives byte-identical frames",
  ignore: !cli,
  fn: async () => {
    const clip = await generateClip({ width: 160, height: 120, durationSec: 2, bframes: 2 });
    for (const window of [undefined, [0.3, 1.1] as [number, number]]) {
      const p = readPackets(clip, { window });
      const a = await decodeVideo(p);
      const b = await decodeVideo(VideoPackets.deserialize(p.serialize()));
      assert.ok(a.shape[0] > 0);
      assert.deepEqual(b.shape, a.shape);
      assert.deepEqual(Array.from(b.pts), Array.from(a.pts));
      assert.ok(sameBytes(b.data, a.data));
    }
  },
});
