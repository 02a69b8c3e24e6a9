/**
 * Struct layouts of the CUDA driver API for Linux x86-64 (LP64), written from `cuda.h` of the CUDA toolkit
 * (`size_t`, pointers and `CUdeviceptr` are 8 bytes; enums are 4 bytes, padded to the next 8-byte field).
 * Offsets were checked with `offsetof` against `/usr/local/cuda/include/cuda.h`.
 * @module
 */

/** `CUDA_MEMCPY2D` (`CUDA_MEMCPY2D_v2`), 128 bytes. */
export const CUDA_MEMCPY2D = {
  size: 128,
  srcXInBytes: 0, // size_t
  srcY: 8, // size_t
  srcMemoryType: 16, // CUmemorytype (4 bytes + 4 padding)
  srcHost: 24, // const void *
  srcDevice: 32, // CUdeviceptr
  srcArray: 40, // CUarray
  srcPitch: 48, // size_t
  dstXInBytes: 56, // size_t
  dstY: 64, // size_t
  dstMemoryType: 72, // CUmemorytype
  dstHost: 80, // void *
  dstDevice: 88, // CUdeviceptr
  dstArray: 96, // CUarray
  dstPitch: 104, // size_t
  WidthInBytes: 112, // size_t
  Height: 120, // size_t
} as const;

/** The CUDA layout table, by struct name, for tests that compare it with an independent declaration. */
export const CUDA_LAYOUTS = { CUDA_MEMCPY2D } as const;
