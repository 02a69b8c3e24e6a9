/**
 * Which decoded frames fill a clip's (or a decode's) output positions: the one rule every decoder follows (the CPU
 * decode pass in `decode_pass.ts`, the NVDEC session in `src/nvdec/session.ts`, both through `position_filler.ts`,
 * and through them the loader's clips).
 *
 * A {@link FrameSelector} is a small state machine fed the presentation time of each decoded frame, in the order
 * the decoder outputs them (presentation order); it answers at once what that frame does: fill positions now, or be
 * held back (at most one frame is held) because a later position may show it. It never needs a frame twice, so a
 * streaming decoder keeps at most two frames alive.
 *
 * A frame is on screen from its presentation time until the next frame's (the last one until `end`, the end of
 * the stream; see {@link PositionPlan.streamEnd}): a variable-frame-rate stream (a screen recording) can show one
 * frame for seconds, and a window inside such a gap still has a frame on screen, presented before it.
 *
 * The sampling kinds (`[s, e)` is the window; without one, the whole stream):
 * - `"consecutive"`: the frames on screen during `[s, e)`, in order: the one on screen at `s` (presented at or
 *   before `s`, possibly long before), then each presented in `(s, e)`; position `k` shows the `k`-th; its time is the
 *   frame's own (so position 0's may precede `s`). Without a window: every frame.
 * - `"stride"`: position `k` shows the `(k·stride)`-th of those frames.
 * - `"rate"` (`frameRate` r): position `k` has time `t_k = s + k/r`; a frame at time `t` belongs to position
 *   `round((t − s)·r)` (halves away from zero, FFmpeg's `fps` filter with `round=near`), and position `k` shows the
 *   latest frame belonging to a position `<= k` (frames are duplicated or dropped; a frame presented before `s` belongs
 *   to a position `<= 0`), or the first frame when none does. Without a window the grid starts at 0 and runs from the
 *   first frame's position to `round(end·r)` exclusive, exactly the frames `ffmpeg -i F -vf fps=r` writes (unless
 *   another stream outlasts the video: `end` is then later than where the fps filter stops).
 * - `"uniform"`: `numFrames` positions spread evenly over the window, `t_k = s + k·(e − s)/numFrames`; position `k` shows
 *   the frame on screen at `t_k` (the latest presented at or before it, which may precede `s`; the first frame when
 *   none does): the same grid with `ceil` in place of `round` (the `fps` filter's `round=up`).
 *
 * Grid positions exist while `t_k < e` and `t_k < end`: output is bounded by the stream, never by the window alone.
 * A window starting at or after `end` shows nothing. Frames presented at or after `e` are never shown. Frames
 * without a time are skipped inside a window (kept by `"consecutive"`/`"stride"` over a whole stream).
 *
 * The rule assumes frames come in presentation order, as a sound decoder gives them. Damaged input (mutated
 * timestamps, a duplicated run of packets, a picture the decoder emits late) can break that; a frame presented
 * at or before one offered earlier is then ignored when no position can show it (it precedes the window's start and
 * a later frame at or before the start came first, so it is not the frame on screen there, or it lies at or
 * after the window's end), and otherwise fails the decode with a `MediaError`: the positions already filled (or the
 * frame held for the window's start) may be wrong, and frames out of order are never returned.
 *
 * Decoders leave out what no position shows: {@link ShownFrames} says which frames those are before decoding, and
 * {@link decodeOrStartOver} is the rule when the stream is not what that assumes. Everything here is pure: no
 * FFmpeg, no pixels.
 * @module
 */
import { MediaError } from "../errors.ts";
import { inWindow, NOPTS, ptsToSeconds, type VideoPackets } from "./packets.ts";
import { rankOf } from "./frame_index.ts";

/**
 * How a clip's frames are chosen from the frames presented in its window; see the module docs for the exact
 * rule of each kind.
 */
export type FrameSampling =
  | { kind: "consecutive" }
  | { kind: "rate"; frameRate: number }
  | { kind: "uniform" }
  | { kind: "stride"; stride: number };

