import assert from "node:assert/strict";
import { decodeVideoNvdec, releaseNvdecDecoder } from "../../src/nvdec/decoder.ts";
import { demuxVideo } from "../../src/media/demux.ts";
import { decodeVideo } from "../../src/media/decode.ts";
import type { VideoPackets } from "../../src/media/packets.ts";
import { ffmpegDecodeRaw, generateClip, hasFfmpegCliSync } from "../helpers/media.ts";
import { unbalanced } from "./double/build.ts";
import { packedToPlanar, psnr, useDouble } from "./nvdec_helpers.ts";

const ignore = !hasFfmpegCliSync();

async function annexB(path: string, codec = "h264", window?: [number, number]): Promise<VideoPackets> {
  return await demuxVideo(path, {
    bsf: `${codec}_mp4toannexb`,
    ...(window ? { window } : {}),
  }) as VideoPackets;
}

Deno.test(
  { name: "nvdec: H.264 MP4 with B-frames decodes to NV12 byte-identical to libavcodec", ignore },
  async () => {
    const dbl = await useDouble();
    dbl.configure();
    const clip = await generateClip({ width: 320, height: 180, bframes: 2, gop: 12, durationSec: 2 });
    const packets = await annexB(clip);
    {
      using frames = await decodeVideoNvdec(packets, { pixelFormat: "nv12" });
      assert.deepEqual(frames.shape, [50, 270, 320]);
      const host = await frames.toHost();
      const cli = await ffmpegDecodeRaw(clip, { pixFmt: "nv12" });
      assert.equal(host.length, cli.length);
      assert.ok(host.every((v, i) => v === cli[i]), "NV12 bytes differ from the ffmpeg CLI's decode");
      const cpu = await decodeVideo(await demuxVideo(clip) as VideoPackets, { pixelFormat: "gray" });
      assert.equal(frames.pts.length, cpu.pts.length);
      frames.pts.forEach((t, i) =>
        assert.ok(Math.abs(t - cpu.pts[i]) < 1e-9, `pts[${i}] ${t} != ${cpu.pts[i]}`)
      );
    }
    releaseNvdecDecoder();
    const log = dbl.log();
    assert.deepEqual(unbalanced(log), {});
    assert.ok(
      log.some((l) => /^cuvidMapVideoFrame64 rc=0 .* pitch=512$/.test(l)),
      "surfaces served at a pitch wider than W",
    );
    assert.equal(dbl.liveAllocations(), 0);
  },
);
