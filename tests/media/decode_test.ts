import assert from "node:assert/strict";
import { decodeVideo, releaseDecoder } from "../../src/media/decode.ts";
import { frameAt, type PixelFormat } from "../../src/media/frames.ts";
import { VideoPackets } from "../../src/media/packets.ts";
import { InvalidArgumentError, MediaError } from "../../src/errors.ts";
import { WorkerPool } from "../../src/pipeline/worker_pool.ts";
import { readPackets } from "../helpers/read_packets.ts";
import { assertSameBytes, cliRaw, probeFrameTimes, psnr, sameBytes } from "../helpers/decode_oracles.ts";
import {
  generateClip,
  hasFfmpegCliSync,
  lacksDecoder,
  manifestEntry,
  sharedMedia,
} from "../helpers/media.ts";

const cli = hasFfmpegCliSync();

/** Shared files decoded in full and compared with ffprobe and the ffmpeg CLI (stream index used). */
const FULL_DECODE: [string, number][] = [
  ["h264_nasa_bframes_aac.mp4", 0],
  ["h264_opus_pancake.mkv", 0],
  ["h264_rot90_3frames.mov", 0],
  ["hevc10_dolbyvision_iphone.mov", 0],
  ["vp9_odd_161x121.webm", 0],
  ["vp9_opus_bbb.webm", 0],
  ["av1_aac.mp4", 0],
  ["av1_1frame_64x64.mp4", 0],
];

for (const [file, streamIndex] of FULL_DECODE) {
  const path = sharedMedia(file);
  Deno.test({
    name: `decodeVideo: ${file} full decode = ffprobe frame count and pts, rgb24 = ffmpeg CLI`,
    ignore: path === null || !cli || (file.startsWith("av1") && lacksDecoder("av1")),
    fn: async () => {
      const packets = readPackets(path!, { streamIndex });
      const frames = await decodeVideo(packets);
      const times = await probeFrameTimes(path!, streamIndex);
      assert.equal(frames.shape[0], times.length, "frame count = ffprobe -show_frames");
      const expected = manifestEntry(file).frames_decoded_count_frames;
      if (expected !== null && streamIndex === 0) {
        assert.equal(frames.shape[0], expected, "MANIFEST count_frames");
      }
      for (let i = 0; i < times.length; i++) {
        assert.ok(
          Math.abs(frames.pts[i] - times[i]) < 2e-6,
          `frame ${i}: pts ${frames.pts[i]} vs ffprobe ${times[i]}`,
        );
      }
      assert.deepEqual(frames.shape.slice(1), [packets.height, packets.width, 3]);
      // Same conversion path (swscale bilinear, the frame's matrix and range): byte-identical.
      const bilinear = await cliRaw(path!, { streamIndex, filter: "scale=flags=bilinear", pixFmt: "rgb24" });
      assertSameBytes(frames.data, bilinear, "rgb24 = ffmpeg -vf scale=flags=bilinear -pix_fmt rgb24");
      // The CLI's own default conversion: PSNR >= 45 dB per frame.
      const plain = await cliRaw(path!, { streamIndex, pixFmt: "rgb24" });
      assert.equal(plain.length, frames.data.length);
      for (let i = 0; i < frames.shape[0]; i++) {
        const ref = plain.subarray(i * frames.frameSize, (i + 1) * frames.frameSize);
        const db = psnr(frameAt(frames, i), ref);
        assert.ok(db >= 45, `frame ${i}: PSNR ${db.toFixed(1)} dB < 45 vs ffmpeg -pix_fmt rgb24`);
      }
    },
  });
}

const FORMATS: { format: PixelFormat; cli: string }[] = [
  { format: "bgr24", cli: "bgr24" },
  { format: "gray", cli: "gray" },
  { format: "yuv420p", cli: "yuv420p" },
  { format: "rgb24-planar", cli: "gbrp" },
];

