/**
 * Device memory owned by sluice (`cuMemAlloc_v2` / `cuMemFree_v2`), and the `CudaFrames` a GPU decode returns.
 * Each holds a reference to its device's context until disposed (`using`, or `[Symbol.dispose]()`).
 * @module
 */
import { OutParam } from "../../ffi/out_param.ts";
import { CUDA_MEMCPY2D } from "../../ffi/cuda/layouts.ts";
import { CU_MEMORYTYPE } from "../../ffi/cuda/symbols.ts";
import { SluiceError } from "../errors.ts";
import { acquireContext, checkCu, cuda, type DeviceContext, releaseContext, withContext } from "./driver.ts";
import { StructBuffer } from "./struct_buffer.ts";
import { settle } from "../settle.ts";

/** A block of device memory on one GPU. */
export class CudaBuffer {
  /** CUDA device ordinal. */
  readonly device: number;
  /** Size in bytes. */
  readonly byteLength: number;
  #ptr: bigint;
  readonly #dc: DeviceContext;
  /** The allocation this buffer is a view of; null when it owns its memory. */
  readonly #parent: CudaBuffer | null;

  private constructor(dc: DeviceContext, ptr: bigint, byteLength: number, parent: CudaBuffer | null = null) {
    this.#dc = dc;
    this.device = dc.device;
    this.#ptr = ptr;
    this.byteLength = byteLength;
    this.#parent = parent;
  }

