/**
 * NVDEC hardware resize (decoder target size), crop (display area) and the `batch` option, against the double.
 *
 * Resize oracle: the CPU path at the same size (`decodeVideo` with width/height: libswscale bilinear, straight
 * to RGB). The double scales NV12 with libswscale *bicubic* and the PTX kernel converts, so the two differ by a
 * scaler difference, as the hardware's undocumented scaler would. Measured on real footage: 37.8 dB at 2x down
 * (160x90, where bilinear and bicubic differ most), 41.3 dB at 224x128, 43.7 dB at 1.5x up (480x270). The bound,
 * 35 dB, leaves ~3 dB for another scaler's filter; a wrong size, offset, plane order or row would fall far lower.
 */
import assert from "node:assert/strict";
import { decodeVideoNvdec, releaseDecoderNvdec } from "../../src/nvdec/decoder.ts";
import { CudaBuffer } from "../../src/nvdec/cuda_buffer.ts";
import { demuxVideo } from "../../src/media/demux.ts";
import { decodeVideo } from "../../src/media/decode.ts";
import type { VideoPackets } from "../../src/media/packets.ts";
import { InvalidArgumentError } from "../../src/errors.ts";
import { ffmpegDecodeRaw, hasFfmpegCliSync, sharedMedia } from "../helpers/media.ts";
import { unbalanced } from "./double/build.ts";
import { packedToPlanar, psnr, useDouble } from "./nvdec_helpers.ts";

const NASA_PATH = sharedMedia("h264_nasa_bframes_aac.mp4");
const ignore = !hasFfmpegCliSync() || NASA_PATH === null;
const RESIZE_PSNR_DB = 35;

/** The NASA clip's first video stream (real footage, 320x180 at 25 fps, B-frames), first second. */
async function nasa(): Promise<{ path: string; packets: VideoPackets }> {
  const path = NASA_PATH!;
  return { path, packets: await demuxVideo(path, { window: [0, 1], streamIndex: 0 }) as VideoPackets };
}

Deno.test(
  { name: "nvdec: hardware resize (target size) is within 35 dB of the CPU resize", ignore },
  async () => {
    const clip = await nasa();
    const dbl = await useDouble();
    dbl.configure();
    for (const [w, h] of [[160, 90], [224, 128], [480, 270]]) {
      using gpu = await decodeVideoNvdec(clip.packets, { width: w, height: h, pixelFormat: "rgb24-planar" });
      assert.deepEqual(gpu.shape, [25, 3, h, w]);
      const cpu = await decodeVideo(clip.packets, { width: w, height: h, pixelFormat: "rgb24-planar" });
      assert.deepEqual(Array.from(gpu.pts), Array.from(cpu.pts));
      const db = psnr(await gpu.toHost(), cpu.data);
      console.log(`resize 320x180 -> ${w}x${h}: PSNR ${db.toFixed(2)} dB`);
      assert.ok(db >= RESIZE_PSNR_DB, `${w}x${h}: PSNR ${db.toFixed(2)} dB`);
    }
    releaseDecoderNvdec();
    const log = dbl.log();
    assert.deepEqual(unbalanced(log), {});
    assert.ok(
      log.some((l) => /^cuvidCreateDecoder rc=0 .* target=160x90$/.test(l)),
      "target size reached the driver",
    );
    assert.ok(
      log.some((l) => /^cuvidReconfigureDecoder rc=0 .* target=224x128$/.test(l)),
      "reconfigured, not recreated",
    );
  },
);