for (const { format, cli: cliFmt } of FORMATS) {
  for (const file of ["vp9_odd_161x121.webm", "hevc10_dolbyvision_iphone.mov"]) {
    const path = sharedMedia(file);
    Deno.test({
      name: `decodeVideo: ${file} as ${format} = ffmpeg CLI -pix_fmt ${cliFmt}`,
      ignore: path === null || !cli,
      fn: async () => {
        const frames = await decodeVideo(readPackets(path!), { pixelFormat: format });
        const ref = await cliRaw(path!, { filter: "scale=flags=bilinear", pixFmt: cliFmt });
        const { width: w, height: h } = frames;
        if (format === "rgb24-planar") {
          // gbrp planes are G, B, R; sluice's are R, G, B.
          assert.deepEqual(frames.shape, [frames.shape[0], 3, h, w]);
          const a = w * h;
          for (let t = 0; t < frames.shape[0]; t++) {
            const mine = frameAt(frames, t), theirs = ref.subarray(t * 3 * a, (t + 1) * 3 * a);
            assert.ok(sameBytes(mine.subarray(0, a), theirs.subarray(2 * a, 3 * a)), `R plane of frame ${t}`);
            assert.ok(sameBytes(mine.subarray(a, 2 * a), theirs.subarray(0, a)), `G plane of frame ${t}`);
            assert.ok(
              sameBytes(mine.subarray(2 * a, 3 * a), theirs.subarray(a, 2 * a)),
              `B plane of frame ${t}`,
            );
          }
          return;
        }
        assertSameBytes(frames.data, ref, `${format} bytes = ffmpeg rawvideo ${cliFmt}`);
        if (format === "yuv420p") {
          const cw = Math.ceil(w / 2), ch = Math.ceil(h / 2);
          assert.equal(frames.frameSize, w * h + 2 * cw * ch);
          if (w % 2 === 1 || h % 2 === 1) assert.deepEqual(frames.shape, [frames.shape[0], frames.frameSize]);
          else assert.deepEqual(frames.shape, [frames.shape[0], (h * 3) / 2, w]);
        }
        if (format === "gray") assert.deepEqual(frames.shape.slice(1), [h, w, 1]);
      },
    });
  }
}

Deno.test({
  name: "decodeVideo: resize to 112x112 rgb24 = ffmpeg -vf scale=112:112:flags=bilinear",
  ignore: !cli,
  fn: async () => {
    const clip = await generateClip({ width: 340, height: 256, bframes: 2, durationSec: 1 });
    const frames = await decodeVideo(readPackets(clip), { width: 112, height: 112 });
    assert.deepEqual(frames.shape, [25, 112, 112, 3]);
    const ref = await cliRaw(clip, { filter: "scale=112:112:flags=bilinear", pixFmt: "rgb24" });
    assertSameBytes(frames.data, ref, "112x112 bilinear = ffmpeg -vf scale=112:112");
    // One dimension given: the other keeps the aspect ratio (340x256 -> 112x84).
    const half = await decodeVideo(readPackets(clip), { width: 112, numFrames: 2 });
    assert.deepEqual(half.shape, [2, 84, 112, 3]);
  },
});

Deno.test({
  name: "decodeVideo: frameRate resampling matches ffmpeg -vf fps=N (frame count and pixels)",
  ignore: !cli,
  fn: async () => {
    // 2 s at 25 fps, resampled down (drops) and up (duplicates); 7 and 30 are not divisors of 25.
    const clip = await generateClip({ width: 160, height: 120, durationSec: 2, bframes: 2 });
    for (const fps of [7, 12.5, 30]) {
      const frames = await decodeVideo(readPackets(clip), { frameRate: fps });
      const ref = await cliRaw(clip, {
        filter: `fps=${fps},scale=flags=bilinear`,
        pixFmt: "rgb24",
        vsync: "cfr",
      });
      const refCount = ref.length / frames.frameSize;
      assert.equal(frames.shape[0], refCount, `fps=${fps}: frame count vs ffmpeg`);
      assertSameBytes(frames.data, ref, `fps=${fps}: pixels vs ffmpeg`);
      for (let i = 1; i < frames.pts.length; i++) {
        assert.ok(Math.abs(frames.pts[i] - frames.pts[i - 1] - 1 / fps) < 1e-9, "output pts step 1/fps");
      }
    }
  },
});

