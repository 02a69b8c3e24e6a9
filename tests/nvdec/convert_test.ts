/**
 * The clip placement kernel (`rgb_planar_to_clip`, src/nvdec/convert.ts) against the double, which runs its C
 * reference: planar RGB frames decoded on the GPU, placed turned, mirrored, in BTHWC (packed) and BCTHW (planar,
 * channel-major) clip layouts, as bytes and normalised float32. Oracle: the CPU's `FrameWriter.place` on the same
 * frames copied to host (the path the GPU clip took before).
 */
import assert from "node:assert/strict";
import { decodeVideoNvdec, releaseDecoderNvdec } from "../../src/nvdec/decoder.ts";
import { CudaBuffer } from "../../src/cuda/cuda_buffer.ts";
import { placeFrames } from "../../src/nvdec/convert.ts";
import { demuxVideo } from "../../src/media/demux.ts";
import type { VideoPackets } from "../../src/media/packets.ts";
import { FrameWriter } from "../../src/media/frame_writer.ts";
import { frameLayout } from "../../src/media/frames.ts";
import { normalisation } from "../../src/media/orient.ts";
import { generateClip, hasFfmpegCliSync } from "../helpers/media.ts";
import { unbalanced } from "./double/build.ts";
import { useDouble } from "./nvdec_helpers.ts";

Deno.test({
  name:
    "nvdec: the clip kernel turns, mirrors, lays out and normalises exactly as the CPU's FrameWriter.place",
  ignore: !hasFfmpegCliSync(),
}, async () => {
  const dbl = await useDouble();
  dbl.configure();
  const clip = await generateClip({ width: 96, height: 64, bframes: 2, gop: 12, durationSec: 0.4 });
  const packets = await demuxVideo(clip, { bsf: "h264_mp4toannexb" }) as VideoPackets;
  const norm = normalisation([0.45, 0.45, 0.45], [0.225, 0.225, 0.225]);
  {
    using frames = await decodeVideoNvdec(packets, { pixelFormat: "rgb24-planar" });
    const host = await frames.toHost();
    const n = frames.pts.length;
    assert.ok(n >= 8);
    const from = frameLayout("rgb24-planar", 96, 64);
    for (const layout of ["BTHWC", "BCTHW"] as const) {
      for (const float of [false, true]) {
        for (
          const [rotation, mirror] of [[0, false], [0, true], [90, false], [180, true], [270, true]] as const
        ) {
          const what = `${layout} ${float ? "float32" : "uint8"} rotation ${rotation} mirror ${mirror}`;
          const w = new FrameWriter({
            format: layout === "BTHWC" ? "rgb24" : "rgb24-planar",
            rotation,
            mirror,
            flags: 0,
            norm: float ? norm : null,
          }, null);
          w.init(96, 64);
          const [ow, oh] = [w.width, w.height];
          const px = ow * oh;
          // CPU: frame by frame; BCTHW regrouped plane by plane (what collate does).
          const cpuFrames = float ? new Float32Array(n * w.frameSize) : new Uint8Array(n * w.frameSize);
          for (let k = 0; k < n; k++) {
            w.place(
              host.subarray(k * from.frameSize, (k + 1) * from.frameSize),
              from.planes,
              cpuFrames,
              k * w.frameSize,
            );
          }
          let want = cpuFrames;
          if (layout === "BCTHW") {
            want = float ? new Float32Array(cpuFrames.length) : new Uint8Array(cpuFrames.length);
            for (let c = 0; c < 3; c++) {
              for (let t = 0; t < n; t++) {
                want.set(
                  cpuFrames.subarray(t * 3 * px + c * px, t * 3 * px + (c + 1) * px),
                  c * n * px + t * px,
                );
              }
            }
          }
          const strides = layout === "BTHWC"
            ? { x: 3, y: 3 * ow, c: 1, t: 3 * px }
            : { x: 1, y: ow, c: n * px, t: px };
          using out = CudaBuffer.alloc(want.byteLength, 0);
          placeFrames(frames, out.devicePtr, {
            width: ow,
            height: oh,
            strides,
            rotation,
            mirror,
            norm: float ? norm : null,
          });
          const got = new Uint8Array(want.byteLength);
          out.copyToHost(0, got.length, got.length, 1, got);
          if (!float) {
            assert.ok(got.every((v, i) => v === want[i]), `${what}: bytes differ`);
          } else {
            const g = new Float32Array(got.buffer), f = want as Float32Array;
            let worst = 0;
            for (let i = 0; i < f.length; i++) worst = Math.max(worst, Math.abs(g[i] - f[i]));
            assert.ok(worst < 1e-5, `${what}: max difference ${worst}`);
          }
        }
      }
    }
  }
  releaseDecoderNvdec();
  const log = dbl.log();
  assert.deepEqual(unbalanced(log), {});
  assert.ok(
    log.some((l) => /^cuLaunchKernel rc=0 kernel=rgb_planar_to_clip grid=3x8x\d+ w=96 h=64 flags=1$/.test(l)),
  );
  assert.equal(dbl.liveAllocations(), 0);
});
