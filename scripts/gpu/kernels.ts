/**
 * Phase `kernels`: what runs with the CUDA driver alone (no NVDEC): the PTX kernels JIT-compiled by the driver,
 * fed with CPU-decoded frames copied to the device — NV12 → planar RGB against libswscale, and the clip kernel
 * (turn, mirror, BTHWC/BCTHW layout, uint8/float32 normalisation) against the CPU's `FrameWriter.place` — and
 * the device batch slots (one allocation exported for CUDA IPC).
 * @module
 */
import { toCuda } from "../../src/cuda/to_cuda.ts";
import { CudaBuffer, CudaFrames } from "../../src/cuda/cuda_buffer.ts";
import { launchNv12ToRgb, placeFrames } from "../../src/nvdec/convert.ts";
import { checkCu, cuda, withContext } from "../../src/cuda/driver.ts";
import { CudaSlots } from "../../src/memory/cuda_slots.ts";
import { decodeVideo } from "../../src/media/decode.ts";
import { FrameWriter } from "../../src/media/frame_writer.ts";
import { frameLayout } from "../../src/media/frames.ts";
import { normalisation } from "../../src/media/orient.ts";
import { clipFor, cudaState } from "./kit.ts";
import { packetsOf, planarOf } from "./compare.ts";
import { db, fail, pass, type PhaseResult, psnr, skip, verdict } from "./result.ts";

