/**
 * `CudaSlots`: a slot ring's memory on a GPU: one device allocation (a `CudaBuffer`) exported once with
 * `cuIpcGetMemHandle`. A trainer opens the handle (`cuIpcOpenMemHandle`) and views slots as device tensors
 * (`__cuda_array_interface__`), so a batch never passes through host memory on its way to the trainer.
 * {@link CudaSlots.buffer}`.view(offset, length)` is a slot's place for the NVDEC decoder to write into.
 *
 * The allocation lives in its device's primary context, one per device and process: a device address made on
 * one thread is valid in another (a loader's decode Worker) that makes the same context current, so the Workers
 * write batches straight into the exported memory (`batch_slots.ts`).
 * @module
 */

import { CU_IPC_HANDLE_SIZE } from "../../ffi/cuda/symbols.ts";
import { CudaBuffer } from "../cuda/cuda_buffer.ts";
import { checkCu, cuda, withContext } from "../cuda/driver.ts";
import type { MemoryDescriptor } from "./descriptor.ts";
import type { SlotMemory } from "./slot_ring.ts";

/** Device memory for slots; see the module docs. */
export class CudaSlots implements SlotMemory {
  /** The allocation. */
  readonly buffer: CudaBuffer;
  /** The IPC handle, lower-case hex (128 digits). */
  readonly handle: string;

  constructor(size: number, device = 0) {
    this.buffer = CudaBuffer.alloc(size, device);
    try {
      const h = new Uint8Array(CU_IPC_HANDLE_SIZE);
      withContext(
        this.buffer.context,
        () => checkCu(cuda().cuIpcGetMemHandle(h, this.buffer.devicePtr), "serve slots", "cuIpcGetMemHandle"),
      );
      this.handle = [...h].map((b) => b.toString(16).padStart(2, "0")).join("");
    } catch (e) {
      this.buffer[Symbol.dispose]();
      throw e;
    }
  }

  get size(): number {
    return this.buffer.byteLength;
  }

  describe(): MemoryDescriptor {
    return { kind: "cuda", device: this.buffer.device, handle: this.handle, size: this.size };
  }

  write(offset: number, bytes: Uint8Array): void {
    const dst = this.buffer.view(offset, bytes.length);
    withContext(this.buffer.context, () =>
      checkCu(
        cuda().cuMemcpyHtoD_v2(dst.devicePtr, Deno.UnsafePointer.of(bytes), BigInt(bytes.length)),
        "serve slots",
        "cuMemcpyHtoD_v2",
      ));
  }

  read(offset: number, length: number): Uint8Array {
    const out = new Uint8Array(length);
    this.buffer.view(offset, length).copyToHost(0, length, length, 1, out);
    return out;
  }

  [Symbol.dispose](): void {
    this.buffer[Symbol.dispose]();
  }
}
