/**
 * Phase spans of this thread, for the loader's per-clip cost breakdown (`--profile`): between {@link startSpans}
 * and {@link takeSpans}, each {@link lap} adds the milliseconds since the previous lap (or the start) to a named
 * phase. One `performance.now()` per lap, and nothing at all while no span is open, so the media code marks its
 * phases unconditionally (per clip and per frame, never per FFI call). Spans are per thread: each Worker and the
 * main thread keep their own, and a task runs start to take without awaiting (the Worker exports are
 * synchronous), so spans of two tasks never mix.
 * @module
 */

/** Milliseconds per phase. */
export type PhaseTimes = Record<string, number>;

let open: PhaseTimes | null = null;
let last = 0;

/** Opens this thread's spans (a task starts): later laps count from now. */
export function startSpans(): void {
  open = {};
  last = performance.now();
}

/** Adds the time since the previous lap to `phase` (nothing while no span is open). */
export function lap(phase: string): void {
  if (open === null) return;
  const now = performance.now();
  open[phase] = (open[phase] ?? 0) + (now - last);
  last = now;
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
