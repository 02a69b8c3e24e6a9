/**
 * Symbol table for the few C library calls sluice makes itself (`libc.so.6`, glibc on Linux). Bindings only:
 * behaviour lives in `src/` (e.g. `src/backend/pipe_size.ts`).
 * @module
 */

/** libc symbols. `fcntl` is variadic in C; it is bound with the one `int` argument the pipe commands take. */
export const LIBC_SYMBOLS = {
  fcntl: { parameters: ["i32", "i32", "i32"], result: "i32" }, // int fcntl(int fd, int cmd, int arg)
} as const satisfies Deno.ForeignLibraryInterface;

/** The C library's soname on Linux. */
export const LIBC_SONAME = "libc.so.6";

/** `fcntl` commands from <fcntl.h> (Linux): set / get the capacity of a pipe, in bytes. */
export const F_SETPIPE_SZ = 1031;
export const F_GETPIPE_SZ = 1032;
