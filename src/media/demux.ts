/**
 * `demuxVideo()`: the compressed packets of one video stream, whole or cut to time windows, copied out of FFmpeg
 * into one payload buffer per {@link VideoPackets}.
 *
 * Windows follow the convention of `src/media/packets.ts`: `[start, end)` in absolute seconds (`pts * timeBase`,
 * ffprobe's `pts_time`). The packets of a window start at the last keyframe whose pts is at or before `start`
 * (or the stream's first keyframe when `start` precedes it) and end at the last packet, in decode order, whose
 * pts is before `end`: exactly what a decoder needs to output every frame on screen in the window (the one on
 * screen at `start`, presented at or before it, perhaps in an earlier GOP, then those presented in it),
 * including B-frames presented before `end` but stored after later frames. Reading stops once
 * {@link REORDER_MARGIN} consecutive packets are presented at or after `end` (no reordered frame can follow).
 * `endSec` says until when the packets' last frame is on screen: the next frame's time, or the end of the
 * stream (`ScreenTime.streamEnd`: the last frame's end, or later while the file's other streams go on,
 * never past the header's duration).
 *
 * Several windows are cut from one open of the file: they are visited in start order, packets already read are
 * reused when windows overlap or follow closely, and results come back in the caller's order.
 *
 * A window finds its keyframe the same way in every container: seek, then read what follows the landing point
 * (see `seekFor`); a seek that landed past the keyframe (MPEG-TS seeks by dts) goes further back. A window past
 * the end of the stream fails with "file ends at X s, before the window [s, e)".
 *
 * `avformat_find_stream_info` (decoder init behind FFmpeg's process-wide lock) runs only when the container
 * header lacks the codec or frame size (e.g. MPEG-TS) or has no streams at all (FLV, MPEG-PS);
 * MP4/MOV/MKV/WebM headers have them.
 * @module
 */
import { AVERROR_EAGAIN, AVERROR_EOF } from "../../ffi/ffmpeg/errors.ts";
import { fmtSec, InvalidArgumentError, MediaError, SluiceError } from "../errors.ts";
import { type BsfContext, Packet } from "./av_objects.ts";
import { openBsfForStream } from "./bsf.ts";
import { check, ffmpeg } from "./ffmpeg.ts";
import { NOPTS, ptsToSeconds, VideoPackets, type VideoPacketsInit } from "./packets.ts";
import {
  codecInfoFromPar,
  headerIncomplete,
  readCodecInfo,
  selectVideoStream,
  streamDurationSec,
  streamFrameRate,
  streamRotation,
} from "./probe.ts";
import { type MediaInput, MediaSource } from "./source.ts";
import {
  AV_PKT_FLAG_KEY,
  AVDISCARD_ALL,
  bsfContext,
  formatContext,
  packet,
  type Ptr,
  type Rational,
  stream,
} from "./structs.ts";
import { settle } from "../settle.ts";

/** A time window `[start, end)` in seconds. */
export type TimeWindow = [number, number];

/** Options for {@link demuxVideo}. */
export interface DemuxOptions {
  /** Keep only the packets needed for the frames presented in `[start, end)` seconds. */
  window?: TimeWindow;
  /** Several windows from one open of the file: the result is one `VideoPackets` per window, in this order. */
  windows?: TimeWindow[];
  /** Absolute stream index of the video stream (default: FFmpeg's best video stream). */
  streamIndex?: number;
  /** A bitstream filter applied to every packet, e.g. "h264_mp4toannexb"; extradata comes from its output. */
  bsf?: string;
  /**
   * When to run `avformat_find_stream_info`: "auto" (default) only when the header lacks codec or size;
   * "always" (slower, takes FFmpeg's codec lock; for comparisons); "never".
   */
  streamInfo?: "auto" | "always" | "never";
}

/** Consecutive packets presented at or after a window's end after which reading stops (max B-frame reorder). */
export const REORDER_MARGIN = 16;
/** How many times a seek is retried further back when it lands on a keyframe after the window start. */
const MAX_SEEK_RETRIES = 8;
const AVSEEK_FLAG_BACKWARD = 1;
const AVSEEK_FLAG_BYTE = 2;
/** Packets after a keyframe without pts that bound when it is presented (see `PacketRun.keyframeSeconds`). */
const LEADING_LOOKAHEAD = 4;
/** How far before the stream's start time a rewind seeks (dts run ahead of the start time's pts). */
const REWIND_MARGIN_SEC = 10;
/** Packets of every stream {@link StreamReader.dataEnd} reads at most from its seek point. */
const MAX_TAIL_PACKETS = 100_000;
/** `AVDISCARD_DEFAULT`. */
const AVDISCARD_DEFAULT = 0;

