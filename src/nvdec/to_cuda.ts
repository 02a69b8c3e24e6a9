/** `toCuda(frames)`: host frames to device memory through pinned staging and an async copy. @module */
import { CudaBuffer } from "./cuda_buffer.ts";
import { check, cuda, outSlot, slotPointer, withContext } from "./driver.ts";

/** Copies `frames` (a `VideoFrames` or raw bytes) to a new {@link CudaBuffer} on `opts.device`. */
export function toCuda(
  frames: { data: Uint8Array } | Uint8Array,
  opts: { device?: number; stream?: Deno.PointerValue } = {},
): Promise<CudaBuffer> {
  try {
    const data = frames instanceof Uint8Array ? frames : frames.data;
    const buf = CudaBuffer.alloc(Math.max(1, data.length), opts.device ?? 0);
    try {
      withContext(buf.context, () => {
        const cu = cuda();
        const slot = outSlot();
        check(
          cu.cuMemAllocHost_v2(slot.bytes, BigInt(Math.max(1, data.length))),
          "cuMemAllocHost_v2",
          "toCuda staging",
        );
        const pinned = slotPointer(slot)!;
        try {
          if (data.length) {
            new Uint8Array(Deno.UnsafePointerView.getArrayBuffer(pinned, data.length)).set(data);
          }
          const stream = opts.stream ?? null;
          check(
            cu.cuMemcpyHtoDAsync_v2(buf.devicePtr, pinned, BigInt(data.length), stream),
            "cuMemcpyHtoDAsync_v2",
          );
          check(cu.cuStreamSynchronize(stream), "cuStreamSynchronize", "toCuda");
        } finally {
          cu.cuMemFreeHost(pinned);
        }
      });
      return Promise.resolve(buf);
    } catch (e) {
      buf[Symbol.dispose]();
      throw e;
    }
  } catch (e) {
    return Promise.reject(e);
  }
}
