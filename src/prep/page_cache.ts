/**
 * `dropFromPageCache`: evicts files from the kernel's page cache so the next read comes from the disk (a
 * "cold" read), with `posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)` through libc FFI. It needs no root (unlike
 * writing `/proc/sys/vm/drop_caches`) and touches only the files named. Dirty pages cannot be dropped, so each
 * file's data is flushed to the disk first (`fdatasync`).
 * @module
 */

import { libc, O_CLOEXEC, O_RDONLY, POSIX_FADV_DONTNEED } from "../../ffi/libc.ts";
import { cstr } from "../../ffi/cstring.ts";
import { SluiceError } from "../errors.ts";

/**
 * Whether this process can drop files from the page cache.
 * @returns true on Linux with the FFI permission granted
 */
export function canDropPageCache(): boolean {
  return libc() !== null;
}

/**
 * Drops every file of `paths` from the page cache (`posix_fadvise(DONTNEED)`).
 * @param paths the files
 * @throws {SluiceError} naming the file when it cannot be opened or the kernel refuses the advice, and when
 *   {@link canDropPageCache} is false
 */
export function dropFromPageCache(paths: Iterable<string>): void {
  const c = libc();
  if (c === null) {
    throw new SluiceError(
      "drop page cache: needs Linux and --allow-ffi (posix_fadvise through libc); run without --cold otherwise",
    );
  }
  for (const path of paths) {
    flushData(path);
    const fd = c.open(cstr(path), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw new SluiceError(`${path}: drop page cache: open failed`);
    const rc = c.posix_fadvise(fd, 0n, 0n, POSIX_FADV_DONTNEED);
    c.close(fd);
    if (rc !== 0) throw new SluiceError(`${path}: drop page cache: posix_fadvise failed with error ${rc}`);
  }
}

/** Writes the file's dirty pages to the disk, which `POSIX_FADV_DONTNEED` would otherwise leave cached. */
function flushData(path: string): void {
  try {
    using f = Deno.openSync(path, { read: true });
    f.syncDataSync();
  } catch (e) {
    throw new SluiceError(`${path}: drop page cache: ${e instanceof Error ? e.message : e}`, { cause: e });
  }
}
