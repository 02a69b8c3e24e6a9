import assert from "node:assert/strict";
import { outputSize, transcodeVideoSync } from "../../src/prep/transcode.ts";
import { ENCODERS, findEncoder, fpsRational } from "../../src/prep/encoder.ts";
import { EncoderNotFoundError, InvalidArgumentError, MediaError } from "../../src/errors.ts";
import { encodeSyntheticVideo, readPattern } from "../../src/prep/synthetic.ts";
import {
  ffmpegDecodeRaw,
  ffprobeInfo,
  ffprobePackets,
  generateClip,
  hasFfmpegCliSync,
  parseRational,
  runCli,
} from "../helpers/media.ts";
import { psnr } from "../helpers/decode_oracles.ts";
import { withTempDir } from "../helpers/temp_dir.ts";

const noCli = !hasFfmpegCliSync();
if (noCli) console.log("transcode_test: ffmpeg/ffprobe CLI not found: the oracle tests are skipped");

const withDir = <T>(fn: (dir: string) => Promise<T>) => withTempDir("sluice-transcode-", fn);

/** ffprobe's view of an output: size, rate, codec, rotation, frame count and keyframe frame numbers. */
async function probeOutput(path: string) {
  const info = await ffprobeInfo(path);
  const v = info.streams.find((s) => s.codec_type === "video")!;
  const packets = await ffprobePackets(path, v.index);
  const fps = parseRational(v.avg_frame_rate);
  const keyFrames = packets.filter((p) => p.keyframe).map((p) => Math.round(p.ptsTime! * fps)).sort((a, b) =>
    a - b
  );
  return {
    codec: v.codec_name,
    width: v.width,
    height: v.height,
    fps,
    frames: packets.length,
    keyFrames,
    rotation: v.side_data_list?.find((d) => d.rotation !== undefined)?.rotation ?? 0,
    audio: info.streams.filter((s) => s.codec_type === "audio").length,
  };
}

for (const codec of ["h264", "vp9", "av1"] as const) {
  Deno.test({
    name:
      `transcode to ${codec}: ffprobe sees the requested height, width from the aspect ratio, fps and GOP`,
    ignore: noCli,
    fn: () =>
      withDir(async (dir) => {
        const src = await generateClip({ width: 320, height: 240, fps: 30, durationSec: 2, gop: 48 });
        const out = `${dir}/out.mp4`;
        const r = transcodeVideoSync(src, out, { height: 96, fps: 12, codec, gop: 6 });
        const p = await probeOutput(out);
        assert.equal(p.codec, codec);
        assert.equal(p.height, 96);
        assert.equal(p.width, 128); // 96 · 320/240
        assert.equal(p.fps, 12);
        assert.equal(p.frames, 24); // 2 s at 12 fps
        assert.deepEqual(p.keyFrames, [0, 6, 12, 18]);
        assert.equal(p.audio, 0);
        assert.deepEqual(r.keyframes, [0, 0.5, 1, 1.5]);
        assert.equal(r.frames, 24);
        assert.ok(ENCODERS[codec].some((e) => e.name === r.encoder));
      }),
  });
}

Deno.test({
  name: "transcode applies the display rotation to the pixels (oracle: ffmpeg's autorotate) and leaves none",
  ignore: noCli,
  fn: () =>
    withDir(async (dir) => {
      // A display matrix in the MP4 header (stream copy keeps the rotate tag as one): ffprobe reports 90.
      const plain = await generateClip({ width: 320, height: 240, fps: 10, durationSec: 1 });
      const src = `${dir}/rotated.mp4`;
      const made = await runCli("ffmpeg", [
        "-v",
        "error",
        "-i",
        plain,
        "-c",
        "copy",
        "-metadata:s:v:0",
        "rotate=90",
        src,
      ]);
      assert.equal(made.code, 0, made.stderr);
      assert.equal((await probeOutput(src)).rotation, 90);
      const out = `${dir}/out.mp4`;
      const r = transcodeVideoSync(src, out, { height: 128, fps: 10, codec: "h264", gop: 10, crf: 10 });
      assert.equal(r.rotation, 90);
      const p = await probeOutput(out);
      assert.equal(p.rotation, 0);
      assert.deepEqual([p.width, p.height], [96, 128]); // displayed 240×320 → 96×128
      const ours = await ffmpegDecodeRaw(out, { pixFmt: "gray" });
      const right = await ffmpegDecodeRaw(src, { pixFmt: "gray", filter: "scale=96:128" });
      // The same pixels turned the other way: what a wrong sign would give.
      const wrong = await ffmpegDecodeRaw(src, {
        pixFmt: "gray",
        filter: "transpose=2,transpose=2,scale=96:128",
      });
      assert.equal(ours.length, right.length);
      const good = psnr(ours, right), bad = psnr(ours, wrong);
      assert.ok(good > 28, `PSNR against the autorotated source is ${good.toFixed(1)} dB`);
      assert.ok(good > bad + 8, `right ${good.toFixed(1)} dB vs turned the wrong way ${bad.toFixed(1)} dB`);
    }),
});

