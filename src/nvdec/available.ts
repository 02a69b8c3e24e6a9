/**
 * `nvdecAvailable()`: whether GPU decode can run here, answered fast and without side effects that outlive
 * the call (no context is retained), with a one-line reason when it cannot.
 * @module
 */
import { OutParam } from "../../ffi/out_param.ts";
import { CUVIDDECODECAPS } from "../../ffi/nvcuvid/layouts.ts";
import { CUDA_VIDEO_CHROMA, CUDA_VIDEO_CODEC } from "../../ffi/nvcuvid/symbols.ts";
import { acquireContext, checkCu, cuda, releaseContext, withContext } from "../cuda/driver.ts";
import { nvcuvid } from "./nvcuvid.ts";
import { StructBuffer } from "../cuda/struct_buffer.ts";

/** The answer of {@link nvdecAvailable}. */
export type NvdecAvailability = { ok: true; device: string; driverVersion: number } | {
  ok: false;
  reason: string;
};

/**
 * Whether NVDEC can decode here: libcuda and libnvcuvid load and `device` exists. A failure is an answer with
 * its reason, never an exception.
 * @param device the CUDA device's ordinal (default 0)
 * @returns `ok: true` with the device's name and the driver's version, or `ok: false` with why not
 * @example
 * ```ts
 * import { nvdecAvailable } from "@sluice/sluice/nvdec";
 * const a = nvdecAvailable();
 * console.log(a.ok ? `NVDEC on ${a.device}` : `no NVDEC: ${a.reason}`);
 * ```
 */
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

/** The codecs sluice's NVDEC path decodes, by FFmpeg's codec name, as `cudaVideoCodec` values. */
export const NVDEC_CODECS: Readonly<Record<string, number>> = {
  h264: CUDA_VIDEO_CODEC.H264,
  hevc: CUDA_VIDEO_CODEC.HEVC,
  vp9: CUDA_VIDEO_CODEC.VP9,
  av1: CUDA_VIDEO_CODEC.AV1,
};

/**
 * NVDEC engines on `device` that decode `codec` (8-bit 4:2:0, from `cuvidGetDecoderCaps`), or `undefined` when
 * none does, the driver does not say, or sluice's NVDEC path does not decode `codec`.
 * @param device the CUDA device's ordinal (default 0)
 * @param codec the codec asked about, by FFmpeg's name (default h264: every NVDEC decodes it, so this is the
 *   engine count)
 * @returns the engine count, or `undefined`
 */
export function nvdecEngines(
  device = 0,
  codec = "h264",
): number | undefined {
  const cudaCodec = NVDEC_CODECS[codec];
  if (cudaCodec === undefined) return undefined;
  try {
    const dc = acquireContext(device);
    try {
      return withContext(dc, () => {
        const caps = new StructBuffer(CUVIDDECODECAPS)
          .i32("eCodecType", cudaCodec).i32("eChromaFormat", CUDA_VIDEO_CHROMA.YUV420);
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

/**
 * The default decode concurrency of a pipeline's `decode: "nvdec"` stage.
 * @param device the CUDA device's ordinal (default 0)
 * @returns the device's NVDEC engine count, or 4 when the driver does not say
 */
export function nvdecConcurrency(device = 0): number {
  return nvdecEngines(device) ?? 4;
}

/**
 * Which decoder a pipeline should use for `decode: "cpu" | "nvdec" | "auto"`. `"auto"` picks NVDEC when
 * {@link nvdecAvailable} says so (for `device`), else the CPU, logging one line (via `log`) with the reason.
 * @param kind the `decode` option as given
 * @param log where the fallback's line goes (default: stderr)
 * @param device the CUDA device's ordinal (default 0)
 * @returns `kind` itself unless it is `"auto"`; then `"nvdec"` or `"cpu"`
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
