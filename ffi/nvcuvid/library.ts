/**
 * Finds and opens libnvcuvid. `SLUICE_LIBNVCUVID` (a file path) wins; otherwise `libnvcuvid.so.1` in the
 * standard library directories.
 * @module
 */
import { openLibrary } from "../loader.ts";
import { locateLibrary } from "../cuda/library.ts";
import { NVCUVID_SYMBOLS } from "./symbols.ts";

/** The opened decoder library. */
export interface NvcuvidLibrary {
  symbols: Deno.DynamicLibrary<typeof NVCUVID_SYMBOLS>["symbols"];
  path: string;
  close(): void;
}

/** Opens libnvcuvid. Throws `LibraryNotFoundError` when absent or unloadable. */
export function loadNvcuvid(): NvcuvidLibrary {
  const path = locateLibrary(
    "SLUICE_LIBNVCUVID",
    ["libnvcuvid.so.1", "libnvcuvid.so"],
    "NVIDIA's decoder library",
  );
  const lib = openLibrary(path, NVCUVID_SYMBOLS, "libnvcuvid");
  return { symbols: lib.symbols, path, close: () => lib.close() };
}
