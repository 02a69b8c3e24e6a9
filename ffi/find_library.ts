/**
 * Finding and opening native libraries: one locator for FFmpeg, libcuda, libnvcuvid and NVML. An override from
 * the environment (a directory for FFmpeg's set of libraries, a file for the others) replaces the search;
 * otherwise the standard library directories are searched in order, and a single library not found there is
 * asked of the system's dynamic loader by its soname (its cache, `ldconfig`: where container runtimes register
 * the driver's libraries, e.g. under `/usr/local/nvidia/lib64`). Every path tried goes into the
 * {@link LibraryNotFoundError}.
 * @module
 */
import { LibraryNotFoundError } from "../src/errors.ts";

/** Directories searched, in order, when no override is set. */
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
function fileExists(path: string): boolean {
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

/** What {@link locateLibraries} looks for. */
export interface LibrarySearch<K extends string> {
  /** What is looked for, for the error ("FFmpeg libraries (...)"). */
  what: string;
  /** An environment variable naming the only directory to search, when set. */
  dirEnv?: string;
  /**
   * Acceptable sets, preferred first: each maps a library to its file names (sonames, preferred first). The
   * first set whose libraries are all found in one directory wins.
   */
  sets: readonly Record<K, readonly string[]>[];
  /** The last line of the error: how to install the libraries or point the override at them. */
  hint: string;
  /** Directories searched when no override is set (default: {@link standardLibraryDirs}). */
  dirs?: readonly string[];
}

/**
 * Finds a set of libraries that sit together in one directory: for each set in order, each directory in
 * order. Returns the path of each library, or throws a {@link LibraryNotFoundError} naming where it looked and
 * every path it tried.
 */
export function locateLibraries<K extends string>(search: LibrarySearch<K>): Record<K, string> {
  const override = search.dirEnv === undefined ? undefined : Deno.env.get(search.dirEnv);
  const dirs = override ? [override] : search.dirs ?? standardLibraryDirs();
  const tried: string[] = [];
  for (const set of search.sets) {
    for (const dir of dirs) {
      const found = {} as Record<K, string>;
      let all = true;
      for (const key of Object.keys(set) as K[]) {
        const path = findIn(dir, set[key], tried);
        if (path === undefined) all = false;
        else found[key] = path;
      }
      if (all) return found;
    }
  }
  const where = override ? `${search.dirEnv}=${override}` : "the standard library directories";
  throw new LibraryNotFoundError(
    `${search.what}: not found in ${where}.\nTried:\n  ${tried.join("\n  ")}\n${search.hint}`,
    tried,
  );
}

/** The first of `sonames` that exists in `dir`; every candidate is appended to `tried`. */
function findIn(dir: string, sonames: readonly string[], tried: string[]): string | undefined {
  for (const soname of sonames) {
    const path = `${dir.replace(/\/+$/, "")}/${soname}`;
    tried.push(path);
    if (fileExists(path)) return path;
  }
  return undefined;
}

/** One library to find and open on its own (libcuda, libnvcuvid). */
export interface SingleLibrary {
  /** What it is, for errors ("the CUDA driver library"). */
  what: string;
  /** Its file names, preferred first. */
  sonames: readonly string[];
  /** An environment variable naming the library's file, which replaces the search when set. */
  fileEnv: string;
  /** How to get it, for the error. */
  hint: string;
  /** Directories searched before the dynamic loader is asked (default: {@link standardLibraryDirs}). */
  dirs?: readonly string[];
}

/** An opened library: its symbols, the file it came from, and `close()`. */
export interface LoadedLibrary<S extends Deno.ForeignLibraryInterface> {
  symbols: Deno.DynamicLibrary<S>["symbols"];
  /** The file that was opened. */
  path: string;
  close(): void;
}

/**
 * Finds `lib` (its file override, else the directories, else the dynamic loader by soname) and opens it with
 * `symbols`; see {@link openLibrary}.
 */
export function loadLibrary<S extends Deno.ForeignLibraryInterface>(
  lib: SingleLibrary,
  symbols: S,
): LoadedLibrary<S> {
  const override = Deno.env.get(lib.fileEnv);
  if (override && !fileExists(override)) {
    throw new LibraryNotFoundError(`${lib.what}: ${lib.fileEnv}=${override} does not name a file`, [
      override,
    ]);
  }
  const what = `${lib.what} (${lib.sonames.join(", ")})`;
  let path = override;
  if (!path) {
    try {
      path = locateLibraries({ what, sets: [{ lib: lib.sonames }], hint: lib.hint, dirs: lib.dirs }).lib;
    } catch (e) {
      if (!(e instanceof LibraryNotFoundError)) throw e;
      const found = openBySoname(lib, symbols);
      if (found) return found;
      const tried = lib.sonames.map((s) => `dlopen("${s}")`);
      throw new LibraryNotFoundError(
        e.message.replace(/\n(?=[^\n]*$)/, `\n  ${tried.join("\n  ")} (the dynamic loader's search)\n`),
        [...e.tried, ...tried],
      );
    }
  }
  const opened = openLibrary(path, symbols, lib.what);
  return { symbols: opened.symbols, path, close: () => opened.close() };
}

/**
 * Asks the dynamic loader for each soname in turn (`dlopen` without a slash: `LD_LIBRARY_PATH`, its cache, its
 * default directories). Undefined when it knows none of them; a library it finds that cannot be opened with
 * `symbols` (a missing symbol) is a {@link LibraryNotFoundError}.
 */
function openBySoname<S extends Deno.ForeignLibraryInterface>(
  lib: SingleLibrary,
  symbols: S,
): LoadedLibrary<S> | undefined {
  for (const soname of lib.sonames) {
    let opened: Deno.DynamicLibrary<S>;
    try {
      opened = Deno.dlopen(soname, symbols);
    } catch (cause) {
      const reason = cause instanceof Error ? cause.message : String(cause);
      if (/cannot open shared object file|No such file/.test(reason)) continue;
      throw new LibraryNotFoundError(`${lib.what}: ${soname} was found but could not be loaded: ${reason}`, [
        soname,
      ], { cause });
    }
    return { symbols: opened.symbols, path: soname, close: () => opened.close() };
  }
  return undefined;
}
