/**
 * The delivery rule: what a decoded clip must be to go into a batch. The clip pass (`clip_pass.ts`) checks every
 * clip it finishes with {@link checkClip}, whichever decoder made it (the CPU pass and NVDEC's both end there),
 * and a clip that breaks the rule fails with a `ClipIntegrityError` instead of being delivered: it is counted as
 * failed and replaced per `onClipError`, like any failed clip. The rule, on facts the pass has (the clip's own
 * packets, the frames its slots show, its outcome and its audio):
 *
 * - shape: `numFrames` slots, the sampled ones first, then the held, then the padded, each repeat a copy of the
 *   last sampled slot (time and index); finite times.
 * - order: the frames shown are in presentation order (each distinct frame later than the one before; the
 *   native kinds, `"consecutive"` and `"stride"`, never show a frame twice), and grid slot times increase.
 * - window: every frame shown is presented before the window's end, and only the frame on screen at its start
 *   may be presented before its start: the latest of the clip's packets at or before it (checked when every
 *   packet has a time), and not before the decode of the packets up to its own starts (their earliest dts;
 *   where none has one, the stream's start).
 * - frame indices (when known): they agree with the frames' times, the same index exactly where the same frame,
 *   increasing with time, inside the range the clip's packets cover.
 * - audio (when asked): the status is one the loader gives, the samples are finite, and the status is true of
 *   them: `"missing"` and `"error"` are all zeros, `"short"` has zeros at its start or its end.
 *
 * Damaged input (timestamps, pictures) is what breaks it: the selector refuses frames out of order where it can
 * tell (`frame_select.ts`), and this is the net behind every decoder. Pure: no FFmpeg.
 * @module
 */

import { ClipIntegrityError } from "../../errors.ts";
import { AV_PKT_FLAG_DISCARD } from "../../media/frame_index.ts";
import { NOPTS, ptsToSeconds, type VideoPackets } from "../../media/packets.ts";
import { AUDIO_STATUSES } from "../../media/audio.ts";
import type { ClipSpec } from "../clip/clip_spec.ts";
import type { DecodedClip } from "../clip/life.ts";

/** A frame time this close to the window's start is at the start (as `frame_select.ts` counts it). */
const AT_START_SEC = 1e-9;

/** What the decode pass knows of a clip besides the clip itself. */
export interface ClipFacts {
  /** The clip's own packets (cut for its window), with its window. */
  packets: VideoPackets;
  /** The presentation time of the frame each sampled slot shows (its own; grid kinds report slot times). */
  frameTimes: ArrayLike<number>;
}

/**
 * Checks `clip` against the delivery rule (see the module docs).
 * @param spec what the clip was asked to be
 * @param clip the clip, with its outcome (and its audio, when asked)
 * @param facts its packets and the times of the frames its slots show
 * @throws {ClipIntegrityError} naming the part of the rule it breaks
 */
export function checkClip(spec: ClipSpec, clip: DecodedClip, facts: ClipFacts): void {
  const { meta } = clip;
  const window: [number, number] = [meta.start, meta.end];
  const broken = (rule: ClipIntegrityError["rule"], why: string) =>
    new ClipIntegrityError(meta.path, window, rule, why);
  const why = shapeProblem(spec, clip, facts);
  if (why !== null) throw broken("shape", why);
  const order = orderProblem(spec, clip, facts);
  if (order !== null) throw broken("order", order);
  const outside = windowProblem(clip, facts);
  if (outside !== null) throw broken("window", outside);
  const index = indexProblem(clip, facts);
  if (index !== null) throw broken("frameIndex", index);
  const audio = audioProblem(spec, clip);
  if (audio !== null) throw broken("audio", audio);
}

/** Native kinds show each frame once, in its own time; grid kinds report slot times. */
function isNative(spec: ClipSpec): boolean {
  return spec.sampling.kind === "consecutive" || spec.sampling.kind === "stride";
}