/** What a {@link FrameSelector} decides. */
export interface PositionPlan {
  sampling: FrameSampling;
  /** `[start, end)` seconds, or null for the whole stream. */
  window: readonly [number, number] | null;
  /** Positions wanted at most (Infinity: as many as the stream gives; `"uniform"` needs a finite count). */
  numFrames: number;
  /**
   * Until when the last frame offered stays on screen, seconds: at least `window[1]` when the stream goes on past
   * the window, else the end of the stream (`VideoPackets.endSec`); NaN when unknown.
   */
  streamEnd: number;
  /** Earliest presentation time among the packets (the whole-stream grid of `"uniform"` starts there). */
  streamStart: number;
  /** The packets' source, for messages (default `"frames"`). */
  source?: string;
}

/** What to do with one offered frame: fill positions with the held frame, then with this one, then maybe hold it. */
export interface PositionDecision {
  /** Positions the previously held frame fills now (before this frame's). */
  held: number;
  /** Positions this frame fills now. */
  current: number;
  /** Whether this frame becomes the held frame (replacing the previous one, which is no longer needed). */
  hold: boolean;
}

const SKIP: PositionDecision = Object.freeze({ held: 0, current: 0, hold: false });

/**
 * Rounds to the nearest integer, halves away from zero, like `av_rescale_q_rnd(..., AV_ROUND_NEAR_INF)` does on
 * exact rationals: a value within 1e-9 of a half counts as the half (a 25 fps frame at 0.04·k s lands exactly
 * between two 12.5 fps positions, which floating point would otherwise decide at random).
 */
export function roundNear(x: number): number {
  return x >= 0 ? Math.floor(x + 0.5 + 1e-9) : -Math.floor(-x + 0.5 + 1e-9);
}

/** `ceil`, with values within 1e-9 above an integer counted as that integer (a frame exactly on a position time). */
function ceilTol(x: number): number {
  return Math.ceil(x - 1e-9);
}

/**
 * A frame time within this many seconds of a window's start counts as at the start: frame times are pts × time
 * base in floating point (918000 × 1/90000 s is 10.200000000000001), computed apart from the window's start, and
 * a frame presented exactly at the start must not give its position to the frame before it.
 */
const AT_START_SEC = 1e-9;

/** Number of positions `origin + k/rate` strictly before `limit`. */
function positionsBefore(limit: number, origin: number, rate: number): number {
  return Math.max(0, ceilTol((limit - origin) * rate));
}

/**
 * The streaming frame selector: {@link offer} each decoded frame's time in output order, {@link finish} at the end
 * of the stream. See the module docs for the rule.
 */
export class FrameSelector {
  /** Positions filled so far. */
  filled = 0;
  readonly #plan: PositionPlan;
  readonly #limit: number;
  /** Grid kinds: origin, rate, rounding, first position not to fill; `next` is the next position to fill. */
  readonly #grid: { origin: number; rate: number; up: boolean; end: number } | null;
  #next: number | undefined;
  #held = false;
  /** Native kinds: frames of the window seen so far (for `stride`), and each filled position's frame time. */
  #seen = 0;
  /** Native kinds: the time of the held frame, presented before the window (it is on screen at its start). */
  #before = NaN;
  readonly #stride: number;
  readonly #times: number[] = [];
  /** The latest time offered so far, and the latest at or before the window's start (out-of-order checks). */
  #latest = -Infinity;
  #latestAtStart = -Infinity;