/** The kernels phase. */
export async function kernels(r: PhaseResult): Promise<void> {
  const cu = cudaState();
  const clip = clipFor("speed-small");

  await r.check("NV12 to RGB kernel", async () => {
    if (!cu.ok) return skip(cu.reason);
    const packets = await packetsOf(clip.path, [0, 0.3]);
    const yuv = await decodeVideo(packets, { pixelFormat: "yuv420p" });
    const want = planarOf(await decodeVideo(packets, { pixelFormat: "rgb24" }));
    const { width: w, height: h } = yuv, n = yuv.pts.length;
    const [py, pu, pv] = yuv.planes;
    // NV12 on the host (Y, then U and V interleaved), as NVDEC leaves it on the device
    const nv12 = new Uint8Array(n * w * h * 1.5);
    for (let k = 0; k < n; k++) {
      const src = yuv.data.subarray(k * yuv.frameSize), dst = nv12.subarray(k * w * h * 1.5);
      dst.set(src.subarray(py.offset, py.offset + w * h));
      for (let i = 0; i < (w / 2) * (h / 2); i++) {
        dst[w * h + 2 * i] = src[pu.offset + i];
        dst[w * h + 2 * i + 1] = src[pv.offset + i];
      }
    }
    using input = await toCuda(nv12);
    using out = CudaBuffer.alloc(n * 3 * w * h, input.device);
    withContext(out.context, () => {
      for (let k = 0; k < n; k++) {
        const luma = input.devicePtr + BigInt(k * w * h * 1.5);
        launchNv12ToRgb(out.context, {
          luma,
          chroma: luma + BigInt(w * h),
          srcPitch: w,
          dst: out.devicePtr + BigInt(k * 3 * w * h),
          width: w,
          height: h,
          matrix: "bt601",
          fullRange: false,
          bgr: false,
        });
      }
      checkCu(cuda().cuStreamSynchronize(null), "kernels phase", "cuStreamSynchronize");
    });
    const got = new Uint8Array(n * 3 * w * h);
    out.copyToHost(0, got.length, got.length, 1, got);
    const d = psnr(got, want);
    return verdict(d >= 40, `PSNR ${db(d)} dB against libswscale, below 40`, {
      frames: n,
      size: `${w}x${h}`,
      psnrDb: db(d),
    });
  });

  await r.check("clip kernel", async () => {
    if (!cu.ok) return skip(cu.reason);
    const rgb = await decodeVideo(await packetsOf(clip.path, [0, 0.3]), { pixelFormat: "rgb24-planar" });
    const { width: w, height: h } = rgb, n = rgb.pts.length;
    using buffer = await toCuda(rgb.data);
    const frames = new CudaFrames({
      buffer,
      owned: false,
      pixelFormat: "rgb24-planar",
      width: w,
      height: h,
      pts: rgb.pts,
    });
    const norm = normalisation([0.45, 0.45, 0.45], [0.225, 0.225, 0.225]);
    const from = frameLayout("rgb24-planar", w, h);
    const results: string[] = [];
    const bad: string[] = [];
    for (const layout of ["BTHWC", "BCTHW"] as const) {
      for (const float of [false, true]) {
        for (
          const [rotation, mirror] of [[0, false], [0, true], [90, false], [180, true], [270, true]] as const
        ) {
          const what = `${layout} ${float ? "float32" : "uint8"} rot ${rotation}${mirror ? " mirror" : ""}`;
          const writer = new FrameWriter({
            format: layout === "BTHWC" ? "rgb24" : "rgb24-planar",
            rotation,
            mirror,
            flags: 0,
            norm: float ? norm : null,
          }, null);
          writer.init(w, h);
          const [ow, oh] = [writer.width, writer.height], px = ow * oh;
          const cpu = float ? new Float32Array(n * writer.frameSize) : new Uint8Array(n * writer.frameSize);
          for (let k = 0; k < n; k++) {
            writer.place(
              rgb.data.subarray(k * from.frameSize, (k + 1) * from.frameSize),
              from.planes,
              cpu,
              k * writer.frameSize,
            );
          }
          let want = cpu;
          if (layout === "BCTHW") { // regrouped plane by plane, as collate does
            want = float ? new Float32Array(cpu.length) : new Uint8Array(cpu.length);
            for (let c = 0; c < 3; c++) {
              for (let t = 0; t < n; t++) {
                want.set(cpu.subarray(t * 3 * px + c * px, t * 3 * px + (c + 1) * px), c * n * px + t * px);
              }
            }
          }
          const strides = layout === "BTHWC"
            ? { x: 3, y: 3 * ow, c: 1, t: 3 * px }
            : { x: 1, y: ow, c: n * px, t: px };
          using out = CudaBuffer.alloc(want.byteLength, buffer.device);
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
          let worst = 0;
          if (float) {
            const g = new Float32Array(got.buffer), f = want as Float32Array;
            for (let i = 0; i < f.length; i++) worst = Math.max(worst, Math.abs(g[i] - f[i]));
          } else {
            for (let i = 0; i < got.length; i++) worst = Math.max(worst, Math.abs(got[i] - want[i]));
          }
          results.push(`${what}: max diff ${worst}`);
          if (float ? worst >= 1e-5 : worst !== 0) bad.push(`${what}: max difference ${worst}`);
        }
      }
    }
    return bad.length
      ? fail(bad.join("; "), { results })
      : pass({ frames: n, size: `${w}x${h}`, cases: results.length });
  });

  await r.check("device slots", () => {
    if (!cu.ok) return skip(cu.reason);
    const size = 4 << 20;
    using slots = new CudaSlots(size, 0);
    const pattern = new Uint8Array(size / 2).map((_, i) => (i * 7 + 3) & 0xff);
    slots.write(size / 4, pattern);
    const back = slots.read(size / 4, pattern.length);
    const same = back.every((v, i) => v === pattern[i]);
    const handle = slots.describe();
    if (handle.kind !== "cuda" || !/^[0-9a-f]{128}$/.test(handle.handle) || /^0+$/.test(handle.handle)) {
      return fail(`no CUDA IPC handle: ${JSON.stringify(handle)}`);
    }
    return verdict(same, "bytes read back from the slots differ from those written", {
      bytes: size,
      ipcHandle: `${handle.handle.slice(0, 16)}…`,
    });
  });
}