function shapeProblem(spec: ClipSpec, clip: DecodedClip, facts: ClipFacts): string | null {
  const m = clip.outcome;
  const n = spec.numFrames;
  if (m === undefined) return "no outcome";
  if (
    m.pts.length !== n || m.frameKind.length !== n || (m.frameIndex !== null && m.frameIndex.length !== n)
  ) {
    return `${n} slots asked, the outcome lists ${m.pts.length} times, ${m.frameKind.length} kinds` +
      (m.frameIndex === null ? "" : `, ${m.frameIndex.length} indices`);
  }
  const sampled = n - m.held - m.padded;
  if (!(m.held >= 0 && m.padded >= 0 && sampled >= 1 && sampled === facts.frameTimes.length)) {
    return `${facts.frameTimes.length} frames shown, but ${m.held} held and ${m.padded} padded of ${n}`;
  }
  for (let k = 0; k < n; k++) {
    const kind = k < sampled ? "sampled" : k < sampled + m.held ? "held" : "padded";
    if (m.frameKind[k] !== kind) return `slot ${k} is "${m.frameKind[k]}", expected "${kind}"`;
    if (!Number.isFinite(m.pts[k])) return `slot ${k} has time ${m.pts[k]}`;
    if (k >= sampled) {
      const last = sampled - 1;
      if (m.pts[k] !== m.pts[last] || (m.frameIndex !== null && m.frameIndex[k] !== m.frameIndex[last])) {
        return `slot ${k} (${kind}) is not a repeat of slot ${last}`;
      }
    }
  }
  const size = n * 3 * spec.width * spec.height;
  if (clip.data.length !== 0 && clip.data.length !== size) {
    return `${clip.data.length} samples, ${size} expected`;
  }
  return null;
}

function orderProblem(spec: ClipSpec, clip: DecodedClip, { frameTimes: t }: ClipFacts): string | null {
  const m = clip.outcome;
  const native = isNative(spec);
  for (let k = 0; k < t.length; k++) {
    if (!Number.isFinite(t[k])) return `slot ${k} shows a frame without a time (${t[k]})`;
    if (native && m.pts[k] !== t[k]) {
      return `slot ${k} reports ${m.pts[k]} s for a frame presented at ${t[k]} s`;
    }
    if (k === 0) continue;
    if (t[k] < t[k - 1] || (native && t[k] === t[k - 1])) {
      return `slot ${k} shows a frame presented at ${t[k]} s after one presented at ${t[k - 1]} s`;
    }
    if (!native && !(m.pts[k] > m.pts[k - 1])) {
      return `slot ${k}'s time ${m.pts[k]} s does not follow slot ${k - 1}'s ${m.pts[k - 1]} s`;
    }
  }
  return null;
}

function windowProblem(clip: DecodedClip, { packets: p, frameTimes: t }: ClipFacts): string | null {
  const { start: s, end: e } = clip.meta;
  for (let k = 0; k < t.length; k++) {
    if (!(t[k] < e)) return `slot ${k} shows a frame presented at ${t[k]} s, at or after the window's end`;
    if (t[k] < s - AT_START_SEC && t[k] !== t[0]) {
      return `slot ${k} shows a frame presented at ${t[k]} s, before the window's start, and not the first`;
    }
  }
  const first = t[0];
  if (!(first < s - AT_START_SEC)) return null;
  // The frame on screen at the start is the latest presented at or before it (timed packets, one frame each).
  let latest = -Infinity, at = -1;
  for (let i = 0; i < p.numPackets; i++) {
    if (p.flags[i] & AV_PKT_FLAG_DISCARD) continue;
    if (p.pts[i] === NOPTS) return null; // a frame's time may then be a guess: nothing to compare with
    const x = ptsToSeconds(p.pts[i], p.timeBase);
    if (x <= s + AT_START_SEC && x >= latest) [latest, at] = [x, i];
  }
  if (first !== latest) {
    return `the first frame is presented at ${first} s, before the window's start, but the frame on screen ` +
      `there is the one presented at ${latest} s`;
  }
  const floor = earliestPresentable(p, at);
  if (first < floor.sec) {
    return `the first frame is presented at ${first} s, before ${floor.what} (${floor.sec} s)`;
  }
  return null;
}

