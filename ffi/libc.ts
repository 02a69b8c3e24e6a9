/**
 * Symbol table for the few C library calls sluice makes itself (`libc.so.6`, glibc on Linux). Bindings only:
 * behaviour lives in `src/` (e.g. `src/backend/pipe_size.ts`).
 * @module
 */

/** libc symbols. `fcntl` is variadic in C; it is bound with the one `int` argument the pipe commands take. */
export const LIBC_SYMBOLS = {
  fcntl: { parameters: ["i32", "i32", "i32"], result: "i32" }, // int fcntl(int fd, int cmd, int arg)
  mallopt: { parameters: ["i32", "i32"], result: "i32" }, // int mallopt(int param, int value) — glibc <malloc.h>
  memfd_create: { parameters: ["buffer", "u32"], result: "i32" }, // int memfd_create(const char *name, unsigned int flags)
  ftruncate: { parameters: ["i32", "i64"], result: "i32" }, // int ftruncate(int fd, off_t length)
  mmap: {
    parameters: ["pointer", "usize", "i32", "i32", "i32", "i64"], // void *addr, size_t length, int prot, int flags, int fd, off_t offset
    result: "pointer", // void *mmap(...)
  },
  munmap: { parameters: ["pointer", "usize"], result: "i32" }, // int munmap(void *addr, size_t length)
  close: { parameters: ["i32"], result: "i32" }, // int close(int fd)
  __errno_location: { parameters: [], result: "pointer" }, // int *__errno_location(void) — this thread's errno
  strerror: { parameters: ["i32"], result: "pointer" }, // char *strerror(int errnum)
  clock_gettime: { parameters: ["i32", "buffer"], result: "i32" }, // int clock_gettime(clockid_t clk_id, struct timespec *tp)
  statvfs: { parameters: ["buffer", "buffer"], result: "i32" }, // int statvfs(const char *path, struct statvfs *buf)
  // --- page cache control (src/prep/page_cache.ts) ---
  // `open` is variadic in C; it is bound without the `mode` argument, which only O_CREAT reads.
  open: { parameters: ["buffer", "i32"], result: "i32" }, // int open(const char *pathname, int flags)
  posix_fadvise: {
    // int posix_fadvise(int fd, off_t offset, off_t len, int advice) — off_t is 64-bit on LP64 Linux;
    // returns an error number (not -1/errno)
    parameters: ["i32", "i64", "i64", "i32"],
    result: "i32",
  },
} as const satisfies Deno.ForeignLibraryInterface;

/** The C library's soname on Linux. */
export const LIBC_SONAME = "libc.so.6";

let opened: Deno.DynamicLibrary<typeof LIBC_SYMBOLS> | null | undefined;

/**
 * This thread's libc bindings, opened on first use and kept for the thread's life (as the FFmpeg libraries
 * are), or null where sluice does not call libc: not Linux, no FFI permission, or `libc.so.6` not loadable.
 */
export function libc(): Deno.DynamicLibrary<typeof LIBC_SYMBOLS>["symbols"] | null {
  if (opened === undefined) {
    opened = null;
    if (Deno.build.os === "linux" && Deno.permissions.querySync({ name: "ffi" }).state === "granted") {
      try {
        opened = Deno.dlopen(LIBC_SONAME, LIBC_SYMBOLS);
      } catch {
        // not glibc: the callers' best-effort paths do nothing
      }
    }
  }
  return opened?.symbols ?? null;
}

/**
 * `struct statvfs` of glibc on LP64 Linux (x86-64, aarch64): eleven 8-byte fields (`unsigned long`,
 * `fsblkcnt_t`, `fsfilcnt_t`) then `int __f_spare[6]`. Sizes in units of `f_frsize`.
 */
export const STATVFS = {
  $size: 112,
  f_bsize: 0,
  f_frsize: 8,
  f_blocks: 16,
  f_bfree: 24,
  f_bavail: 32,
} as const;

/** `fcntl` commands from <fcntl.h> (Linux): set / get the capacity of a pipe, in bytes. */
export const F_SETPIPE_SZ = 1031;
export const F_GETPIPE_SZ = 1032;

/**
 * `mallopt` parameter from glibc's <malloc.h>: allocations of at least this many bytes get their own `mmap`
 * (returned to the system by `munmap` when freed). Setting it also turns off glibc's dynamic raising of it.
 */
export const M_MMAP_THRESHOLD = -3;

/** `memfd_create` flag from <sys/mman.h>: close the descriptor on `exec` (child processes do not inherit it). */
export const MFD_CLOEXEC = 1;

/** `mmap` protections and flags from <sys/mman.h> (Linux). */
export const PROT_READ = 1;
export const PROT_WRITE = 2;
export const MAP_SHARED = 1;
export const MAP_PRIVATE = 2;
export const MAP_FIXED = 0x10;
export const MAP_ANONYMOUS = 0x20;
/** `mmap`'s failure value, `(void *) -1`. */
export const MAP_FAILED = 0xffff_ffff_ffff_ffffn;
/** `open` flags from <fcntl.h> (Linux): read only, close on exec. */
export const O_RDONLY = 0;
export const O_CLOEXEC = 0o2000000;

/** `clock_gettime` clock from <time.h> (Linux): CPU time consumed by the calling thread. */
export const CLOCK_THREAD_CPUTIME_ID = 3;

/** `posix_fadvise` advice from <fcntl.h> (Linux): drop the file's clean pages from the page cache. */
export const POSIX_FADV_DONTNEED = 4;
