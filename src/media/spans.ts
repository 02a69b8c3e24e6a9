/**
 * Phase spans of this thread, for the loader's per-clip cost breakdown (`--profile`): between {@link startSpans}
 * and {@link takeSpans}, each {@link lap} adds the CPU milliseconds this thread spent since the previous lap (or
 * the start) to a named phase. The clock is the thread's own CPU time (`CLOCK_THREAD_CPUTIME_ID`, one
 * synchronous libc call), so a loaded machine's waits do not count; where libc cannot be called it is
 * `performance.now()` (wall time). Nothing at all happens while no span is open, so the media code marks its
 * phases unconditionally (per clip and per frame, never per FFI call). Spans are per thread: each Worker and the
 * main thread keep their own, and a task runs start to take without awaiting (the Worker exports are
 * synchronous), so spans of two tasks never mix.
 * @module
 */

import { CLOCK_THREAD_CPUTIME_ID, libc } from "../../ffi/libc.ts";

/** Milliseconds per phase. */
export type PhaseTimes = Record<string, number>;

let open: PhaseTimes | null = null;
let last = 0;
const timespec = new BigInt64Array(2);

/** This thread's CPU time in milliseconds (wall time where libc cannot be called). */
export function threadMs(): number {
  const c = libc();
  if (c === null || c.clock_gettime(CLOCK_THREAD_CPUTIME_ID, timespec) !== 0) return performance.now();
  return Number(timespec[0]) * 1e3 + Number(timespec[1]) / 1e6;
}

/** Opens this thread's spans (a task starts): later laps count from now. */
export function startSpans(): void {
  open = {};
  last = threadMs();
}

/** Adds the time since the previous lap to `phase` (nothing while no span is open). */
export function lap(phase: string): void {
  if (open === null) return;
  const now = threadMs();
  open[phase] = (open[phase] ?? 0) + (now - last);
  last = now;
}

/** Whether this thread's spans are open (a profiled task runs). */
export function spansOpen(): boolean {
  return open !== null;
}

/**
 * Adds `times` to the open spans as they are (measured by the caller, e.g. NVDEC's steps), without moving the
 * next lap's start; nothing while no span is open.
 */
export function addToSpans(times: PhaseTimes): void {
  if (open !== null) addPhases(open, times);
}

/** Closes the spans: their times (null when none was open). */
export function takeSpans(): PhaseTimes | null {
  const t = open;
  open = null;
  return t;
}

/** Adds `from`'s times to `to`, each scaled by `scale` (a pass's times shared among its clips). */
export function addPhases(to: PhaseTimes, from: PhaseTimes, scale = 1): void {
  for (const [k, v] of Object.entries(from)) to[k] = (to[k] ?? 0) + v * scale;
}