  constructor(plan: PositionPlan) {
    this.#plan = plan;
    this.#limit = plan.numFrames;
    const { sampling: smp, window: w } = plan;
    this.#stride = smp.kind === "stride" ? smp.stride : 1;
    if (smp.kind !== "rate" && smp.kind !== "uniform") {
      this.#grid = null;
      return;
    }
    const end = plan.streamEnd;
    if (smp.kind === "rate") {
      const rate = smp.frameRate;
      if (w) {
        const limit = Number.isNaN(end) ? w[1] : Math.min(w[1], end);
        this.#grid = { origin: w[0], rate, up: false, end: positionsBefore(limit, w[0], rate) };
        this.#next = 0;
      } else {
        // Whole stream: FFmpeg's fps filter, grid from 0, starting at the first frame's position.
        this.#grid = {
          origin: 0,
          rate,
          up: false,
          end: Number.isNaN(end) ? Infinity : roundNear(end * rate),
        };
      }
      return;
    }
    const [s, e] = w ?? [plan.streamStart, end];
    const rate = plan.numFrames / (e - s);
    const limit = Number.isNaN(end) ? e : Math.min(e, end);
    this.#grid = {
      origin: s,
      rate,
      up: true,
      end: Math.min(plan.numFrames, positionsBefore(limit, s, rate)),
    };
    this.#next = 0;
  }

  /**
   * Grid kinds: exactly how many positions the stream can fill (before `numFrames` caps it); native kinds:
   * `frames` (the frames presented in the window, e.g. counted from the packets) thinned by the stride.
   */
  capacity(frames: number): number {
    const g = this.#grid;
    let n = Math.ceil(frames / this.#stride);
    if (g !== null) {
      // Whole-stream rate: the grid starts at the first frame's position (at the earliest packet's, before it).
      const first = this.#next ?? roundNear(this.#plan.streamStart * g.rate);
      n = Number.isFinite(g.end) && Number.isFinite(first) ? g.end - first : frames;
    }
    return Math.max(0, Math.min(this.#limit, n));
  }

  /** True once no later frame can fill a position: decoding may stop. */
  get done(): boolean {
    if (this.filled >= this.#limit) return true;
    const g = this.#grid;
    return g !== null && this.#next !== undefined && this.#next >= g.end;
  }

  /** The time a filled position reports: its grid time, or the time of the frame it shows. */
  time(position: number): number {
    const g = this.#grid;
    if (g === null) return this.#times[position];
    return g.origin + (this.#first + position) / g.rate;
  }

  /** Grid kinds: the grid position of output position 0. */
  #first = 0;

  /**
   * A decoded frame presented at `t` seconds (NaN when it has no time) comes out of the decoder.
   * @throws {MediaError} when it comes out of presentation order where that decides what the positions show (see
   *   the module docs)
   */
  offer(t: number): PositionDecision {
    if (this.done) return SKIP;
    if (!this.#inOrder(t)) return SKIP;
    const g = this.#grid;
    if (g === null) return this.#offerNative(t);
    const w = this.#plan.window;
    if (Number.isNaN(t) || (w !== null && t >= w[1])) return SKIP;
    const x = (t - g.origin) * g.rate;
    const position = g.up ? ceilTol(x) : roundNear(x);
    if (this.#next === undefined) this.#first = this.#next = Math.min(position, g.end);
    const upTo = Math.min(position, g.end, this.#next + this.#limit - this.filled);
    const n = Math.max(0, upTo - this.#next);
    this.#next += n;
    this.filled += n;
    const d = this.#held ? { held: n, current: 0, hold: true } : { held: 0, current: n, hold: true };
    this.#held = true;
    return d;
  }

  /**
   * Whether `t` comes in presentation order (later than every frame offered before); a frame out of order that
   * no slot can show is left out (false), any other one throws. Frames without a time are not ordered.
   */
  #inOrder(t: number): boolean {
    if (Number.isNaN(t)) return true;
    const w = this.#plan.window;
    const atStart = w !== null && t <= w[0] + AT_START_SEC;
    if (t > this.#latest) {
      this.#latest = t;
      if (atStart) this.#latestAtStart = t;
      return true;
    }
    // Too late for the window's start (a later frame at or before it came first), or after its end: not shown.
    if (w !== null && (t >= w[1] || (atStart && t < this.#latestAtStart && t < w[0] - AT_START_SEC))) {
      return false;
    }
    throw new MediaError(
      this.#plan.source ?? "frames",
      "decode",
      `frames came out of presentation order: one presented at ${t} s after one at ${this.#latest} s ` +
        `(damaged timestamps or pictures); the frames it would fill cannot be told right`,
    );
  }

  /**
   * Native kinds: the frames on screen during the window in order: the one on screen at its start (the latest
   * presented at or before it, held back until a frame presented after the start comes), then those presented in
   * it, thinned by the stride.
   */
  #offerNative(t: number): PositionDecision {
    const w = this.#plan.window;
    if (w === null) return { held: 0, current: this.#take(t), hold: false };
    if (Number.isNaN(t)) return SKIP;
    const since = t - w[0];
    if (since < -AT_START_SEC) {
      this.#before = t;
      return { held: 0, current: 0, hold: true };
    }
    const held = since > AT_START_SEC ? this.#takeBefore() : 0;
    this.#before = NaN;
    return { held, current: t < w[1] ? this.#take(t) : 0, hold: false };
  }

  /** Native kinds: the next frame on screen during the window, at `t`: 1 when it fills a position. */
  #take(t: number): number {
    if (this.filled >= this.#limit || this.#seen++ % this.#stride !== 0) return 0;
    this.#times.push(t);
    this.filled++;
    return 1;
  }

  /** Native kinds: the held frame (on screen at the window's start) takes its turn, if there is one. */
  #takeBefore(): number {
    const t = this.#before;
    this.#before = NaN;
    return Number.isNaN(t) ? 0 : this.#take(t);
  }

  /** End of the stream: how many positions the held frame fills (the grid's remaining positions). */
  finish(): number {
    const g = this.#grid;
    if (g === null) {
      // A window before which a frame was presented and in which none is: that frame, while the stream lasts.
      const w = this.#plan.window, end = this.#plan.streamEnd;
      return w !== null && !(w[0] >= end) ? this.#takeBefore() : 0;
    }
    if (!this.#held || this.#next === undefined) return 0;
    const n = Math.max(0, Math.min(g.end, this.#next + this.#limit - this.filled) - this.#next);
    // A whole stream whose end is unknown, with no frame limit: how long its last frame lasts is unknown too, so
    // it fills no more positions (not infinitely many).
    if (!Number.isFinite(n)) return 0;
    this.#next += n;
    this.filled += n;
    return n;
  }
}

/**
 * Whether the positions a clip adds after the selector's last (repeats of its last frame) show a frame still on
 * screen: true when the stream goes on past the window's end (the next frame, or the end of the stream, lies at
 * or after it: the last frame stays on screen until then), so the repeats are *held* frames; false when the
 * stream ends inside the window (or its end is unknown): nothing is on screen there, the repeats are padding.
 */
export function repeatsHeld(plan: PositionPlan): boolean {
  return plan.window !== null && plan.streamEnd >= plan.window[1];
}

/**
 * Which frames fill a position, decided before decoding: a dry run of the {@link FrameSelector} over the presentation
 * times of the frames the packets will give, `times` (ascending, one per frame). Entry `i` is 1 when the frame at
 * `times[i]` fills at least one position, 0 when it is dropped (before the window, between the frames a stride or a
 * resampling keeps, or after the last position). A decoder may leave a dropped frame undecoded as long as it still
 * offers its time to the selector where the frame would have come out (see {@link ShownFrames}): the selector's state
 * then advances exactly as if the frame had been decoded, so every position shows the same frame.
 */
export function framesShown(plan: PositionPlan, times: ArrayLike<number>): Uint8Array {
  const shown = new Uint8Array(times.length);
  const sel = new FrameSelector(plan);
  let held = -1;
  for (let i = 0; i < times.length && !sel.done; i++) {
    const d = sel.offer(times[i]);
    if (d.held > 0) shown[held] = 1;
    if (d.current > 0) shown[i] = 1;
    if (d.hold) held = i;
  }
  if (held >= 0 && sel.finish() > 0) shown[held] = 1;
  return shown;
}

/** The frame-choice options both decoders take (`decodeVideo`, `decodeVideoNvdec`). */
export interface SamplingOptions {
  /** Shorthand for `sampling: { kind: "rate", frameRate }`. */
  frameRate?: number;
  /** Default `"consecutive"` (or `"rate"` with `frameRate`). */
  sampling?: FrameSampling;
  /** At most this many output frames (default: all). `"uniform"` needs it. */
  numFrames?: number;
}

/** Checks {@link SamplingOptions}; `bad` builds the error for a message naming the option. */
export function resolveSampling(
  o: SamplingOptions,
  bad: (what: string) => Error,
): { sampling: FrameSampling; numFrames: number } {
  const rate = (r: number) => {
    if (!(r > 0 && Number.isFinite(r))) throw bad(`frameRate must be a positive number, got ${r}`);
  };
  const positiveInt = (v: number, name: string) => {
    if (!Number.isInteger(v) || v < 1) throw bad(`${name} must be a positive integer, got ${v}`);
  };
  if (o.numFrames !== undefined) positiveInt(o.numFrames, "numFrames");
  if (o.frameRate !== undefined) rate(o.frameRate);
  if (o.frameRate !== undefined && o.sampling !== undefined) {
    throw bad("pass either frameRate or sampling, not both");
  }
  const sampling: FrameSampling = o.sampling ??
    (o.frameRate !== undefined ? { kind: "rate", frameRate: o.frameRate } : { kind: "consecutive" });
  switch (sampling.kind) {
    case "consecutive":
      break;
    case "rate":
      rate(sampling.frameRate);
      break;
    case "stride":
      positiveInt(sampling.stride, "sampling.stride");
      break;
    case "uniform":
      if (o.numFrames === undefined) throw bad(`sampling "uniform" needs numFrames`);
      break;
    default:
      throw bad(`unknown sampling kind "${(sampling as { kind: string }).kind}"`);
  }
  return { sampling, numFrames: o.numFrames ?? Infinity };
}

// ------------------------------------------------------------------------------------------ the packets' view

/** Seconds of a timestamp in `timeBase` units (NOPTS → NaN), as ffprobe computes `pts_time`. */
function seconds(ts: bigint, tb: readonly [number, number]): number {
  return ts === NOPTS ? NaN : ptsToSeconds(ts, tb);
}

/**
 * The frame selector's view of `p`: its window, the earliest pts, and until when its last frame is on screen:
 * `p.endSec` (the demuxer knows what follows the packets), else the latest `pts + duration` (a packet without
 * duration lasts one frame at the stream's rate).
 */
export function positionPlan(
  p: VideoPackets,
  o: { sampling: FrameSampling; numFrames: number },
): PositionPlan {
  let start = Infinity, end = NaN;
  const fallback = p.frameRate > 0 ? 1 / p.frameRate : 0;
  for (let i = 0; i < p.numPackets; i++) {
    const t = seconds(p.pts[i], p.timeBase);
    if (Number.isNaN(t)) continue;
    const d = p.duration[i] > 0n ? seconds(p.duration[i], p.timeBase) : fallback;
    if (t < start) start = t;
    if (!(t + d <= end)) end = t + d;
  }
  return {
    sampling: o.sampling,
    window: p.window,
    numFrames: o.numFrames,
    streamEnd: p.endSec ?? end,
    streamStart: start,
    source: p.source,
  };
}

/**
 * The frames on screen during the window, counted from the packets: those presented in it after its start, plus
 * one when a packet is presented at or before its start; those without a time count too. What the native kinds
 * can fill at most ({@link FrameSelector.capacity}).
 */
export function framesInWindow(p: VideoPackets): number {
  let n = 0, before = 0;
  for (let i = 0; i < p.numPackets; i++) {
    const t = seconds(p.pts[i], p.timeBase);
    if (p.window !== null && t <= p.window[0] + AT_START_SEC) before = 1;
    else if (Number.isNaN(t) || inWindow(p.window, t)) n++;
  }
  return n + before;
}

// ------------------------------------------------------------------------------------------ shown frames

/**
 * Which of the packets' frames fill a position, known before decoding: the packets ranked by pts (one frame each),
 * each selector run dry over their times ({@link framesShown}). A decoder may leave a frame no position shows
 * undecoded (or unconverted) as long as its time still reaches the selector where the frame would have come
 * out; what it then sees must match what this assumes (frames in presentation order, one per packet, each with
 * its packet's pts), else it throws {@link StartOver}.
 */
export class ShownFrames {
  /** Presentation time (seconds) of the frame of each rank. */
  readonly times: Float64Array;
  /** The packet (decode order) of each rank. */
  readonly byRank: Int32Array;
  /** Per rank: 1 when the frame fills a position of some plan. */
  readonly shown: Uint8Array;
  readonly #sortedPts: BigInt64Array;

  private constructor(p: VideoPackets, byRank: Int32Array, plans: readonly PositionPlan[]) {
    this.byRank = byRank;
    this.#sortedPts = BigInt64Array.from(byRank, (i) => p.pts[i]);
    this.times = Float64Array.from(byRank, (i) => ptsToSeconds(p.pts[i], p.timeBase));
    this.shown = new Uint8Array(byRank.length);
    for (const plan of plans) {
      const s = framesShown(plan, this.times);
      for (let k = 0; k < s.length; k++) this.shown[k] |= s[k];
    }
  }

  /**
   * The shown frames of `p` for `plans`; null when the times cannot tell frames apart (a packet without pts, or
   * two with the same): then nothing may be left out.
   */
  static of(p: VideoPackets, plans: readonly PositionPlan[]): ShownFrames | null {
    const n = p.numPackets;
    for (let i = 0; i < n; i++) if (p.pts[i] === NOPTS) return null;
    const byRank = Int32Array.from({ length: n }, (_, i) => i).sort((a, b) =>
      p.pts[a] < p.pts[b] ? -1 : p.pts[a] > p.pts[b] ? 1 : 0
    );
    for (let k = 1; k < n; k++) if (p.pts[byRank[k]] === p.pts[byRank[k - 1]]) return null;
    return new ShownFrames(p, byRank, plans);
  }

  /** How many frames no position shows (a decoder may leave them out). */
  get unshownCount(): number {
    let n = 0;
    for (const s of this.shown) n += 1 - s;
    return n;
  }

  /** The rank of the frame presented at `pts`, or -1 when no packet has it. */
  rank(pts: bigint): number {
    return rankOf(this.#sortedPts, pts);
  }

  /** True when the frame presented at `pts` fills no position (false for a pts no packet has: nothing is known). */
  unshown(pts: bigint): boolean {
    const r = this.rank(pts);
    return r >= 0 && this.shown[r] === 0;
  }
}

/**
 * A decode that left frames out (or unconverted) met what that assumes away (see {@link ShownFrames}): field
 * pictures, two pictures in one packet, a corrupt packet, a frame without its packet's timestamp. It is started
 * over, every frame decoded ({@link decodeOrStartOver}), so the output never depends on the shortcut.
 */
export class StartOver extends Error {
  /** Frames decoded before it was noticed (they count as decoded work). */
  decoded = 0;
}

/**
 * The start-over rule, once for every decoder: `attempt(leaveOut, decodedBefore)` decodes, leaving out what no
 * position shows when `leaveOut`; when that attempt throws {@link StartOver}, decoding starts over with every frame
 * (`leaveOut` false), counting the frames the first attempt decoded.
 */
export function decodeOrStartOver<T>(
  leaveOut: boolean,
  attempt: (leaveOut: boolean, decodedBefore: number) => T,
): T {
  if (!leaveOut) return attempt(false, 0);
  try {
    return attempt(true, 0);
  } catch (e) {
    if (!(e instanceof StartOver)) throw e;
    return attempt(false, e.decoded);
  }
}