/** Rounds halves away from zero, as FFmpeg's fps filter does (a 25→15 fps frame can fall on a half). */
const roundNear = (x: number) => Math.floor(x + 0.5 + 1e-9);

Deno.test({
  name:
    "transcode picks frames by the fps rule, the same in one chunk or many (frame numbers drawn in the pixels)",
  ignore: noCli,
  fn: () =>
    withDir(async (dir) => {
      const src = `${dir}/pattern.mp4`;
      encodeSyntheticVideo(src, {
        label: 7,
        frames: 50,
        fps: 25,
        width: 320,
        height: 240,
        encoder: "libx264",
      });
      // Hand-computed: slot k (t = k/15) shows the last source frame i (t = i/25) with round(i·15/25) <= k.
      const expected = Array.from({ length: 30 }, (_, k) => {
        let last = 0;
        for (let i = 0; i < 50; i++) if (roundNear((i * 15) / 25) <= k) last = i;
        return last;
      });
      for (const chunkSec of [10, 0.4]) {
        const out = `${dir}/out_${chunkSec}.mp4`;
        transcodeVideoSync(src, out, { height: 128, fps: 15, codec: "h264", gop: 15, crf: 12, chunkSec });
        const [w, h] = [170, 128]; // 128 · 320/240 = 170.7 → the nearest even width
        const rgb = await ffmpegDecodeRaw(out, { pixFmt: "rgb24" });
        assert.equal(rgb.length, 30 * w * h * 3, `chunkSec ${chunkSec}: frame count`);
        const got = Array.from({ length: 30 }, (_, k) => readPattern(rgb, w, h, k * w * h * 3));
        assert.ok(got.every((g) => g?.label === 7), `chunkSec ${chunkSec}: pattern unreadable`);
        assert.deepEqual(got.map((g) => g!.frameIndex), expected, `chunkSec ${chunkSec}`);
      }
    }),
});

Deno.test({
  name: "transcode drops audio unless asked, then copies it unchanged (same codec and packet count)",
  ignore: noCli,
  fn: () =>
    withDir(async (dir) => {
      const src = await generateClip({ durationSec: 2, audio: true, extraArgs: ["-c:a", "aac"] });
      const srcAudio = (await ffprobeInfo(src)).streams.find((s) => s.codec_type === "audio")!;
      const srcPackets = await ffprobePackets(src, srcAudio.index);
      transcodeVideoSync(src, `${dir}/mute.mp4`, { height: 64, fps: 10, codec: "h264", gop: 10 });
      assert.equal((await probeOutput(`${dir}/mute.mp4`)).audio, 0);
      const r = transcodeVideoSync(src, `${dir}/audio.mp4`, {
        height: 64,
        fps: 10,
        codec: "h264",
        gop: 10,
        audio: true,
      });
      assert.equal(r.audio, true);
      const info = await ffprobeInfo(`${dir}/audio.mp4`);
      const a = info.streams.find((s) => s.codec_type === "audio")!;
      assert.equal(a.codec_name, srcAudio.codec_name);
      const outPackets = await ffprobePackets(`${dir}/audio.mp4`, a.index);
      assert.deepEqual(
        outPackets.map((p) => p.size),
        srcPackets.filter((p) => (p.pts ?? 0) >= 0).map((p) => p.size),
      );
    }),
});

Deno.test({
  name: "transcode of a start/end range covers that range only",
  ignore: noCli,
  fn: () =>
    withDir(async (dir) => {
      const src = `${dir}/pattern.mp4`;
      encodeSyntheticVideo(src, {
        label: 3,
        frames: 100,
        fps: 25,
        width: 320,
        height: 240,
        encoder: "libx264",
      });
      const out = `${dir}/range.mp4`;
      const r = transcodeVideoSync(src, out, {
        height: 128,
        fps: 25,
        codec: "h264",
        gop: 25,
        crf: 12,
        start: 1,
        end: 2.5,
      });
      assert.equal(r.frames, 38); // ceil(1.5 s · 25)
      const rgb = await ffmpegDecodeRaw(out, { pixFmt: "rgb24" });
      const first = readPattern(rgb, 170, 128, 0), last = readPattern(rgb, 170, 128, 37 * 170 * 128 * 3);
      assert.equal(first?.frameIndex, 25);
      assert.equal(last?.frameIndex, 62);
    }),
});

