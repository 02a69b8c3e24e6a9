import assert from "node:assert/strict";
import { probe } from "../../src/media/probe.ts";
import {
  decodableSharedMedia,
  ffprobeInfo,
  ffprobePackets,
  generateClip,
  hasFfmpegCliSync,
  lacksDecoder,
  parseRational,
  type ProbedStream,
  sharedMedia,
} from "../helpers/media.ts";

const CLI = hasFfmpegCliSync();
const FILES = decodableSharedMedia();

/** ffprobe's frame rate as sluice reports it: avg_frame_rate, else r_frame_rate. */
function ffprobeRate(s: ProbedStream): number {
  return parseRational(s.avg_frame_rate) || parseRational(s.r_frame_rate);
}

async function assertAgreesWithFfprobe(path: string): Promise<void> {
  const info = await probe(path);
  const oracle = await ffprobeInfo(path);
  assert.ok(info.video, `${path}: has a video stream`);
  const v = info.video;
  const s = oracle.streams[v.index];
  assert.equal(s.codec_type, "video");
  assert.equal(v.codec, s.codec_name, "codec");
  assert.equal(v.width, s.width, "width");
  assert.equal(v.height, s.height, "height");
  assert.equal(v.pixelFormat, s.pix_fmt, "pixel format");
  const rate = ffprobeRate(s);
  assert.ok(Math.abs(v.frameRate - rate) < 1e-6, `frame rate ${v.frameRate} vs ffprobe ${rate}`);
  assert.equal(`${v.timeBase[0]}/${v.timeBase[1]}`, s.time_base, "time base");
  const duration = Number(s.duration ?? oracle.format.duration);
  assert.ok(
    Math.abs((v.durationSec ?? NaN) - duration) <= 1 / rate + 1e-6,
    `duration ${v.durationSec} vs ${duration}`,
  );
  assert.equal(v.numFrames, s.nb_frames === undefined ? null : Number(s.nb_frames), "numFrames");
  const rotation = s.side_data_list?.find((d) => d.rotation !== undefined)?.rotation ?? 0;
  assert.equal(v.rotation, rotation, "rotation (ffprobe's sign)");
  assert.equal(info.format, oracle.format.format_name, "format");
  assert.ok(
    Math.abs((info.durationSec ?? NaN) - Number(oracle.format.duration)) < 1e-6,
    `container duration ${info.durationSec} vs ffprobe ${oracle.format.duration}`,
  );
  assert.equal(info.streams.length, oracle.streams.length, "stream count");
  info.streams.forEach((st, i) => {
    assert.equal(st.type, oracle.streams[i].codec_type, `stream ${i} type`);
    assert.equal(st.codec, oracle.streams[i].codec_name ?? "none", `stream ${i} codec`);
  });
}

for (const entry of FILES) {
  Deno.test({
    name: `probe agrees with ffprobe: ${entry.file}`,
    // Without a decoder FFmpeg cannot tell the pixel format.
    ignore: !CLI || (entry.video_codec === "av1" && lacksDecoder("av1")),
    fn: () => assertAgreesWithFfprobe(sharedMedia(entry.file)!),
  });
}

Deno.test({
  name: "probe: MANIFEST facts (rotation -90 on the phone clips, 10-bit HEVC, no frame count in Matroska)",
  ignore: sharedMedia("hevc10_dolbyvision_iphone.mov") === null ||
    sharedMedia("h264_opus_pancake.mkv") === null,
  fn: async () => {
    const hevc = (await probe(sharedMedia("hevc10_dolbyvision_iphone.mov")!)).video!;
    assert.equal(hevc.rotation, -90);
    assert.equal(hevc.bitDepth, 10);
    assert.equal(hevc.pixelFormat, "yuv420p10le");
    assert.equal(hevc.profile, "Main 10");
    const mkv = await probe(sharedMedia("h264_opus_pancake.mkv")!);
    assert.equal(mkv.video!.numFrames, null);
    assert.equal(mkv.audio?.codec, "opus");
    // The container starts where ffprobe says: at the Opus pre-skip (-0.007 s) up to FFmpeg 7.1, at 0 on 8.1.
    const start = Number((await ffprobeInfo(sharedMedia("h264_opus_pancake.mkv")!)).format.start_time);
    assert.ok(
      Math.abs(mkv.startTimeSec - start) < 1e-9,
      `format start_time ${mkv.startTimeSec} vs ffprobe ${start}`,
    );
  },
});

Deno.test({
  name: "probe: in-memory bytes give the same answer as the path",
  ignore: sharedMedia("h264_rot90_3frames.mov") === null,
  fn: async () => {
    const path = sharedMedia("h264_rot90_3frames.mov")!;
    assert.deepEqual(await probe(await Deno.readFile(path)), await probe(path));
  },
});

Deno.test({
  name: "probe keyframes: keyframeTimes are ffprobe's keyframe packet times (generated -g 12 clip and NASA)",
  ignore: !CLI,
  fn: async () => {
    const paths = [await generateClip({ bframes: 2, gop: 12, durationSec: 3 })];
    if (sharedMedia("h264_nasa_bframes_aac.mp4")) paths.push(sharedMedia("h264_nasa_bframes_aac.mp4")!);
    for (const path of paths) {
      const v = (await probe(path, { keyframes: true })).video!;
      const want = (await ffprobePackets(path, v.index)).filter((p) => p.keyframe).map((p) => p.ptsTime!)
        .sort((a, b) => a - b);
      assert.equal(v.keyframeTimes!.length, want.length);
      v.keyframeTimes!.forEach((t, i) => assert.ok(Math.abs(t - want[i]) < 1e-6, `${path} keyframe ${i}`));
    }
    const plain = await probe(paths[0]);
    assert.equal(plain.video!.keyframeTimes, undefined);
  },
});

Deno.test({
  name: "probe: streamIndex picks another video stream; streamInfo 'never' leaves the pixel format unknown",
  ignore: sharedMedia("h264_nasa_bframes_aac.mp4") === null,
  fn: async () => {
    const path = sharedMedia("h264_nasa_bframes_aac.mp4")!;
    const v0 = (await probe(path, { streamIndex: 0 })).video!;
    assert.deepEqual([v0.index, v0.width, v0.height, v0.frameRate], [0, 320, 180, 25]);
    const fast = (await probe(path, { streamIndex: 0, streamInfo: "never" })).video!;
    assert.equal(fast.pixelFormat, null);
    assert.deepEqual([fast.codec, fast.width, fast.height, fast.frameRate], ["h264", 320, 180, 25]);
  },
});

Deno.test({
  name: "probe: generated clips in every container agree with ffprobe",
  ignore: !CLI,
  fn: async () => {
    for (
      const spec of [{ container: "mkv", bframes: 2 }, { container: "mov", fps: 30 }, { container: "ts" }]
    ) {
      await assertAgreesWithFfprobe(await generateClip({ ...spec, durationSec: 1, width: 176, height: 144 }));
    }
  },
});