  /**
   * A view of `[offset, offset + byteLength)` of this buffer (e.g. one slot of a batch, for
   * `decodeVideoNvdec`'s `batch` option). The view frees nothing; it must not outlive this buffer.
   */
  view(offset: number, byteLength: number): CudaBuffer {
    if (!Number.isInteger(offset) || !Number.isInteger(byteLength) || offset < 0 || byteLength < 1) {
      throw new SluiceError(`CudaBuffer.view(${offset}, ${byteLength}): offset and length must be integers`);
    }
    if (offset + byteLength > this.byteLength) {
      throw new SluiceError(
        `CudaBuffer.view(${offset}, ${byteLength}) runs past the end of a ${this.byteLength}-byte buffer`,
      );
    }
    return new CudaBuffer(this.#dc, this.devicePtr + BigInt(offset), byteLength, this);
  }

  /** Allocates `byteLength` bytes on `device`. Throws `CudaError` (e.g. CUDA_ERROR_OUT_OF_MEMORY). */
  static alloc(byteLength: number, device = 0): CudaBuffer {
    const dc = acquireContext(device);
    try {
      const out = new OutParam();
      withContext(
        dc,
        () =>
          checkCu(
            cuda().cuMemAlloc_v2(out.bytes, BigInt(byteLength)),
            `${byteLength} bytes`,
            "cuMemAlloc_v2",
          ),
      );
      return new CudaBuffer(dc, out.u64[0], byteLength);
    } catch (e) {
      releaseContext(dc);
      throw e;
    }
  }

  /** The device address (never dereference it on the host). Throws after dispose. */
  get devicePtr(): bigint {
    if (this.#ptr === 0n || (this.#parent !== null && this.#parent.#ptr === 0n)) {
      throw new SluiceError("CudaBuffer used after it was released");
    }
    return this.#ptr;
  }

  /**
   * The context this buffer lives in (for sluice's own copies and kernels).
   * @ignore
   */
  get context(): DeviceContext {
    return this.#dc;
  }

  /** Copies `rows` rows of `rowBytes` from device offset `offset` (rows `pitch` apart) into tight host rows. */
  copyToHost(offset: number, pitch: number, rowBytes: number, rows: number, out: Uint8Array): void {
    const c = new StructBuffer(CUDA_MEMCPY2D)
      .u32("srcMemoryType", CU_MEMORYTYPE.DEVICE).u64("srcDevice", this.devicePtr + BigInt(offset)).u64(
        "srcPitch",
        pitch,
      )
      .u32("dstMemoryType", CU_MEMORYTYPE.HOST).ptr("dstHost", Deno.UnsafePointer.of(out))
      .u64("dstPitch", rowBytes).u64("WidthInBytes", rowBytes).u64("Height", rows);
    withContext(this.#dc, () => checkCu(cuda().cuMemcpy2D_v2(c.bytes), "device to host", "cuMemcpy2D_v2"));
  }

  /** Frees the memory and drops the context reference (a view: nothing). Safe to call twice. */
  [Symbol.dispose](): void {
    if (this.#parent !== null || this.#ptr === 0n) return;
    const p = this.#ptr;
    this.#ptr = 0n;
    try {
      withContext(this.#dc, () => checkCu(cuda().cuMemFree_v2(p), "", "cuMemFree_v2"));
    } finally {
      releaseContext(this.#dc);
    }
  }
}

/** One device-to-device copy: `rows` rows of `rowBytes`, from `src` (rows `srcPitch` apart) to `dst` (`dstPitch`). */
export interface DeviceCopy {
  dst: bigint;
  src: bigint;
  rowBytes: number;
  rows: number;
  srcPitch: number;
  dstPitch: number;
}

/**
 * Copies within device memory of `device` (`cuMemcpy2D_v2`, device to device: no byte crosses PCIe), in that
 * device's primary context, which every thread of the process shares.
 */
export function copyOnDevice(device: number, c: DeviceCopy): void {
  if (c.rows === 0 || c.rowBytes === 0) return;
  const dc = acquireContext(device);
  try {
    const m = new StructBuffer(CUDA_MEMCPY2D)
      .u32("srcMemoryType", CU_MEMORYTYPE.DEVICE).u64("srcDevice", c.src).u64("srcPitch", c.srcPitch)
      .u32("dstMemoryType", CU_MEMORYTYPE.DEVICE).u64("dstDevice", c.dst).u64("dstPitch", c.dstPitch)
      .u64("WidthInBytes", c.rowBytes).u64("Height", c.rows);
    withContext(dc, () => checkCu(cuda().cuMemcpy2D_v2(m.bytes), "device to device", "cuMemcpy2D_v2"));
  } finally {
    releaseContext(dc);
  }
}

/** Output layout of a GPU decode. */
export type NvdecPixelFormat = "rgb24-planar" | "bgr24-planar" | "nv12";

/** Frames decoded on the GPU, in device memory: `[T, 3, H, W]` planar RGB/BGR or `[T, 1.5H, W]` NV12. */
export class CudaFrames {
  /** Device address of frame 0. */
  readonly devicePtr: bigint;
  /** Bytes between rows in device memory (rows are tight: equal to W). */
  readonly pitch: number;
  /** `[T, 3, H, W]` (planar RGB/BGR) or `[T, 1.5H, W]` (NV12). */
  readonly shape: [number, number, number, number] | [number, number, number];
  /** Presentation time of each frame in seconds (`pts × timeBase`), like the CPU decoder's. */
  readonly pts: Float64Array;
  /** Index of each frame in the stream's presentation order, or null, like the CPU's `VideoFrames.frameIndex`. */
  readonly frameIndex: Int32Array | null;
  /** CUDA device ordinal. */
  readonly device: number;
  /** Layout of each frame. */
  readonly pixelFormat: NvdecPixelFormat;
  /** Frame width in pixels. */
  readonly width: number;
  /** Frame height in pixels. */
  readonly height: number;
  /** Bytes per frame. */
  readonly frameSize: number;
  /** Pictures decoded in all (those the frame selector dropped included). */
  readonly decodedFrames: number;
  /** Pictures left undecoded because no output position shows them (`NvdecOptions.skipUnshown`). */
  readonly skippedFrames: number;
  readonly #buffer: CudaBuffer;
  readonly #owned: boolean;

  /** Wraps `init.buffer` (freed on dispose when `owned`) holding `init.pts.length` frames. */
  constructor(init: {
    buffer: CudaBuffer;
    owned: boolean;
    pixelFormat: NvdecPixelFormat;
    width: number;
    height: number;
    pts: Float64Array;
    frameIndex?: Int32Array | null;
    decodedFrames?: number;
    skippedFrames?: number;
  }) {
    this.#buffer = init.buffer;
    this.#owned = init.owned;
    this.pixelFormat = init.pixelFormat;
    this.width = init.width;
    this.height = init.height;
    this.pts = init.pts;
    this.frameIndex = init.frameIndex ?? null;
    this.decodedFrames = init.decodedFrames ?? init.pts.length;
    this.skippedFrames = init.skippedFrames ?? 0;
    this.device = init.buffer.device;
    this.devicePtr = init.buffer.devicePtr;
    this.pitch = init.width;
    const t = init.pts.length;
    this.shape = init.pixelFormat === "nv12"
      ? [t, (init.height * 3) / 2, init.width]
      : [t, 3, init.height, init.width];
    this.frameSize = init.pixelFormat === "nv12"
      ? (init.width * init.height * 3) / 2
      : 3 * init.width * init.height;
  }

  /** Copies every frame to host memory, tight rows (nv12: W·H·3/2 bytes per frame, luma then interleaved UV). */
  toHost(): Promise<Uint8Array> {
    return settle(() => this.toHostSync());
  }

  /** {@link toHost}, synchronously (for code already running inside a Worker). */
  toHostSync(): Uint8Array {
    const rows = (this.frameSize / this.width) * this.pts.length;
    const out = new Uint8Array(this.frameSize * this.pts.length);
    if (rows > 0) this.#buffer.copyToHost(0, this.pitch, this.width, rows, out);
    return out;
  }

  /**
   * The device context the frames live in (for sluice's kernels run on them).
   * @ignore
   */
  get context(): DeviceContext {
    return this.#buffer.context;
  }

  /** Frees the device memory (when this object allocated it). */
  [Symbol.dispose](): void {
    if (this.#owned) this.#buffer[Symbol.dispose]();
  }
}
