/**
 * `nvdecAvailable()`: whether GPU decode can run here, answered fast and without side effects that outlive
 * the call (no context is retained), with a one-line reason when it cannot.
 * @module
 */
import { OutParam } from "../../ffi/out_param.ts";
import { CUVIDDECODECAPS } from "../../ffi/nvcuvid/layouts.ts";
import { CUDA_VIDEO_CHROMA, CUDA_VIDEO_CODEC } from "../../ffi/nvcuvid/symbols.ts";
import { acquireContext, checkCu, cuda, nvcuvid, releaseContext, withContext } from "./driver.ts";
import { StructBuffer } from "./struct_buffer.ts";

/** The answer of {@link nvdecAvailable}. */
export type NvdecAvailability = { ok: true; device: string; driverVersion: number } | {
  ok: false;
  reason: string;
};

/** Whether libcuda and libnvcuvid load and `device` exists. Never throws. */
export function nvdecAvailable(device = 0): NvdecAvailability {
  try {
    const cu = cuda();
    nvcuvid();
    const count = new OutParam();
    checkCu(cu.cuDeviceGetCount(count.bytes), "", "cuDeviceGetCount");
    if (count.i32[0] <= device) {
      return { ok: false, reason: `CUDA device ${device} does not exist (${count.i32[0]} found)` };
    }
    const name = new Uint8Array(256);
    checkCu(cu.cuDeviceGetName(name, name.length, device), "", "cuDeviceGetName");
    const version = new OutParam();
    checkCu(cu.cuDriverGetVersion(version.bytes), "", "cuDriverGetVersion");
    const text = new TextDecoder().decode(name.subarray(0, name.indexOf(0)));
    return { ok: true, device: text, driverVersion: version.i32[0] };
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    return { ok: false, reason: msg.split("\n")[0] };
  }
}

/** NVDEC engines on `device` (from `cuvidGetDecoderCaps`), or `undefined` when unknown. */
export function nvdecEngines(device = 0): number | undefined {
  try {
    const dc = acquireContext(device);
    try {
      return withContext(dc, () => {
        const caps = new StructBuffer(CUVIDDECODECAPS)
          .i32("eCodecType", CUDA_VIDEO_CODEC.H264).i32("eChromaFormat", CUDA_VIDEO_CHROMA.YUV420);
        checkCu(nvcuvid().cuvidGetDecoderCaps(caps.bytes), "", "cuvidGetDecoderCaps");
        return caps.getU8("nNumNVDECs") || undefined;
      });
    } finally {
      releaseContext(dc);
    }
  } catch {
    return undefined;
  }
}

/** Default decode concurrency for a pipeline's `decode: "nvdec"` stage: the NVDEC engine count, else 4. */
export function nvdecConcurrency(device = 0): number {
  return nvdecEngines(device) ?? 4;
}

/**
 * Which decoder a pipeline should use for `decode: "cpu" | "nvdec" | "auto"`. `"auto"` picks NVDEC when
 * {@link nvdecAvailable} says so (for `device`), else the CPU, logging one line (via `log`) with the reason.
 */
export function selectDecoder(
  kind: "cpu" | "nvdec" | "auto",
  log: (line: string) => void = (l) => console.error(l),
  device = 0,
): "cpu" | "nvdec" {
  if (kind !== "auto") return kind;
  const a = nvdecAvailable(device);
  if (a.ok) return "nvdec";
  log(`sluice: decode "auto" falls back to the CPU: ${a.reason}`);
  return "cpu";
}
