/**
 * The CUDA driver and NVDEC libraries of the current thread (CUDA contexts are per-thread; each Worker opens
 * its own copy), `CUresult` checking into {@link CudaError}, and primary-context references per device.
 * @module
 */
import { OutParam } from "../../ffi/out_param.ts";
import { type CudaLibrary, loadCuda } from "../../ffi/cuda/library.ts";
import { loadNvcuvid, type NvcuvidLibrary } from "../../ffi/nvcuvid/library.ts";
import { cudaErrorText } from "../../ffi/cuda/errors.ts";
import { CudaError, InvalidArgumentError } from "../errors.ts";

/** The driver's symbols. */
export type CudaSymbols = CudaLibrary["symbols"];
/** NVDEC's symbols. */
export type NvcuvidSymbols = NvcuvidLibrary["symbols"];

let cudaLib: CudaLibrary | undefined;
let nvcuvidLib: NvcuvidLibrary | undefined;
let initialized = false;

/** This thread's libcuda, loaded and `cuInit`-ed on first use. Throws `LibraryNotFoundError` or {@link CudaError}. */
export function cuda(): CudaSymbols {
  cudaLib ??= loadCuda();
  if (!initialized) {
    checkCu(cudaLib.symbols.cuInit(0), "", "cuInit");
    initialized = true;
  }
  return cudaLib.symbols;
}

/** This thread's libnvcuvid, loaded on first use. */
export function nvcuvid(): NvcuvidSymbols {
  nvcuvidLib ??= loadNvcuvid();
  return nvcuvidLib.symbols;
}

/**
 * Throws a {@link CudaError} naming `operation` (and `source`, what it was for, when not empty) when `code` is
 * not `CUDA_SUCCESS`: FFmpeg's `check(code, source, operation)` for `CUresult`s, same argument order.
 */
export function checkCu(code: number, source: string, operation: string): void {
  if (code === 0) return;
  throw cudaError(code, source, operation);
}

/** The {@link CudaError} for `code` (its name and text from the driver when it is loaded). */
export function cudaError(code: number, source: string, operation: string): CudaError {
  const text = cudaLib ? cudaErrorText(cudaLib.symbols, code) : { name: `CUresult ${code}`, description: "" };
  return new CudaError(operation, code, text.name, text.description, source);
}

// ------------------------------------------------------------------------------------------ contexts

/** One device's context on this thread, shared by reference count. */
export interface DeviceContext {
  readonly device: number;
  readonly ctx: Deno.PointerObject;
  /** True when sluice retained the primary context (and must release it); false when it reuses the caller's. */
  readonly retained: boolean;
  refs: number;
  /** Resources to release (while current) before the context reference goes, e.g. the kernel module. */
  cleanups: (() => void)[];
}

const contexts = new Map<number, DeviceContext>();

/**
 * Takes a reference to `device`'s context: the context current on this thread when it belongs to that device,
 * else the device's primary context (`cuDevicePrimaryCtxRetain`). Pair with {@link releaseContext}.
 */
export function acquireContext(device = 0): DeviceContext {
  if (!Number.isInteger(device) || device < 0) {
    throw new InvalidArgumentError(`CUDA device must be >= 0, got ${device}`);
  }
  const existing = contexts.get(device);
  if (existing) {
    existing.refs++;
    return existing;
  }
  const cu = cuda();
  const dev = new OutParam();
  checkCu(cu.cuDeviceGet(dev.bytes, device), `CUDA device ${device}`, "cuDeviceGet");
  const cur = new OutParam();
  checkCu(cu.cuCtxGetCurrent(cur.bytes), "", "cuCtxGetCurrent");
  const current = cur.pointer;
  if (current !== null) {
    const curDev = new OutParam();
    if (cu.cuCtxGetDevice(curDev.bytes) === 0 && curDev.i32[0] === dev.i32[0]) {
      const dc = { device, ctx: current, retained: false, refs: 1, cleanups: [] };
      contexts.set(device, dc);
      return dc;
    }
  }
  const pctx = new OutParam();
  checkCu(
    cu.cuDevicePrimaryCtxRetain(pctx.bytes, dev.i32[0]),
    `CUDA device ${device}`,
    "cuDevicePrimaryCtxRetain",
  );
  const dc = { device, ctx: pctx.pointer as Deno.PointerObject, retained: true, refs: 1, cleanups: [] };
  contexts.set(device, dc);
  return dc;
}

/** Drops a reference taken by {@link acquireContext}; the last one runs the cleanups and releases the context. */
export function releaseContext(dc: DeviceContext): void {
  if (dc.refs <= 0) return;
  if (--dc.refs > 0) return;
  contexts.delete(dc.device);
  if (dc.cleanups.length) {
    withContext(dc, () => {
      for (const fn of dc.cleanups.splice(0).reverse()) fn();
    });
  }
  if (dc.retained) {
    checkCu(cuda().cuDevicePrimaryCtxRelease_v2(dc.device), "", "cuDevicePrimaryCtxRelease_v2");
  }
}

/** Runs `fn` with `dc` pushed as the current context, popping it afterwards whatever happens. */
export function withContext<T>(dc: DeviceContext, fn: () => T): T {
  const cu = cuda();
  checkCu(cu.cuCtxPushCurrent_v2(dc.ctx), `CUDA device ${dc.device}`, "cuCtxPushCurrent_v2");
  try {
    return fn();
  } finally {
    cu.cuCtxPopCurrent_v2(null as unknown as Uint8Array<ArrayBuffer>);
  }
}

/** Test hook: forgets the loaded libraries (after every context and decoder was released). */
export function unloadForTests(): void {
  cudaLib?.close();
  nvcuvidLib?.close();
  cudaLib = undefined;
  nvcuvidLib = undefined;
  initialized = false;
  contexts.clear();
}