Deno.test({
  name: "decodeVideo: numFrames stops early, and says when fewer exist",
  ignore: !cli,
  fn: async () => {
    const clip = await generateClip({ width: 160, height: 120, durationSec: 1, bframes: 2 });
    const all = await decodeVideo(readPackets(clip));
    const five = await decodeVideo(readPackets(clip), { numFrames: 5 });
    assert.equal(five.shape[0], 5);
    assert.equal(five.short, false);
    assert.ok(sameBytes(five.data, all.data.subarray(0, 5 * all.frameSize)));
    assert.deepEqual(Array.from(five.pts), Array.from(all.pts.slice(0, 5)));
    const many = await decodeVideo(readPackets(clip), { numFrames: 1000 });
    assert.equal(many.shape[0], all.shape[0]);
    assert.equal(many.short, true);
  },
});

Deno.test({
  name: "decodeVideo: skipNonRef skips B-frames; the frames it returns are the full decode's",
  ignore: !cli,
  fn: async () => {
    // x264 with -bf 2 and no b-pyramid: every B-frame is a non-reference frame.
    const clip = await generateClip({
      width: 160,
      height: 120,
      durationSec: 2,
      bframes: 2,
      extraArgs: ["-x264-params", "b-pyramid=0"],
    });
    const all = await decodeVideo(readPackets(clip));
    const sparse = await decodeVideo(readPackets(clip), { skipNonRef: true });
    assert.ok(sparse.shape[0] < all.shape[0] && sparse.shape[0] > 0, `${sparse.shape[0]} of ${all.shape[0]}`);
    for (let i = 0; i < sparse.shape[0]; i++) {
      const j = all.pts.indexOf(sparse.pts[i]);
      assert.ok(j >= 0, `pts ${sparse.pts[i]} is a frame of the full decode`);
      assert.ok(sameBytes(frameAt(sparse, i), frameAt(all, j)), `frame at ${sparse.pts[i]}`);
    }
    // The cached decoder goes back to decoding everything.
    const again = await decodeVideo(readPackets(clip));
    assert.ok(sameBytes(again.data, all.data));
  },
});

Deno.test({
  name: "decodeVideo: rotation is reported, not applied",
  ignore: sharedMedia("h264_rot90_3frames.mov") === null,
  fn: async () => {
    const frames = await decodeVideo(readPackets(sharedMedia("h264_rot90_3frames.mov")!));
    assert.equal(frames.rotation, manifestEntry("h264_rot90_3frames.mov").rotation_deg);
    assert.deepEqual(frames.shape, [3, 320, 568, 3]); // coded orientation
  },
});

Deno.test({
  name: "decodeVideo: the cached decoder is reused across calls and codecs without changing output",
  ignore: !cli,
  fn: async () => {
    const h264 = readPackets(await generateClip({ width: 160, height: 120, durationSec: 1, bframes: 2 }));
    const vp9 = readPackets(
      await generateClip({ codec: "libvpx-vp9", container: "webm", width: 96, height: 64, durationSec: 1 }),
    );
    const a1 = await decodeVideo(h264);
    const a2 = await decodeVideo(h264);
    const b1 = await decodeVideo(vp9);
    const a3 = await decodeVideo(h264);
    releaseDecoder();
    const b2 = await decodeVideo(vp9);
    assert.ok(sameBytes(a1.data, a2.data) && sameBytes(a1.data, a3.data));
    assert.ok(sameBytes(b1.data, b2.data));
    assert.equal(b1.shape[0], 25);
  },
});

Deno.test({
  name: "decodeVideo: in a WorkerPool Worker gives the same frames as on this thread",
  ignore: !cli,
  fn: async () => {
    const clip = await generateClip({ width: 160, height: 120, durationSec: 1, bframes: 2 });
    const local = await decodeVideo(readPackets(clip), { width: 64, height: 48 });
    const pool = new WorkerPool(new URL("../../src/media/decode_worker.ts", import.meta.url), { size: 1 });
    try {
      const packets = readPackets(clip);
      const remote = await pool.call<typeof local>(
        "decode",
        [packets, { width: 64, height: 48 }],
        packets.transferables(),
      );
      assert.equal(packets.data.byteLength, 0, "packets moved to the worker");
      assert.ok(sameBytes(remote.data, local.data));
      assert.deepEqual(Array.from(remote.pts), Array.from(local.pts));
      assert.deepEqual(remote.shape, local.shape);
    } finally {
      await pool.close();
    }
  },
});

