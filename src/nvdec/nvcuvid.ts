/**
 * NVDEC's library of the current thread, libnvcuvid, loaded on first use (`SLUICE_LIBNVCUVID` overrides its
 * path); the CUDA driver beside it is `src/cuda/driver.ts`.
 * @module
 */
import { loadNvcuvid, type NvcuvidLibrary } from "../../ffi/nvcuvid/library.ts";

/** NVDEC's symbols. */
export type NvcuvidSymbols = NvcuvidLibrary["symbols"];

let nvcuvidLib: NvcuvidLibrary | undefined;

/** This thread's libnvcuvid, loaded on first use. */
export function nvcuvid(): NvcuvidSymbols {
  nvcuvidLib ??= loadNvcuvid();
  return nvcuvidLib.symbols;
}
