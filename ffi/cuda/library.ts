/**
 * Finds and opens the CUDA driver library. `SLUICE_LIBCUDA` (a file path) wins; otherwise `libcuda.so.1` is
 * looked for in the standard library directories. Tests point `SLUICE_LIBCUDA` at an ABI-level test double.
 * @module
 */
import { LibraryNotFoundError } from "../../src/errors.ts";
import { fileExists, findLibraryFile, openLibrary, standardLibraryDirs } from "../loader.ts";
import { CUDA_SYMBOLS } from "./symbols.ts";

/** The opened driver. */
export interface CudaLibrary {
  symbols: Deno.DynamicLibrary<typeof CUDA_SYMBOLS>["symbols"];
  /** The file that was opened. */
  path: string;
  close(): void;
}

/** Where the driver library is, or a {@link LibraryNotFoundError} naming every path tried. */
export function locateLibrary(envVar: string, sonames: readonly string[], what: string): string {
  const override = Deno.env.get(envVar);
  if (override) {
    if (fileExists(override)) return override;
    throw new LibraryNotFoundError(`${what}: ${envVar}=${override} does not name a file`, [override]);
  }
  const tried: string[] = [];
  const found = findLibraryFile(sonames, standardLibraryDirs(), tried);
  if (found) return found;
  throw new LibraryNotFoundError(
    `${what} (${sonames.join(", ")}) was not found in the standard library directories (no NVIDIA driver ` +
      `installed?); set ${envVar} to its path`,
    tried,
  );
}

/** Opens libcuda. Throws {@link LibraryNotFoundError} when absent or unloadable. */
export function loadCuda(): CudaLibrary {
  const path = locateLibrary("SLUICE_LIBCUDA", ["libcuda.so.1", "libcuda.so"], "the CUDA driver library");
  const lib = openLibrary(path, CUDA_SYMBOLS, "libcuda");
  return { symbols: lib.symbols, path, close: () => lib.close() };
}