// ------------------------------------------------------------------------------------------ bad input

Deno.test({
  name: "decodeVideo: broken_h264_corrupt_nal.mp4 gives the frames that decode and counts the failure",
  ignore: sharedMedia("broken_h264_corrupt_nal.mp4") === null,
  fn: async () => {
    const packets = readPackets(sharedMedia("broken_h264_corrupt_nal.mp4")!);
    const frames = await decodeVideo(packets, { width: 64, height: 36 });
    assert.equal(frames.shape[0], manifestEntry("broken_h264_corrupt_nal.mp4").frames_decoded_count_frames);
    assert.ok(frames.failedPackets >= 1, `failedPackets ${frames.failedPackets}`);
    await assert.rejects(decodeVideo(packets, { onCorrupt: "error" }), (e: unknown) => {
      assert.ok(e instanceof MediaError);
      assert.match(e.message, /broken_h264_corrupt_nal\.mp4: decode failed: packet \d+ .*corrupt/);
      return true;
    });
    // The decoder works again afterwards.
    assert.equal((await decodeVideo(packets, { width: 64, height: 36 })).shape[0], frames.shape[0]);
  },
});

Deno.test({
  name: "decodeVideo: garbage packets in the middle of a stream are counted, the rest decodes",
  ignore: !cli,
  fn: async () => {
    const clip = await generateClip({ width: 160, height: 120, durationSec: 2, gop: 10 });
    const good = readPackets(clip);
    const bad = readPackets(clip);
    // Overwrite packets 21..23 (inside the third GOP) with random bytes.
    const rnd = new Uint8Array(4096).map((_, i) => (i * 2654435761) >>> 24);
    for (let i = 21; i <= 23; i++) bad.packet(i).set(rnd.subarray(0, bad.sizes[i]));
    const a = await decodeVideo(good);
    const b = await decodeVideo(bad);
    assert.ok(b.failedPackets >= 1, `failedPackets ${b.failedPackets}`);
    assert.ok(b.shape[0] >= 40 && b.shape[0] <= a.shape[0], `${b.shape[0]} frames`);
    // The first two GOPs are untouched.
    assert.ok(sameBytes(b.data.subarray(0, 20 * b.frameSize), a.data.subarray(0, 20 * a.frameSize)));
  },
});

Deno.test("decodeVideo: an unsupported codec is a MediaError naming the source", async () => {
  const p = new VideoPackets({
    source: "made-up.bin",
    streamIndex: 0,
    codec: "none",
    codecId: 0x7ffff,
    codecTag: 0,
    profile: -99,
    level: -99,
    width: 64,
    height: 64,
    format: -1,
    bitsPerRawSample: 0,
    fieldOrder: 0,
    colorRange: 0,
    colorPrimaries: 2,
    colorTrc: 2,
    colorSpace: 2,
    chromaLocation: 0,
    sampleAspectRatio: [0, 1],
    extradata: new Uint8Array(0),
    timeBase: [1, 25],
    frameRate: 25,
    rotation: 0,
    startTimeSec: 0,
    window: null,
    pts: new BigInt64Array([0n]),
    dts: new BigInt64Array([0n]),
    duration: new BigInt64Array([1n]),
    flags: new Uint32Array([1]),
    offsets: new Uint32Array([0]),
    sizes: new Uint32Array([4]),
    data: new Uint8Array([0, 0, 0, 1]),
  });
  await assert.rejects(
    decodeVideo(p),
    (e: unknown) => e instanceof MediaError && /made-up\.bin.*no decoder/.test(e.message),
  );
  await assert.rejects(decodeVideo(p, { width: 0 }), InvalidArgumentError);
  await assert.rejects(decodeVideo(p, { frameRate: -1 }), InvalidArgumentError);
});

Deno.test({
  name: "decodeVideo: a header-only file fails with a MediaError before decoding, the process lives on",
  ignore: sharedMedia("broken_truncated_header.mkv") === null,
  fn: () => {
    assert.throws(() => readPackets(sharedMedia("broken_truncated_header.mkv")!), MediaError);
  },
});