Deno.test(
  { name: "nvdec: crop (display area) is byte-identical in NV12 and within 45 dB in RGB", ignore },
  async () => {
    const clip = await nasa();
    const dbl = await useDouble();
    dbl.configure();
    const crop = { left: 40, top: 20, width: 200, height: 120 };
    const W = 320, H = 180;
    const full = await ffmpegDecodeRaw(clip.path, { pixFmt: "nv12", streamIndex: 0 });
    const frames = 25;
    const expectNv12 = new Uint8Array(frames * crop.width * crop.height * 1.5);
    let o = 0;
    for (let f = 0; f < frames; f++) {
      const base = f * W * H * 1.5;
      for (let y = 0; y < crop.height; y++) {
        const at = base + (crop.top + y) * W + crop.left;
        expectNv12.set(full.subarray(at, at + crop.width), o);
        o += crop.width;
      }
      for (let y = 0; y < crop.height / 2; y++) {
        const at = base + W * H + (crop.top / 2 + y) * W + crop.left;
        expectNv12.set(full.subarray(at, at + crop.width), o);
        o += crop.width;
      }
    }
    {
      using gpu = await decodeVideoNvdec(clip.packets, { crop, pixelFormat: "nv12" });
      assert.deepEqual(gpu.shape, [frames, 180, 200]);
      const host = await gpu.toHost();
      assert.equal(
        host.findIndex((v, i) => v !== expectNv12[i]),
        -1,
        "cropped NV12 differs from CPU decode + crop",
      );
    }
    {
      using gpu = await decodeVideoNvdec(clip.packets, { crop, pixelFormat: "rgb24-planar" });
      const rgb = await ffmpegDecodeRaw(clip.path, {
        pixFmt: "rgb24",
        streamIndex: 0,
        filter: `crop=${crop.width}:${crop.height}:${crop.left}:${crop.top}`,
      });
      const db = psnr(await gpu.toHost(), packedToPlanar(rgb.subarray(0, frames * 3 * 200 * 120), 200, 120));
      console.log(`crop RGB: PSNR ${db.toFixed(2)} dB`);
      assert.ok(db >= 45, `PSNR ${db.toFixed(2)} dB`);
    }
    await assert.rejects(
      () => decodeVideoNvdec(clip.packets, { crop: { left: 200, top: 0, width: 200, height: 100 } }),
      InvalidArgumentError,
    );
    releaseDecoderNvdec();
    assert.deepEqual(unbalanced(dbl.log()), {});
    assert.equal(dbl.liveAllocations(), 0);
  },
);

Deno.test(
  { name: "nvdec: batch writes into the caller's CudaBuffer slot and leaves the rest alone", ignore },
  async () => {
    const clip = await nasa();
    const dbl = await useDouble();
    dbl.configure();
    const w = 160, h = 90, frameSize = 3 * w * h, perClip = 25 * frameSize;
    {
      using batch = CudaBuffer.alloc(2 * perClip);
      using alone = await decodeVideoNvdec(clip.packets, { width: w, height: h });
      const expected = await alone.toHost();
      const allocsBefore = dbl.log().filter((l) => l.startsWith("cuMemAlloc_v2 rc=0")).length;
      {
        using into = await decodeVideoNvdec(clip.packets, {
          width: w,
          height: h,
          batch: batch.view(perClip, perClip),
        });
        assert.equal(into.devicePtr, batch.devicePtr + BigInt(perClip));
        assert.equal(into.pts.length, 25);
      }
      // The slot's owner frees nothing: the batch is still usable and the decode allocated no output buffer.
      const allocsAfter = dbl.log().filter((l) => l.startsWith("cuMemAlloc_v2 rc=0")).length;
      assert.equal(allocsAfter, allocsBefore, "no output allocation when batch is given");
      const host = new Uint8Array(2 * perClip);
      batch.copyToHost(0, w, w, host.length / w, host);
      assert.equal(
        host.subarray(perClip).findIndex((v, i) => v !== expected[i]),
        -1,
        "position 1 holds the frames",
      );
      assert.ok(
        host.subarray(0, perClip).every((v) => v === 0),
        "position 0 untouched (the double zero-fills allocations)",
      );
      await assert.rejects(
        () => decodeVideoNvdec(clip.packets, { width: w, height: h, batch: batch.view(0, perClip - 1) }),
        /output buffer holds only 24 frames/,
      );
    }
    releaseDecoderNvdec();
    assert.deepEqual(unbalanced(dbl.log()), {});
    assert.equal(dbl.liveAllocations(), 0);
  },
);
