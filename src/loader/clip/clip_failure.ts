/**
 * A clip that could not be loaded, as a value: the loader's fetch, demux and decode steps catch a clip's error
 * and pass a {@link FailedClip} down the pipeline in the clip's place (through a backend child too, as an
 * ordinary item), so one bad clip never takes other clips, or a batch, with it, and every planned clip is
 * accounted for at the end: delivered, or failed with its cause.
 * @module
 */

import { errorText, MediaError, type SluiceError } from "../../errors.ts";
import type { ClipFailure, FailedClip } from "./life.ts";

/** The clip fields a failure record is made from. */
export type FailedClipIdentity = Pick<ClipFailure, "path" | "video" | "epoch" | "position" | "start" | "end">;

/** Whether a pipeline item is a {@link FailedClip}. */
export function isFailedClip(x: unknown): x is FailedClip {
  return x !== null && typeof x === "object" && "failed" in x;
}

/** The failure record of `clip`, which failed in `stage` with `error`. */
export function clipFailure(
  clip: FailedClipIdentity,
  stage: string,
  error: unknown,
  attempt = 0,
): ClipFailure {
  const e = error instanceof Error ? error : new Error(String(error));
  const named = (e as { stage?: unknown }).stage;
  return {
    path: clip.path,
    video: clip.video,
    epoch: clip.epoch,
    position: clip.position,
    start: clip.start,
    end: clip.end,
    stage: typeof named === "string" && named !== "" ? named : stage,
    errorName: e.name,
    error: errorText(e, clip.path),
    attempt,
  };
}

/** One line for a log: stage, file, error and window (the file named once, times to the millisecond). */
export function formatClipFailure(f: ClipFailure): string {
  const what = f.attempt === 0 ? "clip" : `substitute ${f.attempt} for position ${f.position}, clip`;
  return `${f.stage} failed on ${f.path}: ${f.error} (${what} [${f.start.toFixed(3)}, ${f.end.toFixed(3)}))`;
}

/** The error `onClipError: "fail"` stops the epoch with. */
export function clipFailureError(f: ClipFailure): SluiceError {
  return new MediaError(
    f.path,
    `${f.stage} of clip [${f.start.toFixed(3)}, ${f.end.toFixed(3)})`,
    f.error,
  );
}

/** Errors the loader's own steps throw to end an epoch (rethrown as they are, not as the stage's failure). */
const CLIP_ERRORS = new WeakSet<object>();

/** Marks `e` as one of the loader's own epoch-ending errors (rethrown as it is; see {@link isClipError}). */
export function clipError(e: unknown): unknown {
  if (e !== null && typeof e === "object") CLIP_ERRORS.add(e);
  return e;
}

/** Whether `e` was marked by {@link clipError}: the epoch ends with it as it is. */
export function isClipError(e: unknown): boolean {
  return e !== null && typeof e === "object" && CLIP_ERRORS.has(e);
}
