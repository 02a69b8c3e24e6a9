/**
 * The CUDA driver library of the current thread (CUDA contexts are per-thread; each Worker opens its own copy),
 * `CUresult` checking into {@link CudaError}, and primary-context references per device. NVDEC's library is
 * `src/nvdec/nvcuvid.ts`.
 * @module
 */
import { OutParam } from "../../ffi/out_param.ts";
import { type CudaLibrary, loadCuda } from "../../ffi/cuda/library.ts";
import { cudaErrorText } from "../../ffi/cuda/errors.ts";
import { CudaError, InvalidArgumentError } from "../errors.ts";
import { CU_CTX_SCHED, CU_STREAM_NON_BLOCKING } from "../../ffi/cuda/symbols.ts";

/** The driver's symbols. */
export type CudaSymbols = CudaLibrary["symbols"];

let cudaLib: CudaLibrary | undefined;
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

/** `SLUICE_CUDA_SCHED`'s values, the default first. */
const SCHED_FLAGS = {
  auto: CU_CTX_SCHED.AUTO,
  spin: CU_CTX_SCHED.SPIN,
  yield: CU_CTX_SCHED.YIELD,
  blocking: CU_CTX_SCHED.BLOCKING_SYNC,
} as const;

/**
 * How sluice's NVDEC work meets the driver, from the environment (read once per thread; the GPU kit A/Bs them):
 * - `SLUICE_CUDA_SCHED`: `auto` (default: the driver's choice, which spins while the context's threads are fewer
 *   than the cores), `spin`, `yield` or `blocking` (a waiting thread sleeps): set on the primary context when
 *   sluice is the first to retain it, else left as its owner set it;
 * - `SLUICE_NVDEC_STREAM`: `own` (default: each thread's work on a stream of its own, so threads sharing the
 *   primary context do not wait for each other's copies and kernels) or `legacy` (the legacy default stream);
 * - `SLUICE_NVDEC_REUSE`: `on` (default: keep a thread's decoder caps and device buffers
 *   between clips) or `off` (query and allocate for every clip).
 */
export const NVDEC_SETTINGS: { sched: keyof typeof SCHED_FLAGS; stream: "own" | "legacy"; reuse: boolean } =
  (() => {
    const env = (name: string) => {
      try {
        return Deno.env.get(name)?.trim().toLowerCase() || undefined;
      } catch {
        return undefined; // no env permission: defaults
      }
    };
    const pick = <T extends string>(name: string, allowed: readonly T[]): T => {
      const v = env(name) ?? allowed[0];
      if (!allowed.includes(v as T)) {
        throw new InvalidArgumentError(`${name}=${v}: expected one of ${allowed.join(", ")}`);
      }
      return v as T;
    };
    return {
      sched: pick("SLUICE_CUDA_SCHED", Object.keys(SCHED_FLAGS) as (keyof typeof SCHED_FLAGS)[]),
      stream: pick("SLUICE_NVDEC_STREAM", ["own", "legacy"] as const),
      reuse: pick("SLUICE_NVDEC_REUSE", ["on", "off"] as const) === "on",
    };
  })();

/** One device's context on this thread, shared by reference count. */
export interface DeviceContext {
  readonly device: number;
  readonly ctx: Deno.PointerObject;
  /** True when sluice retained the primary context (and must release it); false when it reuses the caller's. */
  readonly retained: boolean;
  refs: number;
  /** Resources to release (while current) before the context reference goes, e.g. the kernel module. */
  cleanups: (() => void)[];
  /** This thread's stream in the context ({@link workStream}); undefined until made. */
  stream?: Deno.PointerValue;
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
  setSchedule(cu, dev.i32[0]);
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

/** `SLUICE_CUDA_SCHED` onto an inactive primary context (an active one keeps what its owner chose). */
function setSchedule(cu: CudaSymbols, dev: number): void {
  if (NVDEC_SETTINGS.sched === "auto") return;
  const flags = new Uint32Array(1), active = new Int32Array(1);
  const state = cu.cuDevicePrimaryCtxGetState(
    dev,
    new Uint8Array(flags.buffer),
    new Uint8Array(active.buffer),
  );
  checkCu(state, `CUDA device ${dev}`, "cuDevicePrimaryCtxGetState");
  if (active[0] !== 0) return;
  const sched = (flags[0] & ~CU_CTX_SCHED.MASK) | SCHED_FLAGS[NVDEC_SETTINGS.sched];
  checkCu(
    cu.cuDevicePrimaryCtxSetFlags_v2(dev, sched),
    `CUDA device ${dev}`,
    "cuDevicePrimaryCtxSetFlags_v2",
  );
}

/** The primary context's scheduling flags now (`cuDevicePrimaryCtxGetState`): which wait the threads get. */
export function contextSchedule(device = 0): { flags: number; active: boolean; schedule: string } {
  const cu = cuda();
  const dev = new OutParam();
  checkCu(cu.cuDeviceGet(dev.bytes, device), `CUDA device ${device}`, "cuDeviceGet");
  const flags = new Uint32Array(1), active = new Int32Array(1);
  const rc = cu.cuDevicePrimaryCtxGetState(
    dev.i32[0],
    new Uint8Array(flags.buffer),
    new Uint8Array(active.buffer),
  );
  checkCu(rc, `CUDA device ${device}`, "cuDevicePrimaryCtxGetState");
  const s = flags[0] & CU_CTX_SCHED.MASK;
  const schedule = Object.entries(SCHED_FLAGS).find(([, v]) => v === s)?.[0] ?? `flags ${s}`;
  return { flags: flags[0], active: active[0] !== 0, schedule };
}

/**
 * This thread's stream in `dc` (made on first use, non-blocking, destroyed with the context's last reference), or
 * null (the legacy default stream) under `SLUICE_NVDEC_STREAM=legacy`. `dc` must be current.
 */
export function workStream(dc: DeviceContext): Deno.PointerValue {
  if (NVDEC_SETTINGS.stream === "legacy") return null;
  if (dc.stream === undefined) {
    const out = new OutParam();
    checkCu(
      cuda().cuStreamCreate(out.bytes, CU_STREAM_NON_BLOCKING),
      `CUDA device ${dc.device}`,
      "cuStreamCreate",
    );
    const s = out.pointer;
    dc.stream = s;
    dc.cleanups.push(() => {
      dc.stream = undefined;
      checkCu(cuda().cuStreamDestroy_v2(s), "", "cuStreamDestroy_v2");
    });
  }
  return dc.stream;
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