// ------------------------------------------------------------------------------------------ packet run

/** A contiguous run of packets in decode order, copied out of FFmpeg into growable buffers. */
class PacketRun {
  pts = new BigInt64Array(256);
  dts = new BigInt64Array(256);
  duration = new BigInt64Array(256);
  flags = new Uint32Array(256);
  offsets = new Float64Array(256);
  sizes = new Uint32Array(256);
  data = new Uint8Array(1 << 20);
  length = 0;
  bytes = 0;

  clear(): void {
    this.length = 0;
    this.bytes = 0;
  }

  /** Copies the packet's payload and timing out of FFmpeg. */
  push(pkt: Ptr): void {
    const size = packet.size(pkt);
    const src = packet.data(pkt);
    this.#reserve(this.length + 1, this.bytes + Math.max(0, size));
    const i = this.length++;
    this.pts[i] = packet.pts(pkt) ?? NOPTS;
    this.dts[i] = packet.dts(pkt) ?? NOPTS;
    this.duration[i] = packet.duration(pkt);
    this.flags[i] = packet.flags(pkt) >>> 0;
    this.offsets[i] = this.bytes;
    this.sizes[i] = Math.max(0, size);
    if (src !== null && size > 0) {
      Deno.UnsafePointerView.copyInto(src, this.data.subarray(this.bytes, this.bytes + size));
      this.bytes += size;
    }
  }

  /** Presentation time of packet `i` in seconds (dts when pts is missing), NaN when it has neither. */
  seconds(i: number, tb: Rational): number {
    const t = this.pts[i] !== NOPTS ? this.pts[i] : this.dts[i];
    return t === NOPTS ? NaN : ptsToSeconds(t, tb);
  }

  /**
   * When keyframe `i` is presented, for choosing where a window's decode starts. A keyframe without a pts
   * (MPEG-PS) is presented after its dts, and after the leading B-frames that follow it in decode order
   * (open GOP: they need the previous GOP): the latest time among the next {@link LEADING_LOOKAHEAD} packets
   * bounds it from above, so a window is never started at a keyframe whose leading frames it holds.
   */
  keyframeSeconds(i: number, tb: Rational): number {
    if (this.pts[i] !== NOPTS) return ptsToSeconds(this.pts[i], tb);
    let t = this.seconds(i, tb);
    for (let j = i + 1; j < Math.min(this.length, i + 1 + LEADING_LOOKAHEAD); j++) {
      if (this.pts[j] !== NOPTS) t = Math.max(t, ptsToSeconds(this.pts[j], tb));
    }
    return t;
  }

  isKey(i: number): boolean {
    return (this.flags[i] & AV_PKT_FLAG_KEY) !== 0;
  }

  /** Drops packets `[0, k)`, keeping the rest (and their payload) at the front. */
  dropBefore(k: number): void {
    if (k <= 0) return;
    const base = this.offsets[k] ?? this.bytes;
    const n = this.length - k;
    for (const col of [this.pts, this.dts, this.duration]) col.copyWithin(0, k, this.length);
    for (const col of [this.flags, this.sizes]) col.copyWithin(0, k, this.length);
    this.offsets.copyWithin(0, k, this.length);
    for (let i = 0; i < n; i++) this.offsets[i] -= base;
    this.data.copyWithin(0, base, this.bytes);
    this.length = n;
    this.bytes -= base;
  }

  /** Packets `[a, b)` as fresh, exactly sized arrays (one payload copy). */
  slice(a: number, b: number) {
    const base = b > a ? this.offsets[a] : 0;
    const end = b > a ? this.offsets[b - 1] + this.sizes[b - 1] : 0;
    const offsets = new Uint32Array(b - a);
    for (let i = a; i < b; i++) offsets[i - a] = this.offsets[i] - base;
    return {
      pts: this.pts.slice(a, b),
      dts: this.dts.slice(a, b),
      duration: this.duration.slice(a, b),
      flags: this.flags.slice(a, b),
      offsets,
      sizes: this.sizes.slice(a, b),
      data: this.data.slice(base, end),
    };
  }

