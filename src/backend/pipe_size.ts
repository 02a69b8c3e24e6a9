/**
 * `growPipe`: enlarges the kernel buffer of a pipe (Linux `F_SETPIPE_SZ`). A pipe holds 64 KiB by default, so a
 * 1 MB frame crosses it in 16 write/read round trips, each a context switch on both sides; with a 1 MiB pipe
 * the backend child writes a big frame in one go while the parent reads (about 2.5× the MB/s for 1 MB items,
 * see bench/backend_transport.ts). Best effort: without FFI permission, on another OS, for a non-pipe, or when
 * the kernel refuses, it changes nothing and returns null.
 * @module
 */

import { F_GETPIPE_SZ, F_SETPIPE_SZ, libc } from "../../ffi/libc.ts";

/** Pipe capacity the backend child asks for on its stdout. */
export const BACKEND_PIPE_BYTES = 1 << 20;

/**
 * Sets the capacity of pipe `fd` to `bytes`, or to the largest power of two below it that the kernel allows
 * (unprivileged processes are capped by /proc/sys/fs/pipe-max-size, 1 MiB by default, which Deno only lets a
 * process with all permissions read); returns the capacity then, or null when nothing changed.
 */
export function growPipe(fd: number, bytes: number): number | null {
  const c = libc();
  if (c === null) return null;
  const now = c.fcntl(fd, F_GETPIPE_SZ, 0);
  if (now < 0) return null; // not a pipe
  for (let want = bytes; want > now; want = Math.floor(want / 2)) {
    const set = c.fcntl(fd, F_SETPIPE_SZ, want);
    if (set >= 0) return set;
  }
  return null;
}
