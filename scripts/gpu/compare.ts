/**
 * NVDEC against the CPU decode of the same packets (the kit's FFmpeg): NV12 planes byte for byte (H.264 and HEVC
 * decoding is exact, so the luma of a correct decode is identical), planar RGB by PSNR (the NV12 → RGB kernel
 * against libswscale), and the frames' times.
 * @module
 */
import { decodeVideoNvdec } from "../../src/nvdec/decoder.ts";
import { decodeVideo } from "../../src/media/decode.ts";
import { demuxVideo } from "../../src/media/demux.ts";
import type { VideoPackets } from "../../src/media/packets.ts";
import { db, psnr, round } from "./result.ts";

/** What one comparison saw. */
export interface Comparison {
  frames: number;
  cpuFrames: number;
  /** Frames whose luma plane is byte-identical to the CPU's. */
  lumaIdentical: number;
  /** Frames whose interleaved chroma equals the CPU's U and V planes. */
  chromaIdentical: number;
  /** First frame whose luma differs, and how many of its bytes do. */
  firstLumaDiff: { frame: number; bytes: number } | null;
  ptsEqual: boolean;
  rgbPsnrDb: number | string;
  nvdecMs: number;
  cpuMs: number;
}

/**
 * Packed RGB frames made planar (`[T, H, W, 3]` → `[T, 3, H, W]`). The oracle is libswscale's packed RGB24, as
 * the ffmpeg CLI makes it: its `gbrp` (`decodeVideo`'s "rgb24-planar") interpolates chroma another way, 27 dB
 * apart from it on testsrc2's saturated edges.
 */
export function planarOf(f: { data: Uint8Array; width: number; height: number }): Uint8Array {
  const px = f.width * f.height, out = new Uint8Array(f.data.length);
  for (let base = 0; base < f.data.length; base += 3 * px) {
    for (let i = 0; i < px; i++) {
      out[base + i] = f.data[base + 3 * i];
      out[base + px + i] = f.data[base + 3 * i + 1];
      out[base + 2 * px + i] = f.data[base + 3 * i + 2];
    }
  }
  return out;
}

/** The packets of `path` in `window` (seconds), or all of them. */
export async function packetsOf(path: string, window?: [number, number]): Promise<VideoPackets> {
  return await demuxVideo(path, window ? { window } : {}) as VideoPackets;
}

/** Decodes `packets` both ways and compares; see the module docs. */
export async function compareDecodes(packets: VideoPackets): Promise<Comparison> {
  let t = performance.now();
  using nv = await decodeVideoNvdec(packets, { pixelFormat: "nv12" });
  const nvHost = await nv.toHost();
  const nvdecMs = performance.now() - t;
  t = performance.now();
  const cpu = await decodeVideo(packets, { pixelFormat: "yuv420p" });
  const cpuMs = performance.now() - t;
  const w = nv.width, h = nv.height, n = Math.min(nv.pts.length, cpu.pts.length);
  const fs = (w * h * 3) / 2;
  const [py, pu, pv] = cpu.planes;
  let luma = 0, chroma = 0;
  let firstLumaDiff: Comparison["firstLumaDiff"] = null;
  for (let k = 0; k < n; k++) {
    const a = nvHost.subarray(k * fs, k * fs + w * h);
    const base = k * cpu.frameSize;
    const b = cpu.data.subarray(base + py.offset, base + py.offset + w * h);
    let diff = 0;
    for (let i = 0; i < a.length; i++) diff += a[i] === b[i] ? 0 : 1;
    if (diff === 0) luma++;
    else firstLumaDiff ??= { frame: k, bytes: diff };
    const uv = nvHost.subarray(k * fs + w * h, (k + 1) * fs);
    const u = cpu.data.subarray(base + pu.offset), v = cpu.data.subarray(base + pv.offset);
    let same = true;
    for (let i = 0; same && i < uv.length / 2; i++) same = uv[2 * i] === u[i] && uv[2 * i + 1] === v[i];
    if (same) chroma++;
  }
  const ptsEqual = nv.pts.length === cpu.pts.length &&
    nv.pts.every((x, i) => Math.abs(x - cpu.pts[i]) < 1e-9);
  using rgb = await decodeVideoNvdec(packets, { pixelFormat: "rgb24-planar" });
  const rgbHost = await rgb.toHost();
  const cpuRgb = planarOf(await decodeVideo(packets, { pixelFormat: "rgb24" }));
  const rgbPsnrDb = rgbHost.length === cpuRgb.length ? db(psnr(rgbHost, cpuRgb)) : "size differs";
  return {
    frames: nv.pts.length,
    cpuFrames: cpu.pts.length,
    lumaIdentical: luma,
    chromaIdentical: chroma,
    firstLumaDiff,
    ptsEqual,
    rgbPsnrDb,
    nvdecMs: round(nvdecMs),
    cpuMs: round(cpuMs),
  };
}

/** The least RGB PSNR a correct decode gives (the kernel's chroma upsampling against libswscale's). */
export const RGB_PSNR_DB = 40;

/** Whether `c` is a correct decode, and if not, why. */
export function judge(c: Comparison): string | null {
  const why: string[] = [];
  if (c.frames === 0) why.push("no frames");
  if (c.frames !== c.cpuFrames) why.push(`${c.frames} frames, the CPU ${c.cpuFrames}`);
  if (c.lumaIdentical !== c.frames) {
    why.push(
      `luma identical in ${c.lumaIdentical}/${c.frames} frames (first: ${JSON.stringify(c.firstLumaDiff)})`,
    );
  }
  if (!c.ptsEqual) why.push("pts differ from the CPU's");
  if (typeof c.rgbPsnrDb === "string" ? c.rgbPsnrDb !== "inf" : c.rgbPsnrDb < RGB_PSNR_DB) {
    why.push(`RGB PSNR ${c.rgbPsnrDb} dB < ${RGB_PSNR_DB}`);
  }
  return why.length ? why.join("; ") : null;
}