/**
 * The earliest time the frame of packet `at` can be presented: a frame is not presented before it is decoded
 * (pts ≥ dts), nor decoded before the packets ahead of it, so not before the earliest decode time of the
 * packets up to its own (the decode's starting keyframe's, its reorder depth before that keyframe's own time:
 * an open GOP's leading pictures, B-frames and negative times of an edit list come after it). Where no packet
 * up to it has a decode time (Matroska's H.264), no frame is presented before the stream's start (0 when the
 * container does not say). Damaged timestamps are what break it (a frame before a window claimed at -4.8e22 s).
 */
function earliestPresentable(p: VideoPackets, at: number): { sec: number; what: string } {
  let dts = Infinity;
  for (let i = 0; i <= at; i++) {
    if (p.dts[i] !== NOPTS) dts = Math.min(dts, ptsToSeconds(p.dts[i], p.timeBase));
  }
  return dts < Infinity
    ? { sec: dts, what: "the decode of the clip's packets starts" }
    : { sec: p.startTimeSec, what: "the stream starts" };
}

function indexProblem(clip: DecodedClip, { packets: p, frameTimes: t }: ClipFacts): string | null {
  const ix = clip.outcome.frameIndex;
  if (ix === null) return null;
  let frames = 0;
  for (let i = 0; i < p.numPackets; i++) if (!(p.flags[i] & AV_PKT_FLAG_DISCARD)) frames++;
  const lo = p.firstFrameIndex;
  for (let k = 0; k < t.length; k++) {
    if (!Number.isInteger(ix[k]) || ix[k] < 0) return `slot ${k} has frame index ${ix[k]}`;
    if (lo !== undefined && ix[k] >= lo + frames) {
      return `slot ${k} has frame index ${ix[k]}, past the ${frames} frames from ${lo} its packets hold`;
    }
    if (k === 0) continue;
    const same = t[k] === t[k - 1];
    if (same ? ix[k] !== ix[k - 1] : !(ix[k] > ix[k - 1])) {
      return `slots ${k - 1} and ${k} show frames presented at ${t[k - 1]} and ${t[k]} s with frame ` +
        `indices ${ix[k - 1]} and ${ix[k]}`;
    }
  }
  return null;
}

function audioProblem(spec: ClipSpec, clip: DecodedClip): string | null {
  const want = spec.audio;
  if (want === undefined) return null;
  const status = clip.outcome.audio;
  const a = clip.audio, c = want.channels, n = want.samples;
  if (status === undefined || !AUDIO_STATUSES.includes(status)) return `audio status ${status}`;
  if (!(a instanceof Float32Array) || a.length !== c * n || clip.audioChannels !== c) {
    return `${a?.length} audio samples in ${clip.audioChannels} channels, ${c} × ${n} expected`;
  }
  let zeros = 0;
  for (let i = 0; i < a.length; i++) {
    if (!Number.isFinite(a[i])) return `audio sample ${i} is ${a[i]}`;
    if (a[i] === 0) zeros++;
  }
  if (n === 0) return null;
  if ((status === "missing" || status === "error") && zeros !== a.length) {
    return `audio status "${status}" with ${a.length - zeros} samples that are not zero`;
  }
  if (status === "short") {
    const silentAt = (j: number) => Array.from({ length: c }, (_, ch) => a[ch * n + j]).every((v) => v === 0);
    if (!silentAt(0) && !silentAt(n - 1)) return `audio status "short" with sound at both ends`;
  }
  return null;
}
