import assert from "node:assert/strict";
import { decodeVideo } from "../../src/media/decode.ts";
import { readPackets } from "../helpers/read_packets.ts";
import { assertSameBytes, cliRaw, probeFrameTimes } from "../helpers/decode_oracles.ts";
import { type ClipSpec, generateClip, hasFfmpegCliSync, lacksDecoder } from "../helpers/media.ts";

const cli = hasFfmpegCliSync();

/**
 * Generated clips per codec and per oddity. Each is decoded in full and checked against ffprobe (frame count,
 * pts) and the ffmpeg CLI (rgb24 bytes through the same swscale path).
 */
const CASES: { name: string; spec: ClipSpec }[] = [
  { name: "H.264 with B-frames", spec: { codec: "libx264", bframes: 2 } },
  { name: "HEVC with B-frames", spec: { codec: "libx265", bframes: 2 } },
  { name: "VP9", spec: { codec: "libvpx-vp9", container: "webm" } },
  {
    name: "AV1",
    spec: {
      codec: "libaom-av1",
      container: "mkv",
      extraArgs: ["-cpu-used", "8", "-row-mt", "1"],
      durationSec: 1,
    },
  },
  { name: "VP8", spec: { codec: "libvpx", container: "webm" } },
  { name: "MPEG-4 part 2 with B-frames", spec: { codec: "mpeg4", bframes: 1, container: "avi" } },
  {
    name: "interlaced H.264 (tff, MBAFF)",
    spec: { codec: "libx264", bframes: 2, extraArgs: ["-flags", "+ilme+ildct", "-x264opts", "tff=1"] },
  },
  { name: "10-bit H.264", spec: { codec: "libx264", pixFmt: "yuv420p10le" } },
  { name: "full-range (yuvj420p) H.264", spec: { codec: "libx264", pixFmt: "yuvj420p" } },
  {
    name: "odd size 161x121 H.264 (4:4:4 cropped)",
    spec: { codec: "libx264", width: 161, height: 121, pixFmt: "yuv444p" },
  },
  {
    name: "VFR H.264 (variable frame durations)",
    spec: {
      codec: "libx264",
      bframes: 2,
      // Speed changes every second: 25 fps, then 12.5 fps, then 50 fps worth of timestamps.
      extraArgs: [
        "-vf",
        "setpts='if(lt(T,0.7),PTS,if(lt(T,1.4),2*PTS-0.7/TB,0.5*PTS+0.7/TB))'",
        "-fps_mode",
        "vfr",
      ],
    },
  },
];

for (const { name, spec } of CASES) {
  Deno.test({
    name: `decodeVideo codecs: ${name} = ffprobe frames and ffmpeg CLI rgb24`,
    ignore: !cli || (name === "AV1" && lacksDecoder("av1")),
    fn: async () => {
      const clip = await generateClip({ width: 128, height: 96, durationSec: 2, ...spec });
      const packets = readPackets(clip);
      const frames = await decodeVideo(packets);
      const times = await probeFrameTimes(clip, packets.streamIndex);
      assert.equal(frames.shape[0], times.length, "frame count = ffprobe");
      for (let i = 0; i < times.length; i++) {
        // Both NaN is agreement: an AVI B-frame stream's last frame has no timestamp for ffprobe either.
        const same = Number.isNaN(times[i])
          ? Number.isNaN(frames.pts[i])
          : Math.abs(frames.pts[i] - times[i]) < 2e-6;
        assert.ok(same, `frame ${i}: ${frames.pts[i]} vs ffprobe ${times[i]}`);
      }
      const ref = await cliRaw(clip, { filter: "scale=flags=bilinear", pixFmt: "rgb24" });
      assertSameBytes(frames.data, ref, "rgb24 = ffmpeg CLI");
      if (name.startsWith("VFR")) {
        const steps = new Set(
          Array.from(frames.pts.slice(1), (t, i) => Math.round((t - frames.pts[i]) * 1000)),
        );
        assert.ok(steps.size >= 2, `frame durations vary: ${[...steps]} ms`);
      }
    },
  });
}
