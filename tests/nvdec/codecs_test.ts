/**
 * NVDEC against the double: MP4-style (length-prefixed) H.264/HEVC re-packed by decodeVideoNvdec itself, VP9
 * (WebM) and AV1 (MP4, sequence header from av1C) decoded to NV12 byte-identical to the ffmpeg CLI, odd sizes,
 * and 10-bit rejected with a typed error.
 */
import assert from "node:assert/strict";
import { decodeVideoNvdec, releaseDecoderNvdec } from "../../src/nvdec/decoder.ts";
import { demuxVideo } from "../../src/media/demux.ts";
import type { VideoPackets } from "../../src/media/packets.ts";
import { NvdecUnsupportedError } from "../../src/errors.ts";
import { ffmpegDecodeRaw, generateClip, hasFfmpegCliSync, sharedMedia } from "../helpers/media.ts";
import { unbalanced } from "./double/build.ts";
import { useDouble } from "./nvdec_helpers.ts";

const ignore = !hasFfmpegCliSync();

async function nv12Identical(
  path: string,
  expectFrames: number,
  opts: { width?: number; height?: number } = {},
) {
  const packets = await demuxVideo(path) as VideoPackets;
  using frames = await decodeVideoNvdec(packets, { pixelFormat: "nv12", ...opts });
  assert.equal(frames.pts.length, expectFrames, `${path}: frame count`);
  const host = await frames.toHost();
  const cli = await ffmpegDecodeRaw(path, { pixFmt: "nv12" });
  assert.equal(host.length, cli.length, `${path}: byte count`);
  const diff = host.findIndex((v, i) => v !== cli[i]);
  assert.equal(diff, -1, `${path}: first differing NV12 byte at ${diff}`);
}

Deno.test({
  name: "nvdec: MP4/MKV length-prefixed H.264 and HEVC are re-packed to Annex-B by decodeVideoNvdec itself",
  ignore,
}, async () => {
  const dbl = await useDouble();
  dbl.configure();
  for (
    const spec of [
      { codec: "libx264", container: "mp4" },
      { codec: "libx265", container: "mkv" },
    ]
  ) {
    const clip = await generateClip({ ...spec, width: 256, height: 144, bframes: 2, durationSec: 1 });
    const packets = await demuxVideo(clip) as VideoPackets;
    assert.equal(packets.extradata[0], 1, "avcC/hvcC extradata (configuration version 1)");
    await nv12Identical(clip, 25);
  }
  releaseDecoderNvdec();
  assert.deepEqual(unbalanced(dbl.log()), {});
});

Deno.test({ name: "nvdec: VP9 (WebM) decodes to NV12 byte-identical to libavcodec", ignore }, async (t) => {
  const bbb = sharedMedia("vp9_opus_bbb.webm");
  if (!bbb) return void t.step({ name: "shared vp9_opus_bbb.webm missing", ignore: true, fn: () => {} });
  const dbl = await useDouble();
  dbl.configure();
  await nv12Identical(bbb, 120);
  const clip = await generateClip({
    codec: "libvpx-vp9",
    container: "webm",
    width: 192,
    height: 108,
    durationSec: 1,
  });
  await nv12Identical(clip, 25);
  releaseDecoderNvdec();
  const log = dbl.log();
  assert.deepEqual(unbalanced(log), {});
  assert.ok(
    log.some((l) => l.startsWith("cuvidCreateVideoParser rc=0") && l.includes("codec=10")),
    "VP9 parser",
  );
});

Deno.test({
  name: "nvdec: AV1 (MP4) decodes to NV12 byte-identical; av1C's sequence header goes in pExtVideoInfo",
  ignore,
}, async (t) => {
  const av1 = sharedMedia("av1_aac.mp4");
  if (!av1) return void t.step({ name: "shared av1_aac.mp4 missing", ignore: true, fn: () => {} });
  const dbl = await useDouble();
  dbl.configure();
  await nv12Identical(av1, 30);
  releaseDecoderNvdec();
  const log = dbl.log();
  assert.deepEqual(unbalanced(log), {});
  // av1C is 17 bytes: 4 of header, then the 13-byte sequence header OBU (ffprobe -show_data).
  assert.ok(log.some((l) => /^cuvidCreateVideoParser rc=0 .* codec=11 seqhdr=13$/.test(l)), log.join("\n"));
});

Deno.test({
  name: "nvdec: odd-sized VP9 (161x121) needs an even output size; with even width/height it decodes resized",
  ignore,
}, async (t) => {
  const odd = sharedMedia("vp9_odd_161x121.webm");
  if (!odd) return void t.step({ name: "shared vp9_odd_161x121.webm missing", ignore: true, fn: () => {} });
  const dbl = await useDouble();
  dbl.configure();
  const packets = await demuxVideo(odd) as VideoPackets;
  await assert.rejects(() => decodeVideoNvdec(packets, { pixelFormat: "nv12" }), (e: unknown) => {
    assert.ok(e instanceof NvdecUnsupportedError, String(e));
    assert.match((e as Error).message, /161x121 must be even/);
    return true;
  });
  {
    using frames = await decodeVideoNvdec(packets, { pixelFormat: "nv12", width: 160, height: 120 });
    assert.deepEqual(frames.shape, [30, 180, 160]);
  }
  releaseDecoderNvdec();
  assert.deepEqual(unbalanced(dbl.log()), {});
  assert.equal(dbl.liveAllocations(), 0);
});

Deno.test(
  { name: "nvdec: 10-bit HEVC is rejected with NvdecUnsupportedError, nothing leaks", ignore },
  async () => {
    const dbl = await useDouble();
    dbl.configure();
    const clip = await generateClip({
      codec: "libx265",
      container: "mkv",
      pixFmt: "yuv420p10le",
      width: 256,
      height: 144,
      durationSec: 0.4,
    });
    const packets = await demuxVideo(clip) as VideoPackets;
    await assert.rejects(() => decodeVideoNvdec(packets), (e: unknown) => {
      assert.ok(e instanceof NvdecUnsupportedError, String(e));
      assert.match((e as Error).message, /10-bit video is not supported .*P016/);
      return true;
    });
    releaseDecoderNvdec();
    assert.deepEqual(unbalanced(dbl.log()), {});
    assert.equal(dbl.liveAllocations(), 0);
  },
);
