/**
 * Symbol table for the CUDA driver API (`libcuda.so.1`). Only the versioned names the driver really exports are
 * used (`cuCtxPushCurrent_v2`, `cuMemAlloc_v2`, ...): the unversioned names in `cuda.h` are macros over them.
 * Every argument is commented with its C type. `CUresult` is a 32-bit enum; `CUdeviceptr` is a 64-bit integer
 * on LP64; `CUcontext`, `CUstream`, `CUmodule` and `CUfunction` are opaque pointers.
 * @module
 */

/** libcuda. All calls are synchronous: they are short, and the decoder's callbacks depend on it. */
export const CUDA_SYMBOLS = {
  cuInit: { parameters: ["u32"], result: "i32" }, // CUresult cuInit(unsigned int Flags)
  cuDriverGetVersion: { parameters: ["buffer"], result: "i32" }, // CUresult cuDriverGetVersion(int *driverVersion)
  cuDeviceGetCount: { parameters: ["buffer"], result: "i32" }, // CUresult cuDeviceGetCount(int *count)
  cuDeviceGet: { parameters: ["buffer", "i32"], result: "i32" }, // CUresult cuDeviceGet(CUdevice *device, int ordinal)
  cuDeviceGetName: {
    // CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
    parameters: ["buffer", "i32", "i32"],
    result: "i32",
  },
  cuDevicePrimaryCtxRetain: {
    // CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
    parameters: ["buffer", "i32"],
    result: "i32",
  },
  cuDevicePrimaryCtxRelease_v2: { parameters: ["i32"], result: "i32" }, // CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
  cuDevicePrimaryCtxGetState: {
    // CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
    parameters: ["i32", "buffer", "buffer"],
    result: "i32",
  },
  cuDevicePrimaryCtxSetFlags_v2: { parameters: ["i32", "u32"], result: "i32" }, // CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
  cuCtxGetCurrent: { parameters: ["buffer"], result: "i32" }, // CUresult cuCtxGetCurrent(CUcontext *pctx)
  cuCtxGetDevice: { parameters: ["buffer"], result: "i32" }, // CUresult cuCtxGetDevice(CUdevice *device)
  cuCtxPushCurrent_v2: { parameters: ["pointer"], result: "i32" }, // CUresult cuCtxPushCurrent_v2(CUcontext ctx)
  cuCtxPopCurrent_v2: { parameters: ["buffer"], result: "i32" }, // CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
  cuStreamCreate: { parameters: ["buffer", "u32"], result: "i32" }, // CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
  cuStreamDestroy_v2: { parameters: ["pointer"], result: "i32" }, // CUresult cuStreamDestroy_v2(CUstream hStream)
  cuStreamSynchronize: { parameters: ["pointer"], result: "i32" }, // CUresult cuStreamSynchronize(CUstream hStream)
  cuMemAlloc_v2: { parameters: ["buffer", "usize"], result: "i32" }, // CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
  cuMemFree_v2: { parameters: ["u64"], result: "i32" }, // CUresult cuMemFree_v2(CUdeviceptr dptr)
  cuMemAllocHost_v2: { parameters: ["buffer", "usize"], result: "i32" }, // CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
  cuMemFreeHost: { parameters: ["pointer"], result: "i32" }, // CUresult cuMemFreeHost(void *p)
  cuMemcpy2D_v2: { parameters: ["buffer"], result: "i32" }, // CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *pCopy)
  cuMemcpy2DAsync_v2: {
    // CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *pCopy, CUstream hStream)
    parameters: ["buffer", "pointer"],
    result: "i32",
  },
  cuMemcpyHtoD_v2: {
    // CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
    parameters: ["u64", "pointer", "usize"],
    result: "i32",
  },
  cuMemcpyHtoDAsync_v2: {
    // CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream)
    parameters: ["u64", "pointer", "usize", "pointer"],
    result: "i32",
  },
  cuMemcpyDtoH_v2: {
    // CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
    parameters: ["buffer", "u64", "usize"],
    result: "i32",
  },
  cuModuleLoadData: { parameters: ["buffer", "buffer"], result: "i32" }, // CUresult cuModuleLoadData(CUmodule *module, const void *image)
  cuModuleUnload: { parameters: ["pointer"], result: "i32" }, // CUresult cuModuleUnload(CUmodule hmod)
  cuModuleGetFunction: {
    // CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
    parameters: ["buffer", "pointer", "buffer"],
    result: "i32",
  },
  cuLaunchKernel: {
    // CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
    //   unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ, unsigned int sharedMemBytes,
    //   CUstream hStream, void **kernelParams, void **extra)
    parameters: ["pointer", "u32", "u32", "u32", "u32", "u32", "u32", "u32", "pointer", "buffer", "pointer"],
    result: "i32",
  },
  cuIpcGetMemHandle: { parameters: ["buffer", "u64"], result: "i32" }, // CUresult cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr)
  cuGetErrorName: { parameters: ["i32", "buffer"], result: "i32" }, // CUresult cuGetErrorName(CUresult error, const char **pStr)
  cuGetErrorString: { parameters: ["i32", "buffer"], result: "i32" }, // CUresult cuGetErrorString(CUresult error, const char **pStr)
} as const satisfies Deno.ForeignLibraryInterface;

/** Bytes of a `CUipcMemHandle` (`CU_IPC_HANDLE_SIZE`): an opaque handle another process opens. */
export const CU_IPC_HANDLE_SIZE = 64;

/** `CUmemorytype` values used in `CUDA_MEMCPY2D`. */
export const CU_MEMORYTYPE = { HOST: 1, DEVICE: 2 } as const;

/** `CUctx_flags`' scheduling part: how a host thread waits for the GPU (`cuDevicePrimaryCtxSetFlags_v2`). */
export const CU_CTX_SCHED = { AUTO: 0, SPIN: 1, YIELD: 2, BLOCKING_SYNC: 4, MASK: 7 } as const;

/** `cuStreamCreate`'s flag: the stream does not synchronise with the legacy default stream. */
export const CU_STREAM_NON_BLOCKING = 1;

/** `CUresult` values sluice treats specially (from `cuda.h`). */
export const CUDA_RESULT = {
  SUCCESS: 0,
  INVALID_VALUE: 1,
  OUT_OF_MEMORY: 2,
  NOT_INITIALIZED: 3,
  NO_DEVICE: 100,
  INVALID_DEVICE: 101,
  NOT_SUPPORTED: 801,
  UNKNOWN: 999,
} as const;
