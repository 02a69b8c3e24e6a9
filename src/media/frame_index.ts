/**
 * Frame identity: the index of a frame in its stream's presentation order (`frameIndex`, ffprobe's frame order
 * when every packet gives one frame), so a clip's frames can be mapped back to the source and two decoders'
 * outputs compared frame for frame.
 *
 * A run of packets (a window's, cut by the demuxer) knows the order of its own frames (its packets ranked by pts),
 * not how many of the stream's frames come before them: that is `VideoPackets.firstFrameIndex`, the index of
 * the earliest-presented frame among them, set by the demuxer (`demux.ts`) from {@link PrefixStats}: the packets
 * decoded before the run's first one, counted as they were read from the stream's start or by a scan of the
 * stream's packet timestamps (`keyframe_table.ts`). It is exact when every one of those packets is presented
 * before the run's earliest frame; when one is not (or lacks a pts) the index is unknown, and said to be (null),
 * never guessed. Packets flagged `AV_PKT_FLAG_DISCARD` (an MP4 edit list's leading frames, which the decoder
 * drops) give no frame and are not counted. Pure: no FFmpeg.
 * @module
 */
import { NOPTS, type VideoPackets } from "./packets.ts";

/** `AV_PKT_FLAG_DISCARD`: the decoder decodes the packet but drops its frame. */
export const AV_PKT_FLAG_DISCARD = 4;

/** What is known of a stream's packets decoded before some packet: how many give frames, and when they show. */
export interface PrefixStats {
  /** Packets that give a frame (not `AV_PKT_FLAG_DISCARD`). */
  frames: number;
  /** The latest pts among them (NOPTS when there is none). */
  latestPts: bigint;
  /** Whether one of them has no pts (then nothing is known of where it is presented). */
  untimed: boolean;
}

/** The stats of an empty prefix (a run read from the stream's first packet). */
export function emptyPrefix(): PrefixStats {
  return { frames: 0, latestPts: NOPTS, untimed: false };
}

/** Adds packet `pts`/`flags` (decode order) to `s`. */
export function addToPrefix(s: PrefixStats, pts: bigint, flags: number): void {
  if (flags & AV_PKT_FLAG_DISCARD) return;
  s.frames++;
  if (pts === NOPTS) s.untimed = true;
  else if (s.latestPts === NOPTS || pts > s.latestPts) s.latestPts = pts;
}

/**
 * `firstFrameIndex` of packets `p` after a prefix `s`: the prefix's frame count when each of its frames is
 * presented before every frame of `p`; undefined when that is not known (a prefix frame without pts, or one
 * presented after the earliest of `p`'s, or `p` has no timed frame).
 */
export function firstFrameIndex(s: PrefixStats, p: VideoPackets): number | undefined {
  if (s.untimed) return undefined;
  let earliest: bigint | null = null;
  for (let i = 0; i < p.numPackets; i++) {
    if (p.flags[i] & AV_PKT_FLAG_DISCARD || p.pts[i] === NOPTS) continue;
    if (earliest === null || p.pts[i] < earliest) earliest = p.pts[i];
  }
  if (earliest === null) return undefined;
  return s.latestPts === NOPTS || s.latestPts < earliest ? s.frames : undefined;
}

/**
 * The stream-wide presentation index of the frame each position shows, from the pts of those frames: `p`'s
 * `firstFrameIndex` plus the frame's rank among `p`'s frames. Null when any is unknown: no `firstFrameIndex`,
 * a packet of `p` without pts or two with the same one, or a position's frame whose pts is no packet's.
 */
export function frameIndices(p: VideoPackets, framePts: ArrayLike<bigint>): Int32Array | null {
  const base = p.firstFrameIndex;
  if (base === undefined) return null;
  const sorted: bigint[] = [];
  for (let i = 0; i < p.numPackets; i++) {
    if (p.flags[i] & AV_PKT_FLAG_DISCARD) continue;
    if (p.pts[i] === NOPTS) return null;
    sorted.push(p.pts[i]);
  }
  sorted.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  for (let k = 1; k < sorted.length; k++) if (sorted[k] === sorted[k - 1]) return null;
  const out = new Int32Array(framePts.length);
  for (let k = 0; k < framePts.length; k++) {
    const r = rankOf(sorted, framePts[k]);
    if (r < 0) return null;
    out[k] = base + r;
  }
  return out;
}

/** Index of `x` in ascending `a` (the rank of the frame presented at `x` among `a`'s), or -1. */
export function rankOf(a: ArrayLike<bigint>, x: bigint): number {
  let lo = 0, hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (a[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo < a.length && a[lo] === x ? lo : -1;
}
