/**
 * Finding and opening native libraries. One mechanism for FFmpeg and for the NVIDIA libraries: an explicit
 * override (directory or file) from the environment, then the standard library directories, then the
 * dynamic loader's own search by soname. Every path tried is kept for the error message.
 * @module
 */
import { LibraryNotFoundError } from "../src/errors.ts";

/** Directories searched, in order, after any override. */
export function standardLibraryDirs(): string[] {
  const triplet = Deno.build.arch === "aarch64" ? "aarch64-linux-gnu" : "x86_64-linux-gnu";
  const fromEnv = (Deno.env.get("LD_LIBRARY_PATH") ?? "").split(":").filter((d) => d !== "");
  return [
    ...fromEnv,
    `/usr/lib/${triplet}`,
    `/lib/${triplet}`,
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/lib",
    "/usr/lib/wsl/lib",
  ];
}

/** True when `path` names an existing regular file (following symlinks). */
export function fileExists(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

/**
 * Opens `path` with `symbols`. A failure becomes a {@link LibraryNotFoundError} that carries the loader's
 * message (e.g. a missing dependency or a missing symbol) instead of a raw FFI error.
 */
export function openLibrary<S extends Deno.ForeignLibraryInterface>(
  path: string,
  symbols: S,
  what: string,
): Deno.DynamicLibrary<S> {
  try {
    return Deno.dlopen(path, symbols);
  } catch (cause) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    throw new LibraryNotFoundError(`${what}: ${path} exists but could not be loaded: ${reason}`, [path], {
      cause,
    });
  }
}

/**
 * Resolves a library file: `override` (a file path) wins; otherwise each soname is looked for in each
 * directory. Returns the first hit, or `undefined`, and appends every candidate to `tried`.
 */
export function findLibraryFile(
  sonames: readonly string[],
  dirs: readonly string[],
  tried: string[],
): string | undefined {
  for (const dir of dirs) {
    for (const soname of sonames) {
      const path = `${dir.replace(/\/+$/, "")}/${soname}`;
      tried.push(path);
      if (fileExists(path)) return path;
    }
  }
  return undefined;
}
