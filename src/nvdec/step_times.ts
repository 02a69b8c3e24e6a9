/**
 * Where an NVDEC decode's time goes, step by step (the GPU kit's `speed-loader-profile`): while this thread's
 * recording is on ({@link recordNvdecSteps}), each {@link timeStep} adds its wall and thread-CPU milliseconds to
 * its step. Wall against CPU tells a wait that blocks (wall only) from one that spins (both). Off (the default),
 * a step costs one branch.
 * @module
 */
import { addToSpans, type PhaseTimes, spansOpen, threadMs } from "../media/spans.ts";
import { setCudaStepTimer } from "../cuda/cuda_buffer.ts";

/** One step's totals. */
export interface StepTime {
  /** Calls. */
  calls: number;
  /** Wall-clock milliseconds. */
  wallMs: number;
  /** This thread's CPU milliseconds. */
  cpuMs: number;
}

let steps: Record<string, StepTime> | null = null;

/** Starts (true: totals from zero) or stops this thread's recording. */
export function recordNvdecSteps(on: boolean): void {
  steps = on ? {} : null;
}

/** The totals recorded so far on this thread, by step (empty when not recording). */
export function nvdecStepTimes(): Record<string, StepTime> {
  return structuredClone(steps ?? {});
}

/**
 * Runs `fn` (one decode pass of the loader) with this thread's recording on when the loader's profile spans are
 * open (`profile: true`), and adds the steps to them as `nvdec:<step>:wall|cpu|calls` (`clip_profile.ts`).
 */
export function profiledSteps<T>(fn: () => T): T {
  if (!spansOpen() || steps !== null) return fn();
  recordNvdecSteps(true);
  try {
    return fn();
  } finally {
    const times: PhaseTimes = {};
    for (const [k, s] of Object.entries(nvdecStepTimes())) {
      times[`nvdec:${k}:wall`] = s.wallMs;
      times[`nvdec:${k}:cpu`] = s.cpuMs;
      times[`nvdec:${k}:calls`] = s.calls;
    }
    recordNvdecSteps(false);
    addToSpans(times);
  }
}

/** Runs `fn`, adding its time to `step` while recording. Steps nest: an outer one includes its inner ones. */
export function timeStep<T>(step: string, fn: () => T): T {
  if (steps === null) return fn();
  const w0 = performance.now(), c0 = threadMs();
  try {
    return fn();
  } finally {
    const s = steps[step] ??= { calls: 0, wallMs: 0, cpuMs: 0 };
    s.calls++;
    s.wallMs += performance.now() - w0;
    s.cpuMs += threadMs() - c0;
  }
}

// the device copies and frees of src/cuda report to this thread's recording too
setCudaStepTimer(timeStep);