  #reserve(count: number, bytes: number): void {
    if (count > this.pts.length) {
      const cap = Math.max(count, this.pts.length * 2);
      this.pts = grow(this.pts, new BigInt64Array(cap));
      this.dts = grow(this.dts, new BigInt64Array(cap));
      this.duration = grow(this.duration, new BigInt64Array(cap));
      this.flags = grow(this.flags, new Uint32Array(cap));
      this.offsets = grow(this.offsets, new Float64Array(cap));
      this.sizes = grow(this.sizes, new Uint32Array(cap));
    }
    if (bytes > this.data.length) {
      const next = new Uint8Array(Math.max(bytes, this.data.length * 2));
      next.set(this.data.subarray(0, this.bytes));
      this.data = next;
    }
  }
}

function grow<T extends BigInt64Array | Uint32Array | Float64Array>(old: T, next: T): T {
  (next as { set(a: ArrayLike<unknown>): void }).set(old);
  return next;
}

// ------------------------------------------------------------------------------------------ reader

/** Reads the packets of one stream (through an optional bitstream filter) into a {@link PacketRun}. */
class StreamReader implements Disposable {
  readonly run = new PacketRun();
  eof = false;
  /** True when the run starts at the beginning of the stream (fresh open, or a seek to the start). */
  fromStart = true;
  readonly #src: MediaSource;
  readonly #index: number;
  readonly #tb: Rational;
  readonly #pkt = new Packet();
  readonly #out: Packet | null;
  readonly #bsf: BsfContext | null;

  constructor(src: MediaSource, index: number, tb: Rational, bsf: BsfContext | null) {
    this.#src = src;
    this.#index = index;
    this.#tb = tb;
    this.#bsf = bsf;
    this.#out = bsf ? new Packet() : null;
  }

