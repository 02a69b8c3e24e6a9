/**
 * Finds and opens libnvcuvid. `SLUICE_LIBNVCUVID` (a file path) wins; otherwise `libnvcuvid.so.1` in the
 * standard library directories.
 * @module
 */
import { type LoadedLibrary, loadLibrary } from "../find_library.ts";
import { NVCUVID_SYMBOLS } from "./symbols.ts";

/** The opened decoder library. */
export type NvcuvidLibrary = LoadedLibrary<typeof NVCUVID_SYMBOLS>;

/** Opens libnvcuvid. Throws `LibraryNotFoundError` when absent or unloadable. */
export function loadNvcuvid(): NvcuvidLibrary {
  return loadLibrary({
    what: "NVIDIA's decoder library",
    sonames: ["libnvcuvid.so.1", "libnvcuvid.so"],
    fileEnv: "SLUICE_LIBNVCUVID",
    hint: "It comes with the NVIDIA driver; set SLUICE_LIBNVCUVID to its path.",
  }, NVCUVID_SYMBOLS);
}
