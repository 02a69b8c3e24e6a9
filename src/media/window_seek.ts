/**
 * Where a window's packets are in a stream: the keyframe its decode starts at (the last one presented at or
 * before its start, found by seeking and reading what follows the landing point, whatever the container; see
 * {@link seekFor}) and the last packet presented before its end (reading on until {@link REORDER_MARGIN}
 * consecutive packets are presented at or after it). The demuxer (`demux.ts`) cuts windows with these.
 * @module
 */
import { NOPTS, ptsToSeconds } from "./packets.ts";
import { LEADING_LOOKAHEAD, type PacketRun } from "./packet_run.ts";
import type { StreamFacts, StreamReader } from "./stream_reader.ts";
import type { Rational } from "./structs.ts";

/** Consecutive packets presented at or after a window's end after which reading stops (max B-frame reorder). */
export const REORDER_MARGIN = 16;
/** How many times a seek is retried further back when it lands on a keyframe after the window start. */
const MAX_SEEK_RETRIES = 8;

/** Seconds → stream time base units, rounded down. */
export function secondsToTs(sec: number, tb: Rational): bigint {
  return BigInt(Math.floor((sec * tb[1]) / tb[0]));
}

/** Index of the last keyframe in the run presented at or before `s`, or -1. */
export function startKeyframe(run: PacketRun, s: number, tb: Rational): number {
  let k = -1;
  for (let i = 0; i < run.length; i++) {
    if (run.isKey(i) && run.keyframeSeconds(i, tb) <= s) k = i;
  }
  return k;
}

export function firstKeyframe(run: PacketRun): number {
  for (let i = 0; i < run.length; i++) if (run.isKey(i)) return i;
  return -1;
}

/** Decode time of packet `i` in seconds (its pts when it has no dts), NaN when it has neither. */
export function decodeSeconds(run: PacketRun, i: number, tb: Rational): number {
  return run.dts[i] !== NOPTS ? ptsToSeconds(run.dts[i], tb) : run.seconds(i, tb);
}

/** Whether the run can serve a window starting at `s` without a seek. */
export function runCovers(reader: StreamReader, s: number, facts: StreamFacts): boolean {
  const run = reader.run;
  if (run.length === 0) return reader.fromStart && !reader.eof && s <= facts.startSec;
  let last = -Infinity;
  for (let i = Math.max(0, run.length - REORDER_MARGIN); i < run.length; i++) {
    last = Math.max(last, run.seconds(i, facts.tb));
  }
  if (s > last && !reader.eof) return false;
  return startKeyframe(run, s, facts.tb) >= 0 || (reader.fromStart && firstKeyframe(run) >= 0);
}

/**
 * After a seek, reads until it is known whether the run reaches a keyframe presented at or before `s`: true at
 * the first keyframe when it is, false when it is presented after `s`, when a packet decoded after `s` comes
 * first (every keyframe after it is decoded, so presented, after `s` too), or at the end of the file.
 */
function landedBefore(reader: StreamReader, s: number, tb: Rational): boolean {
  const run = reader.run;
  for (let i = 0;; i++) {
    if (i >= run.length && !reader.next()) return false;
    if (run.isKey(i)) {
      while (run.length <= i + LEADING_LOOKAHEAD && reader.next()) { /* what keyframeSeconds looks at */ }
      return !(run.keyframeSeconds(i, tb) > s); // no timestamp: nothing better to try
    }
    if (decodeSeconds(run, i, tb) > s) return false;
  }
}

/**
 * Seeks so that the run holds a keyframe presented at or before `s` (or starts at the stream's start).
 *
 * A seek may land past that keyframe in any container: MPEG-TS seeks by dts and lands on the last packet decoded
 * at or before the target, keyframe or not, so with B-frames (a keyframe decoded before it is presented) or a long
 * GOP the packets after the landing point start mid-GOP; an index can point anywhere a muxer put it. Whatever the
 * container, what is read after the landing point decides ({@link landedBefore}); when it shows the landing was
 * too late, the seek goes back further (1 s, 2 s, 4 s, ... before where it landed), and after
 * {@link MAX_SEEK_RETRIES} tries to the start of the stream, where the first keyframe is always right.
 */
export function seekFor(reader: StreamReader, s: number, facts: StreamFacts): void {
  const { tb } = facts;
  let target = s;
  for (let attempt = 0;; attempt++) {
    if (target <= facts.startSec || attempt >= MAX_SEEK_RETRIES) {
      reader.rewind(secondsToTs(facts.startSec, tb));
    } else reader.seek(secondsToTs(target, tb));
    if (reader.fromStart || landedBefore(reader, s, tb)) return;
    const landed = reader.run.length > 0 ? decodeSeconds(reader.run, 0, tb) : NaN;
    target = (landed < target ? landed : target) - Math.pow(2, attempt);
  }
}

/**
 * Positions the reader so that its run holds the keyframe a window starting at `s` needs (reading on, without a
 * seek, when `maySeek` is false). Returns its index, or -1 when the stream has no keyframe at or before `s` and
 * the run is not at the stream's start.
 */
export function positionFor(reader: StreamReader, s: number, facts: StreamFacts, maySeek = true): number {
  const { tb } = facts;
  if (maySeek && !runCovers(reader, s, facts)) seekFor(reader, s, facts);
  // Read on until the start keyframe is certain: a packet presented after s follows it, and the packets that
  // bound when it is presented (a keyframe without pts: keyframeSeconds) are in.
  for (;;) {
    const run = reader.run;
    const k = startKeyframe(run, s, tb);
    if (k >= 0 && presentedAfter(run, k, s, tb) && run.length > k + LEADING_LOOKAHEAD) return k;
    if (!reader.next()) break;
  }
  const k = startKeyframe(reader.run, s, tb);
  if (k >= 0) return k;
  return reader.fromStart ? firstKeyframe(reader.run) : -1;
}

/** True once the run holds a packet after `k` presented after `s`. */
function presentedAfter(run: PacketRun, k: number, s: number, tb: Rational): boolean {
  for (let i = k + 1; i < run.length; i++) if (run.seconds(i, tb) > s) return true;
  return false;
}

/** Reads until `REORDER_MARGIN` consecutive packets are presented at or after `e`, or EOF. */
export function readThrough(reader: StreamReader, k: number, e: number, tb: Rational): void {
  const run = reader.run;
  let after = 0;
  let i = k;
  for (;;) {
    for (; i < run.length; i++) after = run.seconds(i, tb) >= e ? after + 1 : 0;
    if (after >= REORDER_MARGIN || !reader.next()) return;
  }
}

/** Index one past the last packet (decode order, from `k`) presented before `e`. */
export function windowEnd(run: PacketRun, k: number, e: number, tb: Rational): number {
  let end = k + 1;
  for (let i = k; i < run.length; i++) if (run.seconds(i, tb) < e) end = i + 1;
  return Math.min(end, run.length);
}