  /** Reads until at least one more packet is in the run, or EOF. Returns false at EOF. */
  next(): boolean {
    const { avformat } = ffmpeg();
    const start = this.run.length;
    while (this.run.length === start && !this.eof) {
      const rc = avformat.av_read_frame(this.#src.fmt, this.#pkt.ptr);
      if (rc === AVERROR_EOF) {
        this.eof = true;
        this.#drainBsf(true);
        break;
      }
      check(rc, this.#src.label, "av_read_frame");
      if (packet.streamIndex(this.#pkt.ptr) !== this.#index) {
        this.#pkt.unref();
        continue;
      }
      if (this.#bsf === null) {
        this.run.push(this.#pkt.ptr);
        this.#pkt.unref();
        continue;
      }
      check(
        ffmpeg().avcodec.av_bsf_send_packet(this.#bsf.ptr, this.#pkt.ptr),
        this.#src.label,
        "av_bsf_send_packet",
      );
      this.#drainBsf(false);
    }
    return this.run.length > start;
  }

  #drainBsf(flush: boolean): void {
    if (this.#bsf === null || this.#out === null) return;
    const { avcodec } = ffmpeg();
    if (flush) avcodec.av_bsf_send_packet(this.#bsf.ptr, null);
    for (;;) {
      const rc = avcodec.av_bsf_receive_packet(this.#bsf.ptr, this.#out.ptr);
      if (rc === AVERROR_EAGAIN || rc === AVERROR_EOF) return;
      check(rc, this.#src.label, "av_bsf_receive_packet");
      this.run.push(this.#out.ptr);
      this.#out.unref();
    }
  }

  /** Seeks to the keyframe at or before `ts` (stream time base) and empties the run. */
  seek(ts: bigint): void {
    const rc = ffmpeg().avformat.av_seek_frame(this.#src.fmt, this.#index, ts, AVSEEK_FLAG_BACKWARD);
    if (rc < 0) {
      // No index to seek with (e.g. Matroska without cues): read forward from the start instead.
      this.rewind(ts);
      return;
    }
    this.#reset(false);
  }

  /**
   * Goes back to the first packet of the stream. A seek to the stream's start time is not enough where seeks go
   * by dts (MPEG-TS lands on the last packet *decoded* at or before the target, and the first keyframe is decoded
   * before the start time, which is its pts): seek well before it first, then to it (index-based demuxers refuse
   * a time before their first entry), then to byte 0.
   */
  rewind(startTs: bigint): void {
    const { avformat } = ffmpeg();
    const fmt = this.#src.fmt;
    const early = startTs - BigInt(Math.ceil(REWIND_MARGIN_SEC / ptsToSeconds(1, this.#tb)));
    let rc = avformat.av_seek_frame(fmt, this.#index, early, AVSEEK_FLAG_BACKWARD);
    if (rc < 0) rc = avformat.av_seek_frame(fmt, this.#index, startTs, AVSEEK_FLAG_BACKWARD);
    if (rc < 0) rc = avformat.av_seek_frame(fmt, -1, 0n, AVSEEK_FLAG_BYTE);
    check(rc, this.#src.label, "av_seek_frame");
    this.#reset(true);
  }

  /**
   * Where the file's data ends: the latest `pts + duration` among the packets of every stream from a seek to
   * `near` seconds on (the other streams are read for this pass only), or -Infinity when none is read (a
   * truncated file's index points past its bytes). The reader is left at the end of the file (`eof`) with its
   * run as it was: it reads nothing more until the next seek.
   */
  dataEnd(near: number): number {
    const { avformat } = ffmpeg();
    const fmt = this.#src.fmt;
    const n = formatContext.nbStreams(fmt);
    const others = (discard: number) => {
      for (let i = 0; i < n; i++) {
        if (i !== this.#index) stream.setDiscard(formatContext.stream(fmt, i), discard);
      }
    };
    let end = -Infinity;
    others(AVDISCARD_DEFAULT);
    try {
      const ts = BigInt(Math.floor(near * 1e6)); // AV_TIME_BASE units (stream -1)
      if (avformat.av_seek_frame(fmt, -1, ts, AVSEEK_FLAG_BACKWARD) < 0) return end;
      const pkt = this.#pkt.ptr;
      for (let k = 0; k < MAX_TAIL_PACKETS && avformat.av_read_frame(fmt, pkt) >= 0; k++) {
        const t = packet.pts(pkt) ?? packet.dts(pkt);
        if (t !== null) {
          const tb = stream.timeBase(formatContext.stream(fmt, packet.streamIndex(pkt)));
          end = Math.max(end, ptsToSeconds(t + packet.duration(pkt), tb));
        }
        this.#pkt.unref();
      }
    } finally {
      this.#pkt.unref();
      others(AVDISCARD_ALL);
      this.eof = true;
    }
    return end;
  }

  #reset(fromStart: boolean): void {
    if (this.#bsf) ffmpeg().avcodec.av_bsf_flush(this.#bsf.ptr);
    this.run.clear();
    this.eof = false;
    this.fromStart = fromStart;
  }

  [Symbol.dispose](): void {
    this.#pkt[Symbol.dispose]();
    this.#out?.[Symbol.dispose]();
  }
}

// ------------------------------------------------------------------------------------------ windows

/** What every result of one demux shares. */
interface StreamFacts {
  index: number;
  tb: Rational;
  startSec: number;
  endSec: number | null;
}

function validateWindow(w: unknown, label: string, facts: StreamFacts): TimeWindow {
  if (!Array.isArray(w) || w.length !== 2 || !w.every((x) => typeof x === "number" && Number.isFinite(x))) {
    throw new InvalidArgumentError(`${label}: a window must be [startSec, endSec] with finite numbers`);
  }
  const [s, e] = w as TimeWindow;
  if (!(e > s)) {
    throw new InvalidArgumentError(
      `${label}: window [${fmtSec(s)}, ${fmtSec(e)}) s is empty (end must exceed start)`,
    );
  }
  if (facts.endSec !== null && s >= facts.endSec) {
    throw new MediaError(
      label,
      "demux window",
      `file ends at ${fmtSec(facts.endSec)} s (stream ${facts.index}: start ${fmtSec(facts.startSec)} s + ` +
        `duration ${fmtSec(facts.endSec - facts.startSec)} s), before the window [${fmtSec(s)}, ${
          fmtSec(e)
        })`,
    );
  }
  if (e <= facts.startSec) {
    throw new MediaError(
      label,
      "demux window",
      `window [${fmtSec(s)}, ${fmtSec(e)}) s ends before stream ${facts.index} starts (${
        fmtSec(facts.startSec)
      } s)`,
    );
  }
  return [s, e];
}

/** Seconds → stream time base units, rounded down. */
function secondsToTs(sec: number, tb: Rational): bigint {
  return BigInt(Math.floor((sec * tb[1]) / tb[0]));
}

/** Index of the last keyframe in the run presented at or before `s`, or -1. */
function startKeyframe(run: PacketRun, s: number, tb: Rational): number {
  let k = -1;
  for (let i = 0; i < run.length; i++) {
    if (run.isKey(i) && run.keyframeSeconds(i, tb) <= s) k = i;
  }
  return k;
}

function firstKeyframe(run: PacketRun): number {
  for (let i = 0; i < run.length; i++) if (run.isKey(i)) return i;
  return -1;
}

/** Decode time of packet `i` in seconds (its pts when it has no dts), NaN when it has neither. */
function decodeSeconds(run: PacketRun, i: number, tb: Rational): number {
  return run.dts[i] !== NOPTS ? ptsToSeconds(run.dts[i], tb) : run.seconds(i, tb);
}

/** Whether the run can serve a window starting at `s` without a seek. */
function runCovers(reader: StreamReader, s: number, facts: StreamFacts): boolean {
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
function seekFor(reader: StreamReader, s: number, facts: StreamFacts): void {
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
function positionFor(reader: StreamReader, s: number, facts: StreamFacts, maySeek = true): number {
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
function readThrough(reader: StreamReader, k: number, e: number, tb: Rational): void {
  const run = reader.run;
  let after = 0;
  let i = k;
  for (;;) {
    for (; i < run.length; i++) after = run.seconds(i, tb) >= e ? after + 1 : 0;
    if (after >= REORDER_MARGIN || !reader.next()) return;
  }
}

/** End of the last frame in the run: the latest `pts + duration` (`fallback` seconds when no duration). */
function runEnd(run: PacketRun, tb: Rational, fallback: number): number {
  let end = -Infinity;
  for (let i = 0; i < run.length; i++) {
    const d = run.duration[i] > 0n
      ? ptsToSeconds(run.duration[i], tb)
      : Number.isFinite(fallback)
      ? fallback
      : 0;
    end = Math.max(end, run.seconds(i, tb) + d);
  }
  return end;
}

/**
 * Until when frames are on screen, for the windows cut from one open of a file: the next frame after a window,
 * or the end of the stream (computed once, when the reader first reaches the end of the file).
 */
class ScreenTime {
  #end: number | undefined;
  constructor(readonly reader: StreamReader, readonly facts: StreamFacts, readonly frameRate: number) {}

  /**
   * The end of the stream, with the reader at the end of the file: the end of the last frame (`pts + duration`,
   * one frame at the stream's rate without one), or later while the file's other streams go on (an audio track
   * that outlasts the video keeps the last frame on screen, as players show it), never past the duration the
   * header declares. A file whose data stops short of its header (a truncated download) ends with its last frame.
   */
  streamEnd(): number {
    if (this.#end !== undefined) return this.#end;
    const last = runEnd(this.reader.run, this.facts.tb, this.frameRate > 0 ? 1 / this.frameRate : 0);
    const header = this.facts.endSec;
    this.#end = header !== null && header > last
      ? Math.max(last, Math.min(header, this.reader.dataEnd(header)))
      : last;
    return this.#end;
  }

  /**
   * `VideoPacketsInit.endSec` of a window ending at `e` whose packets start at run index `from`: the time of the
   * first frame presented at or after `e` among those read (reading stops only after some, or at the end of the
   * file), else the end of the stream.
   */
  shownUntil(from: number, e: number): number {
    const run = this.reader.run;
    let next = Infinity;
    for (let i = from; i < run.length; i++) {
      const t = run.seconds(i, this.facts.tb);
      if (t >= e && t < next) next = t;
    }
    return Number.isFinite(next) ? next : this.streamEnd();
  }
}

/** Index one past the last packet (decode order, from `k`) presented before `e`. */
function windowEnd(run: PacketRun, k: number, e: number, tb: Rational): number {
  let end = k + 1;
  for (let i = k; i < run.length; i++) if (run.seconds(i, tb) < e) end = i + 1;
  return Math.min(end, run.length);
}

// ------------------------------------------------------------------------------------------ entry points

/** Demuxes synchronously (the work behind {@link demuxVideo}); returns one result per window, or one in all. */
export function demuxVideoSync(src: MediaInput, opts: DemuxOptions = {}): VideoPackets[] {
  const out = demuxEachSync(src, opts);
  for (const r of out) if (r instanceof SluiceError) throw r;
  return out as VideoPackets[];
}

/**
 * Like {@link demuxVideoSync}, but a window that cannot be served (outside the stream, past the end of a
 * truncated file, unreadable packets) gives its error in its place instead of failing the other windows. Errors
 * that concern the whole input (it cannot be opened, has no video stream) are thrown.
 */
export function demuxEachSync(src: MediaInput, opts: DemuxOptions = {}): (VideoPackets | SluiceError)[] {
  if (opts.window !== undefined && opts.windows !== undefined) {
    throw new InvalidArgumentError("demuxVideo: pass either `window` or `windows`, not both");
  }
  const wanted = opts.windows ?? (opts.window ? [opts.window] : null);
  using stream = openStream(src, opts);
  if (wanted === null) {
    const { reader, facts, common } = stream;
    while (reader.next()) { /* whole stream */ }
    if (reader.run.length === 0) {
      throw new MediaError(common.source, "demux", `stream ${facts.index} has no packets`);
    }
    const endSec = new ScreenTime(reader, facts, common.frameRate).streamEnd();
    return [new VideoPackets({ ...common, window: null, endSec, ...reader.run.slice(0, reader.run.length) })];
  }
  const { groups, failures } = cutGroups(stream, wanted, () => false);
  const results: (VideoPackets | SluiceError)[] = failures.map((f) => f!);
  for (const g of groups) results[g.members[0].window] = g.packets;
  return results;
}

/** Windows of one video demuxed together: the packets of their union, and each window's own among them. */
export interface WindowGroup {
  /**
   * The packets from the first member's start keyframe to the end of the last one's, each once; `window` is the
   * members' union `[earliest start, latest end)`.
   */
  packets: VideoPackets;
  /**
   * Each member: its index in the `windows` asked for, and its own packets `[from, to)` within `packets`
   * (exactly those {@link demuxVideo} gives for it alone), in start order.
   */
  members: { window: number; range: [number, number] }[];
}

/** What {@link demuxGroupsSync} returns. */
export interface DemuxedGroups {
  /** The groups, in start order; every window that could be served is in exactly one. */
  groups: WindowGroup[];
  /** Per window (in the order asked for): why it could not be served, or null. */
  failures: (SluiceError | null)[];
}

/**
 * Demuxes `windows` from one open of the file as {@link demuxEachSync} does, but windows whose packets overlap
 * (the same GOP, or one window's packets reaching into the next one's) come back as one group: one run of packets
 * from which one forward decode serves them all. `join(members, next)` may refuse to add window `next` to the
 * group of `members` (window indices); a refused window starts a group of its own.
 */
export function demuxGroupsSync(
  src: MediaInput,
  opts: Omit<DemuxOptions, "window" | "windows"> & {
    windows: TimeWindow[];
    join: (members: readonly number[], next: number) => boolean;
  },
): DemuxedGroups {
  using stream = openStream(src, opts);
  return cutGroups(stream, opts.windows, opts.join);
}

/** What every result of one demux shares: the codec and stream fields of a {@link VideoPacketsInit}. */
type CommonFields = Omit<
  VideoPacketsInit,
  "window" | "pts" | "dts" | "duration" | "flags" | "offsets" | "sizes" | "data"
>;

/** An opened input, its chosen video stream and a reader over it. */
interface OpenStream extends Disposable {
  reader: StreamReader;
  facts: StreamFacts;
  common: CommonFields;
}

function openStream(src: MediaInput, opts: DemuxOptions): OpenStream {
  const source = MediaSource.open(src);
  let bsf: BsfContext | null = null;
  try {
    const label = source.label;
    const fmt = source.fmt;
    const mode = opts.streamInfo ?? "auto";
    // FLV and MPEG-PS have no header: their streams appear only once packets are read.
    if (mode !== "never" && formatContext.nbStreams(fmt) === 0) {
      source.findStreamInfo({ probesize: 1_000_000, maxAnalyzeDurationUs: 1_000_000 });
    }
    const index = selectVideoStream(source, opts.streamIndex, "demux");
    const st = formatContext.stream(fmt, index);
    if (mode === "always" || (mode === "auto" && headerIncomplete(st, false))) {
      source.findStreamInfo({ probesize: 1_000_000, maxAnalyzeDurationUs: 1_000_000 });
    }
    for (let i = 0; i < formatContext.nbStreams(fmt); i++) {
      if (i !== index) stream.setDiscard(formatContext.stream(fmt, i), AVDISCARD_ALL);
    }
    const tb = stream.timeBase(st);
    const startSec = stream.startTime(st) === null ? 0 : ptsToSeconds(stream.startTime(st)!, tb);
    const dur = streamDurationSec(fmt, st);
    const facts: StreamFacts = { index, tb, startSec, endSec: dur === null ? null : startSec + dur };
    bsf = opts.bsf ? openBsfForStream(opts.bsf, st, label) : null;
    const codec = bsf ? codecInfoFromPar(bsfContext.parOut(bsf.ptr)) : readCodecInfo(st);
    const rate = streamFrameRate(st);
    const common: CommonFields = {
      ...codec,
      source: label,
      streamIndex: index,
      timeBase: tb,
      frameRate: rate[0] / rate[1],
      rotation: streamRotation(st),
      startTimeSec: startSec,
    };
    const reader = new StreamReader(source, index, tb, bsf);
    const owned = bsf;
    return {
      reader,
      facts,
      common,
      [Symbol.dispose]() {
        reader[Symbol.dispose]();
        owned?.[Symbol.dispose]();
        source[Symbol.dispose]();
      },
    };
  } catch (e) {
    bsf?.[Symbol.dispose]();
    source[Symbol.dispose]();
    throw e;
  }
}

/** A group being cut: its members and their packets, as indices into the reader's run. */
interface OpenGroup {
  start: number;
  end: number;
  members: { window: number; k: number; end: number }[];
}

/**
 * Cuts `wanted` in start order, reading on from where the reader stands (see the module docs); a window joins the
 * group before it when its start keyframe lies inside that group's packets and `join` allows it.
 */
function cutGroups(
  { reader, facts, common }: OpenStream,
  wanted: TimeWindow[],
  join: (members: readonly number[], next: number) => boolean,
): DemuxedGroups {
  const label = common.source;
  const windows = wanted.map((w) => {
    try {
      return validateWindow(w, label, facts);
    } catch (e) {
      if (e instanceof SluiceError) return e;
      throw e;
    }
  });
  const failures = windows.map((w) => w instanceof SluiceError ? w : null);
  const order = windows.flatMap((w, i) => w instanceof SluiceError ? [] : [i]).sort((a, b) => {
    const [wa, wb] = [windows[a] as TimeWindow, windows[b] as TimeWindow];
    return wa[0] - wb[0] || wa[1] - wb[1];
  });
  const screen = new ScreenTime(reader, facts, common.frameRate);
  const groups: WindowGroup[] = [];
  let open: OpenGroup | null = null;
  const close = () => {
    if (open !== null) groups.push(sliceGroup(screen, open, windows as TimeWindow[], common));
    open = null;
  };
  for (const wi of order) {
    const w = windows[wi] as TimeWindow;
    // A window whose start keyframe is not among the open group's packets cannot share them: cut that group.
    if (open !== null && !(joinable(open, wi, join) && startsInside(reader, open, w[0], facts.tb))) close();
    let k: number, end: number;
    try {
      // Joining: the start keyframe is in the run, read on from it (a seek would lose the group's packets).
      [k, end] = locateWindow(screen, w, common, open === null);
    } catch (e) {
      if (!(e instanceof SluiceError)) throw e;
      failures[wi] = e;
      continue;
    }
    const g: OpenGroup | null = open;
    if (g !== null && k >= g.start && k < g.end && joinable(g, wi, join)) {
      g.members.push({ window: wi, k, end });
      g.end = Math.max(g.end, end);
      continue;
    }
    close();
    // Later windows start no earlier, so they never need packets before k.
    reader.run.dropBefore(k);
    open = { start: 0, end: end - k, members: [{ window: wi, k: 0, end: end - k }] };
  }
  close();
  return { groups, failures };
}

function joinable(g: OpenGroup, next: number, join: (m: readonly number[], n: number) => boolean): boolean {
  return join(g.members.map((m) => m.window), next);
}

/**
 * Whether the start keyframe of a window starting at `s` lies inside the group's packets (before `g.end`):
 * reads on from the group's end until a keyframe tells (presented at or before `s`: the window starts at it or
 * later, outside; after `s`: inside), or a packet decoded after `s` does (no later keyframe can be presented at
 * or before `s`), or the file ends.
 */
function startsInside(reader: StreamReader, g: OpenGroup, s: number, tb: Rational): boolean {
  const run = reader.run;
  for (let i = g.end;; i++) {
    if (i >= run.length && !reader.next()) return true;
    if (run.isKey(i)) {
      while (run.length <= i + LEADING_LOOKAHEAD && reader.next()) { /* what keyframeSeconds looks at */ }
      return run.keyframeSeconds(i, tb) > s;
    }
    if (decodeSeconds(run, i, tb) > s) return true;
  }
}

/** The group's packets, each window's range within them, the union window, and until when its frames show. */
function sliceGroup(
  screen: ScreenTime,
  g: OpenGroup,
  windows: TimeWindow[],
  common: CommonFields,
): WindowGroup {
  const s = Math.min(...g.members.map((m) => windows[m.window][0]));
  const e = Math.max(...g.members.map((m) => windows[m.window][1]));
  // Each group owns its buffers (extradata included): groups travel to Workers one by one, and a
  // transferred buffer is detached for every object that shares it.
  const extradata = common.extradata.slice();
  const packets = new VideoPackets({
    ...common,
    extradata,
    window: [s, e],
    endSec: screen.shownUntil(g.start, e),
    ...screen.reader.run.slice(g.start, g.end),
  });
  return {
    packets,
    members: g.members.map((m) => ({ window: m.window, range: [m.k - g.start, m.end - g.start] })),
  };
}

/**
 * Positions the reader for window `[s, e)` and reads through it: returns its packets `[k, end)` as indices into
 * the reader's run (see the module docs), or throws the window's `MediaError`.
 */
function locateWindow(
  screen: ScreenTime,
  [s, e]: TimeWindow,
  common: CommonFields,
  maySeek: boolean,
): [number, number] {
  const { reader, facts } = screen;
  const { tb, index } = facts;
  const label = common.source;
  const k = positionFor(reader, s, facts, maySeek);
  if (k >= 0) readThrough(reader, k, e, tb);
  if (reader.eof) {
    const end = screen.streamEnd();
    if (!(end > s)) {
      const header = facts.endSec === null
        ? ""
        : ` (the header says it lasts until ${fmtSec(facts.endSec)} s)`;
      throw new MediaError(
        label,
        "demux window",
        reader.run.length === 0
          ? `stream ${index} has no packets${header}`
          : `file ends at ${fmtSec(end)} s, before the window [${fmtSec(s)}, ${fmtSec(e)})${header}`,
      );
    }
  }
  if (k < 0) {
    throw new MediaError(
      label,
      "demux window",
      `no keyframe found at or before ${fmtSec(s)} s in stream ${index}`,
    );
  }
  return [k, windowEnd(reader.run, k, e, tb)];
}

/** Demuxes the whole video stream (or one window of it). */
export function demuxVideo(
  src: MediaInput,
  opts?: DemuxOptions & { windows?: undefined },
): Promise<VideoPackets>;
/** Demuxes several windows from one open of the file; one result per window, in the order given. */
export function demuxVideo(
  src: MediaInput,
  opts: DemuxOptions & { windows: TimeWindow[] },
): Promise<VideoPackets[]>;
/**
 * Demuxes the packets of one video stream. Rejects with `MediaError` (source, operation, FFmpeg's message) for
 * unreadable input or a window outside the stream, and `InvalidArgumentError` for a malformed window. The work
 * is synchronous FFI (meant to run inside a Worker); the Promise is for API symmetry.
 */
export function demuxVideo(src: MediaInput, opts: DemuxOptions = {}): Promise<VideoPackets | VideoPackets[]> {
  return settle(() => {
    const out = demuxVideoSync(src, opts);
    return opts.windows !== undefined ? out : out[0];
  });
}