Deno.test("transcode refuses an input without video, and bad options, naming them", async () => {
  await withDir(async (dir) => {
    const text = `${dir}/notes.txt`;
    await Deno.writeTextFile(text, "not a video");
    assert.throws(
      () => transcodeVideoSync(text, `${dir}/o.mp4`, { height: 128, fps: 15, codec: "h264", gop: 15 }),
      (e) => e instanceof MediaError && e.message.includes(text),
    );
    assert.throws(
      () => transcodeVideoSync(text, `${dir}/o.mp4`, { height: 127, fps: 15, codec: "h264", gop: 15 }),
      (e) => e instanceof InvalidArgumentError && /height/.test(e.message),
    );
  });
});

Deno.test({
  name: "transcode keeps the display aspect of non-square pixels (720x480 MPEG-2 at 16:9 → 228x128, SAR 1:1)",
  ignore: noCli,
  fn: () =>
    withDir(async (dir) => {
      for (const container of ["mpg", "mp4"]) {
        const src = await generateClip({
          codec: "mpeg2video",
          container,
          width: 720,
          height: 480,
          fps: 10,
          durationSec: 1,
          extraArgs: ["-aspect", "16:9"],
        });
        const s = (await ffprobeInfo(src)).streams[0];
        assert.equal(
          (s as { sample_aspect_ratio?: string }).sample_aspect_ratio,
          "32:27",
          "anamorphic source",
        );
        const out = `${dir}/out_${container}.mp4`;
        const r = transcodeVideoSync(src, out, { height: 128, fps: 10, codec: "h264", gop: 10, crf: 10 });
        const v = (await ffprobeInfo(out)).streams[0] as {
          width: number;
          height: number;
          sample_aspect_ratio?: string;
        };
        // Before: 192×128 (the coded 3:2), shown as 3:2 (the SAR was dropped): squeezed.
        assert.deepEqual([r.width, r.height, v.width, v.height], [228, 128, 228, 128]);
        assert.ok(Math.abs(v.width! / v.height! - 16 / 9) <= 2 / 128, `${v.width}x${v.height} is 16:9`);
        assert.equal(v.sample_aspect_ratio, "1:1");
        // The pixels: the source stretched to its display size (the CLI's scale to an explicit size).
        const ours = await ffmpegDecodeRaw(out, { pixFmt: "gray" });
        const ref = await ffmpegDecodeRaw(src, { pixFmt: "gray", filter: "scale=228:128" });
        const db = psnr(ours, ref);
        assert.ok(db > 28, `${container}: PSNR against the source at 228x128 is ${db.toFixed(1)} dB`);
      }
    }),
});

Deno.test("output size keeps the display aspect ratio with an even width", () => {
  assert.deepEqual(outputSize(1920, 1080, 0, 128), [228, 128]); // 227.6 → 228
  assert.deepEqual(outputSize(720, 480, 0, 128, [32, 27]), [228, 128]); // 16:9 from non-square pixels
  assert.deepEqual(outputSize(720, 480, 90, 128, [32, 27]), [72, 128]); // displayed 480×853⅓: 72
  assert.deepEqual(outputSize(720, 480, 0, 128, [0, 1]), [192, 128]); // unknown SAR: square
  assert.deepEqual(outputSize(1920, 1080, -90, 128), [72, 128]); // displayed 1080×1920: 72
  assert.deepEqual(outputSize(640, 480, 180, 120), [160, 120]);
  assert.deepEqual(outputSize(100, 2000, 0, 2), [2, 2]); // never below 2
});

Deno.test("fpsRational: integers exactly, NTSC rates as /1001", () => {
  assert.deepEqual(fpsRational(15), [15, 1]);
  assert.deepEqual(fpsRational(29.97), [30000, 1001]);
  assert.deepEqual(fpsRational(12.5), [12500, 1000]);
});

Deno.test("a missing encoder names the encoders tried, their Debian packages and configure switches", () => {
  assert.throws(() => findEncoder("av1", "libx264"), InvalidArgumentError); // not an AV1 encoder
  const e = new EncoderNotFoundError("av1", ENCODERS.av1, "/opt/ffmpeg/lib");
  for (
    const part of [
      "libsvtav1",
      "libaom-av1",
      "libsvtav1enc1",
      "libaom3",
      "--enable-libsvtav1",
      "/opt/ffmpeg/lib",
    ]
  ) {
    assert.ok(e.message.includes(part), `message lacks ${part}: ${e.message}`);
  }
  assert.deepEqual(e.tried, ["libsvtav1", "libaom-av1"]);
});
