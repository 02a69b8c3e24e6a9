/**
 * `fixMmapThreshold`: pins glibc's mmap threshold for the whole process (all threads, hence every decode Worker)
 * at 128 KiB, the value glibc starts with, and turns off its dynamic raising.
 *
 * Why: by default glibc raises the threshold each time a block it had mmap'ed is freed (up to 32 MiB), so after
 * the first batch is freed every later batch (2.4 MiB at 8×8×112×112×3), decoded clip and packet buffer comes
 * from the malloc heaps instead. V8 frees those ArrayBuffers only when it collects garbage, tens of MiB at a
 * time, and the freed heap space is fragmented and rarely returned: the loader's RSS crept up epoch after epoch
 * (152 → 215 MiB over 30 epochs of the demo dataset, subprocess backend, with V8 heaps and live FFmpeg objects
 * flat). With the threshold pinned, each big buffer is its own mapping and goes back to the system the moment it
 * is freed, so RSS follows what is alive.
 *
 * Cost: every big allocation is an `mmap` + `munmap` and its pages fault in fresh (no reuse of warm heap
 * memory); measured with bench/loader_vs_ffmpeg.ts it is within run-to-run noise (see docs/loader.md).
 *
 * The caller's own `MALLOC_MMAP_THRESHOLD_` environment variable wins (glibc read it at start-up; nothing is
 * changed then). Best effort: not on Linux/glibc, without FFI permission, or when libc cannot be opened, it
 * does nothing and returns false.
 * @module
 */

import { libc, M_MMAP_THRESHOLD } from "../../ffi/libc.ts";

/** The threshold {@link fixMmapThreshold} sets: glibc's own initial value. */
export const MMAP_THRESHOLD_BYTES = 128 * 1024;

let applied = false;

/** Pins the process's glibc mmap threshold (once per process); see the module docs. True when it is set. */
export function fixMmapThreshold(): boolean {
  if (applied) return true;
  if (envSet("MALLOC_MMAP_THRESHOLD_")) return false;
  const c = libc();
  if (c === null) return false;
  applied = c.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) === 1;
  return applied;
}

function envSet(name: string): boolean {
  try {
    return Deno.env.get(name) !== undefined;
  } catch {
    return false; // no --allow-env: cannot tell; glibc's own setting (if any) stays as it is
  }
}
