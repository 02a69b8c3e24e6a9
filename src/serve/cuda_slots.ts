/**
 * `CudaSlots`: a slot ring's memory on a GPU: one device allocation (`cuMemAlloc`) exported once with
 * `cuIpcGetMemHandle`. A trainer opens the handle (`cuIpcOpenMemHandle`) and views slots as device tensors
 * (`__cuda_array_interface__`), so a batch never passes through host memory on its way to the trainer.
 *
 * CUDA contexts are per thread: the allocation is made and written from the thread that created it (the
 * server's main thread).
 * @module
 */

import { CU_IPC_HANDLE_SIZE } from "../../ffi/cuda/symbols.ts";
import {
  acquireContext,
  check,
  cuda,
  type DeviceContext,
  outSlot,
  releaseContext,
  withContext,
} from "../nvdec/driver.ts";
import type { MemoryDescriptor } from "./protocol.ts";
import type { SlotMemory } from "./slot_ring.ts";

/** Device memory for slots; see the module docs. */
export class CudaSlots implements SlotMemory {
  readonly size: number;
  readonly device: number;
  /** The device address of the allocation (this process). */
  readonly base: bigint;
  /** The IPC handle, lower-case hex (128 digits). */
  readonly handle: string;
  readonly #ctx: DeviceContext;
  #freed = false;

  constructor(size: number, device = 0) {
    this.size = size;
    this.device = device;
    this.#ctx = acquireContext(device);
    const cu = cuda();
    try {
      const slot = outSlot();
      withContext(
        this.#ctx,
        () => check(cu.cuMemAlloc_v2(slot.bytes, BigInt(size)), "cuMemAlloc_v2", "serve slots"),
      );
      this.base = slot.u64[0];
      const h = new Uint8Array(CU_IPC_HANDLE_SIZE);
      try {
        withContext(
          this.#ctx,
          () => check(cu.cuIpcGetMemHandle(h, this.base), "cuIpcGetMemHandle", "serve slots"),
        );
      } catch (e) {
        withContext(this.#ctx, () => cu.cuMemFree_v2(this.base));
        throw e;
      }
      this.handle = [...h].map((b) => b.toString(16).padStart(2, "0")).join("");
    } catch (e) {
      releaseContext(this.#ctx);
      throw e;
    }
  }

  describe(): MemoryDescriptor {
    return { kind: "cuda", device: this.device, handle: this.handle, size: this.size };
  }

  write(offset: number, bytes: Uint8Array): void {
    this.#bounds(offset, bytes.length);
    const cu = cuda();
    withContext(this.#ctx, () =>
      check(
        cu.cuMemcpyHtoD_v2(this.base + BigInt(offset), Deno.UnsafePointer.of(bytes), BigInt(bytes.length)),
        "cuMemcpyHtoD_v2",
        "serve slots",
      ));
  }

  read(offset: number, length: number): Uint8Array {
    this.#bounds(offset, length);
    const out = new Uint8Array(length);
    const cu = cuda();
    withContext(
      this.#ctx,
      () =>
        check(
          cu.cuMemcpyDtoH_v2(out, this.base + BigInt(offset), BigInt(length)),
          "cuMemcpyDtoH_v2",
          "serve slots",
        ),
    );
    return out;
  }

  [Symbol.dispose](): void {
    if (this.#freed) return;
    this.#freed = true;
    withContext(this.#ctx, () => cuda().cuMemFree_v2(this.base));
    releaseContext(this.#ctx);
  }

  #bounds(offset: number, length: number): void {
    if (offset < 0 || length < 0 || offset + length > this.size) {
      throw new RangeError(`serve slots: [${offset}, ${offset + length}) is outside ${this.size} bytes`);
    }
  }
}
