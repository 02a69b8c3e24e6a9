/**
 * `checkTranscoded`: whether a file is a finished output of a transcode request, judged by probing it (header
 * and every packet header, no decoding): codec, height, frame rate, a keyframe exactly every `gop` frames, no
 * rotation left to apply, and no audio unless asked for. A resumed run skips files that pass and redoes the
 * others; the facts probed are what the prepared manifest records.
 * @module
 */

import { probeSync } from "../media/probe.ts";
import type { TargetCodec } from "./encoder.ts";

/** What a prepared manifest records about an output, from probing it. */
export interface OutputFacts {
  /** FFmpeg's codec name: "h264", "vp9", "av1". */
  codec: string;
  /** Frame size in pixels. */
  width: number;
  /** Frame height in pixels. */
  height: number;
  /** Frames per second. */
  fps: number;
  /** Frames in the file. */
  frames: number;
  /** Seconds. */
  duration: number;
  /** Keyframe presentation times, seconds, ascending. */
  keyframes: number[];
  /** True when the file has an audio stream. */
  audio: boolean;
}

/** The request an output must satisfy. */
export interface OutputRequest {
  codec: TargetCodec;
  height: number;
  fps: number;
  gop: number;
  audio: boolean;
}

/** Probes `path` and compares it with `req`: the facts when it matches, or the first mismatch. */
export function checkTranscoded(
  path: string,
  req: OutputRequest,
): { ok: true; facts: OutputFacts } | { ok: false; reason: string } {
  let info;
  try {
    info = probeSync(path, { keyframes: true });
  } catch (e) {
    return { ok: false, reason: e instanceof Error ? e.message : String(e) };
  }
  const v = info.video;
  if (v === null) return { ok: false, reason: "no video stream" };
  if (v.codec !== req.codec) return { ok: false, reason: `codec is ${v.codec}, not ${req.codec}` };
  if (v.height !== req.height) return { ok: false, reason: `height is ${v.height}, not ${req.height}` };
  if (Math.abs(v.frameRate - req.fps) > 1e-3 * req.fps) {
    return { ok: false, reason: `frame rate is ${v.frameRate}, not ${req.fps}` };
  }
  if (v.rotation !== 0) return { ok: false, reason: `rotation ${v.rotation} is left to apply` };
  // With audio asked for, a source without audio gives an output without: either passes.
  if (!req.audio && info.audio !== null) return { ok: false, reason: "has audio that was not asked for" };
  const duration = v.durationSec ?? info.durationSec;
  if (duration === null || !(duration > 0)) return { ok: false, reason: "unknown duration" };
  const frames = v.numFrames ?? Math.round(duration * req.fps);
  const keyframes = v.keyframeTimes ?? [];
  const at = keyframes.map((t) => Math.round((t - v.startTimeSec) * req.fps));
  for (let f = 0; f < frames; f += req.gop) {
    if (!at.includes(f)) return { ok: false, reason: `no keyframe at frame ${f} (gop ${req.gop})` };
  }
  const stray = at.find((f) => f % req.gop !== 0);
  if (stray !== undefined) return { ok: false, reason: `a keyframe at frame ${stray} breaks gop ${req.gop}` };
  return {
    ok: true,
    facts: {
      codec: v.codec,
      width: v.width,
      height: v.height,
      fps: req.fps,
      frames,
      duration,
      keyframes,
      audio: info.audio !== null,
    },
  };
}
