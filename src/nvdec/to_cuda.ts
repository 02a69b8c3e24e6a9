/** `toCuda(frames)`: host frames to device memory through pinned staging and an async copy. @module */
import { OutParam } from "../../ffi/out_param.ts";
import { CudaBuffer } from "./cuda_buffer.ts";
import { settle } from "../settle.ts";
import { checkCu, cuda, withContext } from "./driver.ts";

/** Copies `frames` (a `VideoFrames` or raw bytes) to a new {@link CudaBuffer} on `opts.device`. */
export function toCuda(
  frames: { data: Uint8Array } | Uint8Array,
  opts: { device?: number; stream?: Deno.PointerValue } = {},
): Promise<CudaBuffer> {
  return settle(() => {
    const data = frames instanceof Uint8Array ? frames : frames.data;
    const buf = CudaBuffer.alloc(Math.max(1, data.length), opts.device ?? 0);
    try {
      withContext(buf.context, () => {
        const cu = cuda();
        const out = new OutParam();
        checkCu(
          cu.cuMemAllocHost_v2(out.bytes, BigInt(Math.max(1, data.length))),
          "toCuda staging",
          "cuMemAllocHost_v2",
        );
        const pinned = out.pointer!;
        try {
          if (data.length) {
            new Uint8Array(Deno.UnsafePointerView.getArrayBuffer(pinned, data.length)).set(data);
          }
          const stream = opts.stream ?? null;
          checkCu(
            cu.cuMemcpyHtoDAsync_v2(buf.devicePtr, pinned, BigInt(data.length), stream),
            "",
            "cuMemcpyHtoDAsync_v2",
          );
          checkCu(cu.cuStreamSynchronize(stream), "toCuda", "cuStreamSynchronize");
        } finally {
          cu.cuMemFreeHost(pinned);
        }
      });
      return buf;
    } catch (e) {
      buf[Symbol.dispose]();
      throw e;
    }
  });
}
