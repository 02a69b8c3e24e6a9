/**
 * Finds and opens NVML. `SLUICE_LIBNVML` (a file path) wins; otherwise `libnvidia-ml.so.1` in the standard
 * library directories, else wherever the dynamic loader finds it. Tests point `SLUICE_LIBNVML` at the driver
 * double, which exports NVML too.
 * @module
 */
import { type LoadedLibrary, loadLibrary } from "../find_library.ts";
import { readCString } from "../cstring.ts";
import { NVML_SYMBOLS } from "./symbols.ts";

/** The opened library. */
export type NvmlLibrary = LoadedLibrary<typeof NVML_SYMBOLS>;

/** Opens NVML. Throws `LibraryNotFoundError` when absent or unloadable. */
export function loadNvml(): NvmlLibrary {
  return loadLibrary({
    what: "NVIDIA's management library (NVML)",
    sonames: ["libnvidia-ml.so.1", "libnvidia-ml.so"],
    fileEnv: "SLUICE_LIBNVML",
    hint: "It comes with the NVIDIA driver (in containers: NVIDIA_DRIVER_CAPABILITIES with utility); " +
      "set SLUICE_LIBNVML to its path.",
  }, NVML_SYMBOLS);
}

/** NVML's own text for `code` (`nvmlErrorString`). */
export function nvmlErrorText(nvml: NvmlLibrary["symbols"], code: number): string {
  return readCString(nvml.nvmlErrorString(code)) ?? `nvmlReturn_t ${code}`;
}
