import assert from "node:assert/strict";
import { decodeVideoNvdec, releaseDecoderNvdec } from "../../src/nvdec/decoder.ts";
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
    releaseDecoderNvdec();
    const log = dbl.log();
    assert.deepEqual(unbalanced(log), {});
    assert.ok(
      log.some((l) => /^cuvidMapVideoFrame64 rc=0 .* pitch=512$/.test(l)),
      "surfaces served at a pitch wider than W",
    );
    assert.equal(dbl.liveAllocations(), 0);
  },
);

Deno.test(
  { name: "nvdec: planar RGB through the PTX kernel is within 45 dB of the CPU conversion", ignore },
  async () => {
    const dbl = await useDouble();
    dbl.configure();
    const clip = await generateClip({ width: 320, height: 180, bframes: 2, gop: 12, durationSec: 1 });
    const packets = await annexB(clip);
    {
      using frames = await decodeVideoNvdec(packets, { pixelFormat: "rgb24-planar" });
      assert.deepEqual(frames.shape, [25, 3, 180, 320]);
      const host = await frames.toHost();
      const cpu = packedToPlanar(await ffmpegDecodeRaw(clip, { pixFmt: "rgb24" }), 320, 180);
      const db = psnr(host, cpu);
      assert.ok(db >= 45, `PSNR ${db.toFixed(2)} dB`);
    }
    releaseDecoderNvdec();
    const log = dbl.log();
    assert.deepEqual(unbalanced(log), {});
    assert.ok(
      log.some((l) => l.startsWith("cuLaunchKernel rc=0 kernel=nv12_to_rgb_planar grid=10x23 block=32x8")),
    );
  },
);

Deno.test({
  name: "nvdec: HEVC (MKV) and H.264 MKV decode to NV12 byte-identical; decoder is reconfigured",
  ignore,
}, async () => {
  const dbl = await useDouble();
  dbl.configure();
  for (
    const spec of [{ codec: "libx265", container: "mkv", c: "hevc" }, {
      codec: "libx264",
      container: "mkv",
      c: "h264",
    }]
  ) {
    const clip = await generateClip({
      codec: spec.codec,
      container: spec.container,
      width: 256,
      height: 144,
      bframes: 2,
      durationSec: 1,
    });
    using frames = await decodeVideoNvdec(await annexB(clip, spec.c), { pixelFormat: "nv12" });
    const host = await frames.toHost();
    const cli = await ffmpegDecodeRaw(clip, { pixFmt: "nv12" });
    assert.equal(host.length, cli.length, spec.c);
    assert.ok(host.every((v, i) => v === cli[i]), `${spec.c}: NV12 bytes differ`);
  }
  releaseDecoderNvdec();
  assert.deepEqual(unbalanced(dbl.log()), {});
});

Deno.test({ name: "nvdec: windows and pts agree with the CPU decoder", ignore }, async () => {
  const dbl = await useDouble();
  dbl.configure();
  const clip = await generateClip({ width: 320, height: 180, bframes: 2, gop: 12, durationSec: 2 });
  const window: [number, number] = [0.7, 1.3];
  {
    using frames = await decodeVideoNvdec(await annexB(clip, "h264", window), { pixelFormat: "nv12" });
    const cpu = await decodeVideo(await demuxVideo(clip, { window }) as VideoPackets, {
      pixelFormat: "gray",
    });
    assert.equal(frames.pts.length, cpu.pts.length);
    assert.ok(frames.pts.length > 10);
    frames.pts.forEach((t, i) => assert.ok(Math.abs(t - cpu.pts[i]) < 1e-9));
  }
  releaseDecoderNvdec();
  assert.deepEqual(unbalanced(dbl.log()), {});
});

Deno.test(
  {
    name:
      "nvdec: frameIndex = the CPU's for windows read from the start and reached by seeks (H.264 B-frames MP4, HEVC MKV, VP9)",
    ignore,
  },
  async () => {
    const dbl = await useDouble();
    dbl.configure();
    try {
      const sources = [
        { width: 64, height: 48, bframes: 2, gop: 12, durationSec: 4 },
        { width: 64, height: 48, bframes: 2, gop: 12, durationSec: 4, codec: "libx265", container: "mkv" },
        { width: 64, height: 48, gop: 12, durationSec: 4, codec: "libvpx-vp9", container: "webm" },
      ];
      let checked = 0;
      for (const spec of sources) {
        const clip = await generateClip(spec);
        const windows: [number, number][] = [[0, 0.6], [1.1, 1.7], [3.02, 3.9]];
        const parts = await demuxVideo(clip, { windows });
        for (const [i, p] of parts.entries()) {
          for (const frameRate of [undefined, 9]) {
            const opts = { width: 16, height: 16, ...(frameRate ? { frameRate } : {}) };
            const cpu = await decodeVideo(p, opts);
            using gpu = await decodeVideoNvdec(p, opts);
            assert.ok(cpu.frameIndex !== null, `${clip} ${windows[i]}: the CPU indexes the frames`);
            assert.deepEqual(
              gpu.frameIndex,
              cpu.frameIndex,
              `${spec.codec ?? "h264"} ${windows[i]} ${frameRate}`,
            );
            checked += cpu.frameIndex.length;
          }
        }
      }
      assert.ok(checked > 60, `${checked} frames compared`);
    } finally {
      releaseDecoderNvdec();
    }
  },
);
