/**
 * The decoder cache (src/nvdec/decoder_cache.ts) against the double: a decoder kept for one video is reused for
 * the next only as the next one's own decoder would be; every field that changes the output (coded size, display
 * area, chroma, bit depth) is part of the match (torchcodec #1704: a cache keyed on coded size alone mis-crops).
 * Oracle: the ffmpeg CLI's NV12 decode of each video.
 */
import assert from "node:assert/strict";
import { decodeVideoNvdec, releaseDecoderNvdec } from "../../src/nvdec/decoder.ts";
import { decoderCacheStats } from "../../src/nvdec/decoder_cache.ts";
import { demuxVideo } from "../../src/media/demux.ts";
import type { VideoPackets } from "../../src/media/packets.ts";
import { ffmpegDecodeRaw, generateClip, hasFfmpegCliSync } from "../helpers/media.ts";
import { unbalanced } from "./double/build.ts";
import { useDouble } from "./nvdec_helpers.ts";

Deno.test({
  name: "nvdec: two videos with one coded size (320x192) and different display areas both decode exactly",
  ignore: !hasFfmpegCliSync(),
}, async () => {
  const dbl = await useDouble();
  dbl.configure();
  // H.264 codes whole macroblocks: 320x180 and 320x184 both have coded size 320x192.
  const clips = [
    await generateClip({ width: 320, height: 180, bframes: 2, gop: 12, durationSec: 1 }),
    await generateClip({ width: 320, height: 184, bframes: 2, gop: 12, durationSec: 1 }),
    await generateClip({ width: 320, height: 180, bframes: 2, gop: 12, durationSec: 1 }),
  ];
  const before = decoderCacheStats();
  for (const [i, clip] of clips.entries()) {
    const packets = await demuxVideo(clip, { bsf: "h264_mp4toannexb" }) as VideoPackets;
    using frames = await decodeVideoNvdec(packets, { pixelFormat: "nv12" });
    const host = await frames.toHost();
    const cli = await ffmpegDecodeRaw(clip, { pixFmt: "nv12" });
    assert.equal(host.length, cli.length, `video ${i}: size`);
    assert.ok(
      host.every((v, k) => v === cli[k]),
      `video ${i}: NV12 bytes differ from the ffmpeg CLI's decode`,
    );
  }
  releaseDecoderNvdec();
  const log = dbl.log();
  assert.deepEqual(unbalanced(log), {});
  assert.ok(log.some((l) => /^sequence-callback ret=\d+ coded=320x192/.test(l)), "one coded size");
  // from one cache: the decoder made for the first video is reconfigured for the next two, not made again
  const calls = (re: RegExp) => log.filter((l) => re.test(l)).length;
  assert.equal(calls(/^cuvidCreateDecoder rc=0/), 1, "one decoder made");
  assert.equal(calls(/^cuvidReconfigureDecoder rc=0/), 2, "and reconfigured for the other two videos");
  // the cache's own counts (what the GPU kit reports on real hardware, where there is no call log) agree
  const after = decoderCacheStats();
  assert.deepEqual(
    { created: after.created - before.created, reconfigured: after.reconfigured - before.reconfigured },
    { created: 1, reconfigured: 2 },
  );
});
