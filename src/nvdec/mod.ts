/**
 * GPU decode with NVDEC, through libnvcuvid and the CUDA driver API (`Deno.dlopen`, no C shim):
 * {@link decodeVideoNvdec} takes the same `VideoPackets` as the CPU's `decodeVideo` (`@sluice/sluice/media`),
 * chooses the same frames, resizes and crops on the GPU and leaves the frames in device memory
 * ({@link CudaFrames}: `[T, 3, H, W]` planar RGB/BGR or NV12), or writes them into a slot of a caller's
 * {@link CudaBuffer}. {@link toCuda} copies host frames to the device. {@link nvdecAvailable} says whether a
 * driver is there (and why not), {@link selectDecoder} resolves `"auto"`.
 *
 * Each thread caches one decoder and reconfigures it for the next stream when it fits;
 * {@link releaseDecoderNvdec} destroys it (the CPU's twin is `releaseDecoder`). `SLUICE_LIBCUDA` and
 * `SLUICE_LIBNVCUVID` override the library paths.
 *
 * @example Decode on the GPU when there is one
 * ```ts
 * import { demuxVideo } from "@sluice/sluice/media";
 * import { decodeVideoNvdec, nvdecAvailable, releaseDecoderNvdec } from "@sluice/sluice/nvdec";
 *
 * const gpu = nvdecAvailable();
 * if (gpu.ok) {
 *   const packets = await demuxVideo("clip.mp4", { window: [0, 2] });
 *   using frames = await decodeVideoNvdec(packets, { pixelFormat: "rgb24-planar", width: 224, height: 224 });
 *   console.log(frames.shape); // [T, 3, 224, 224], in device memory
 *   const host: Uint8Array = await frames.toHost(); // tight rows, for checking
 *   console.log(host.length);
 *   releaseDecoderNvdec();
 * } else {
 *   console.log(`no NVDEC: ${gpu.reason}`);
 * }
 * ```
 * @module
 */

export { decodeVideoNvdec, type NvdecOptions, releaseDecoderNvdec } from "./decoder.ts";
export { CudaBuffer, CudaFrames, type NvdecPixelFormat } from "./cuda_buffer.ts";
export { toCuda } from "./to_cuda.ts";
export { type NvdecAvailability, nvdecAvailable, nvdecConcurrency, selectDecoder } from "./available.ts";
