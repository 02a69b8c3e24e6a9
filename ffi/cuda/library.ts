/**
 * Finds and opens the CUDA driver library. `SLUICE_LIBCUDA` (a file path) wins; otherwise `libcuda.so.1` is
 * looked for in the standard library directories. Tests point `SLUICE_LIBCUDA` at an ABI-level test double.
 * @module
 */
import { type LoadedLibrary, loadLibrary } from "../find_library.ts";
import { CUDA_SYMBOLS } from "./symbols.ts";

/** The opened driver. */
export type CudaLibrary = LoadedLibrary<typeof CUDA_SYMBOLS>;

/** Opens libcuda. Throws `LibraryNotFoundError` when absent or unloadable. */
export function loadCuda(): CudaLibrary {
  return loadLibrary({
    what: "the CUDA driver library",
    sonames: ["libcuda.so.1", "libcuda.so"],
    fileEnv: "SLUICE_LIBCUDA",
    hint: "No NVIDIA driver installed? Set SLUICE_LIBCUDA to the library's path.",
  }, CUDA_SYMBOLS);
}
