/**
 * `SharedMemory`: an anonymous shared-memory file (`memfd_create`) of a fixed size, mapped once into this
 * process (`mmap`, `MAP_SHARED`). Another process maps the same pages by opening `/proc/<pid>/fd/<fd>` while
 * this process lives; nothing is ever created in `/dev/shm` or any other file system, so no file can outlive
 * the processes: the kernel frees the pages when the last descriptor and the last mapping are gone, whichever
 * process dies first and however (`kill -9` included).
 *
 * The descriptor is close-on-exec, so child processes (the backend child, ffprobe) do not inherit it. Deno
 * Workers share this process's address space: {@link SharedMemory.address} lets one build its own view
 * (`Deno.UnsafePointerView.getArrayBuffer`) of the same memory.
 *
 * Closing never leaves the address range unmapped: a Worker may still be inside a synchronous FFI call writing
 * a clip there (terminating a Worker does not interrupt native code), and a stale view may still be read. So
 * `close()` replaces the mapping in place with private anonymous memory (`MAP_FIXED`): the memfd's pages are
 * released, and a late write lands in zero pages this process keeps instead of crashing it. The address range
 * (not memory: untouched anonymous pages cost nothing) stays reserved for the process's life.
 * @module
 */

import {
  libc as openLibc,
  type LIBC_SYMBOLS,
  MAP_ANONYMOUS,
  MAP_FAILED,
  MAP_FIXED,
  MAP_PRIVATE,
  MAP_SHARED,
  MFD_CLOEXEC,
  PROT_READ,
  PROT_WRITE,
} from "../../ffi/libc.ts";
import { cstr, readCString } from "../../ffi/cstring.ts";
import { InvalidArgumentError, ServeError } from "../errors.ts";

/** Size of a memory page; mappings and slot offsets are rounded to it. */
export const PAGE_SIZE = 4096;

/** libc's bindings (see `ffi/libc.ts`); shared memory cannot do without them. */
function libc(): Deno.DynamicLibrary<typeof LIBC_SYMBOLS>["symbols"] {
  const c = openLibc();
  if (c === null) throw new ServeError("shared-memory", "shared memory needs Linux and --allow-ffi (libc)");
  return c;
}

/** A {@link ServeError} ("shared-memory") for a failed libc call, with `errno` and its text. */
function fail(call: string, name: string): ServeError {
  const c = libc();
  const loc = c.__errno_location();
  const errno = loc === null ? 0 : new Deno.UnsafePointerView(loc).getInt32();
  const text = readCString(c.strerror(errno)) ?? "unknown error";
  return new ServeError("shared-memory", `shared memory ${name}: ${call} failed: ${text} (errno ${errno})`);
}

/** Rounds `n` up to a whole number of pages. */
export function pageAlign(n: number): number {
  return Math.ceil(n / PAGE_SIZE) * PAGE_SIZE;
}

/**
 * A view of `length` bytes at `address` of this process: how a Deno Worker reaches a {@link SharedMemory} that
 * another thread mapped (Workers share the address space; pass `shm.address + offset`, a bigint, in a
 * message). The caller keeps the mapping alive while the view is used.
 */
export function viewAt(address: bigint, length: number): Uint8Array<ArrayBuffer> {
  const p = Deno.UnsafePointer.create(address);
  if (p === null || !Number.isSafeInteger(length) || length <= 0) {
    throw new InvalidArgumentError(`shared memory: no view of ${length} bytes at address ${address}`);
  }
  return new Uint8Array(Deno.UnsafePointerView.getArrayBuffer(p, length));
}

/** One memfd and its mapping in this process; see the module docs. Dispose (or `close()`) to unmap. */
export class SharedMemory implements Disposable {
  /** The descriptor in this process (another process opens `/proc/<pid>/fd/<fd>`). */
  readonly fd: number;
  /** Bytes mapped (a whole number of pages). */
  readonly size: number;
  /** Address of the mapping in this process (Workers share it). */
  readonly address: bigint;
  /** The name the kernel shows (`/proc/<pid>/fd` links read `/memfd:<name> (deleted)`). */
  readonly name: string;
  #pointer: Deno.PointerObject | null;
  #bytes: Uint8Array<ArrayBuffer> | null;

  /** Creates and maps `size` bytes (rounded up to pages), zero-filled (pages are only committed when touched). */
  constructor(name: string, size: number) {
    if (!Number.isSafeInteger(size) || size <= 0) {
      throw new InvalidArgumentError(`shared memory: size must be a positive integer, got ${size}`);
    }
    if (Deno.build.os !== "linux") {
      throw new InvalidArgumentError(`shared memory: memfd_create needs Linux, this is ${Deno.build.os}`);
    }
    const c = libc();
    this.name = name;
    this.size = pageAlign(size);
    const fd = c.memfd_create(cstr(name), MFD_CLOEXEC);
    if (fd < 0) throw fail("memfd_create", name);
    if (c.ftruncate(fd, BigInt(this.size)) !== 0) {
      const e = fail("ftruncate", name);
      c.close(fd);
      throw e;
    }
    const p = c.mmap(null, BigInt(this.size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0n);
    if (p === null || Deno.UnsafePointer.value(p) === MAP_FAILED) {
      const e = fail("mmap", name);
      c.close(fd);
      throw e;
    }
    this.fd = fd;
    this.#pointer = p;
    this.address = BigInt(Deno.UnsafePointer.value(p));
    this.#bytes = new Uint8Array(Deno.UnsafePointerView.getArrayBuffer(p, this.size));
  }

  /** The whole mapping. Valid until {@link close}: after it, views read zero pages (never this memory again). */
  get bytes(): Uint8Array<ArrayBuffer> {
    if (this.#bytes === null) throw new InvalidArgumentError(`shared memory ${this.name} is closed`);
    return this.#bytes;
  }

  /** Whether {@link close} ran. */
  get closed(): boolean {
    return this.#pointer === null;
  }

  /**
   * Releases the memfd's pages here and closes the descriptor (the pages live on while another process maps
   * them); the address range becomes private zero pages, never unmapped (see the module docs). Idempotent.
   */
  close(): void {
    if (this.#pointer === null) return;
    const c = libc();
    this.#bytes = null;
    const p = c.mmap(
      this.#pointer,
      BigInt(this.size),
      PROT_READ | PROT_WRITE,
      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
      -1,
      0n,
    );
    if (p === null || Deno.UnsafePointer.value(p) === MAP_FAILED) c.munmap(this.#pointer, BigInt(this.size));
    c.close(this.fd);
    this.#pointer = null;
  }

  /** Same as {@link close}. */
  [Symbol.dispose](): void {
    this.close();
  }
}
