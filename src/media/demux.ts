/**
 * `demuxVideo()`: the compressed packets of one video stream, whole or cut to time windows, copied out of FFmpeg
 * into one payload buffer per {@link VideoPackets}.
 *
 * Windows follow the convention of `src/media/packets.ts`: `[start, end)` in absolute seconds (`pts * timeBase`,
 * ffprobe's `pts_time`). The packets of a window start at the last keyframe whose pts is at or before `start`
 * (or the stream's first keyframe when `start` precedes it) and end at the last packet, in decode order, whose
 * pts is before `end`: exactly what a decoder needs to output every frame presented in the window, including
 * B-frames presented before `end` but stored after later frames. Reading stops once {@link REORDER_MARGIN}
 * consecutive packets are presented at or after `end` (no reordered frame can follow).
 *
 * Several windows are cut from one open of the file: they are visited in start order, packets already read are
 * reused when windows overlap or follow closely, and results come back in the caller's order.
 *
 * `avformat_find_stream_info` (decoder init behind FFmpeg's process-wide lock) runs only when the container
 * header lacks the codec or frame size (e.g. MPEG-TS); MP4/MOV/MKV/WebM headers have them.
 * @module
 */
import { AVERROR_EAGAIN, AVERROR_EOF } from "../../ffi/ffmpeg/errors.ts";
import { InvalidArgumentError, MediaError } from "../errors.ts";
import { type BsfContext, Packet } from "./av_objects.ts";
import { openBsfForStream } from "./bsf.ts";
import { check, ffmpeg } from "./ffmpeg.ts";
import { NOPTS, ptsToSeconds, VideoPackets } from "./packets.ts";
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
  readonly #pkt = new Packet();
  readonly #out: Packet | null;
  readonly #bsf: BsfContext | null;

  constructor(src: MediaSource, index: number, bsf: BsfContext | null) {
    this.#src = src;
    this.#index = index;
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
  seek(ts: bigint, toStart: boolean): void {
    const { avformat, avcodec } = ffmpeg();
    const rc = avformat.av_seek_frame(this.#src.fmt, this.#index, ts, AVSEEK_FLAG_BACKWARD);
    if (rc < 0) {
      // No index to seek with (e.g. Matroska without cues): rewind to byte 0 and read forward instead.
      if (avformat.av_seek_frame(this.#src.fmt, -1, 0n, AVSEEK_FLAG_BYTE) < 0) {
        check(rc, this.#src.label, "av_seek_frame");
      }
      toStart = true;
    }
    if (this.#bsf) avcodec.av_bsf_flush(this.#bsf.ptr);
    this.run.clear();
    this.eof = false;
    this.fromStart = toStart;
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

/** Seconds in a message, to the millisecond (0.4, not 0.40020886589772997). */
function fmtSec(sec: number): string {
  return String(Number(sec.toFixed(3)));
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
      `window [${fmtSec(s)}, ${fmtSec(e)}) s starts at or after the end of stream ${facts.index} ` +
        `(${fmtSec(facts.startSec)} s + duration ${fmtSec(facts.endSec - facts.startSec)} s = ${
          fmtSec(facts.endSec)
        } s)`,
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
    if (run.isKey(i) && run.seconds(i, tb) <= s) k = i;
  }
  return k;
}

function firstKeyframe(run: PacketRun): number {
  for (let i = 0; i < run.length; i++) if (run.isKey(i)) return i;
  return -1;
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

/** Seeks so that the run starts at a keyframe presented at or before `s` (or at the stream's start). */
function seekFor(reader: StreamReader, s: number, facts: StreamFacts): void {
  const { tb } = facts;
  let target = s;
  for (let attempt = 0;; attempt++) {
    const toStart = target <= facts.startSec || attempt >= MAX_SEEK_RETRIES;
    reader.seek(secondsToTs(toStart ? facts.startSec : target, tb), toStart);
    while (firstKeyframe(reader.run) < 0 && reader.next()) { /* find the first keyframe after the seek */ }
    const k = firstKeyframe(reader.run);
    if (k < 0 || reader.fromStart) return;
    const t = reader.run.seconds(k, tb);
    if (!(t > s)) return; // at or before s (or no timestamp: nothing better to try)
    target = Math.min(target, t) - Math.pow(2, attempt); // landed after s: go further back
  }
}

/** Positions the reader so that its run holds the keyframe a window starting at `s` needs. Returns its index. */
function positionFor(reader: StreamReader, s: number, facts: StreamFacts): number {
  const { tb } = facts;
  if (!runCovers(reader, s, facts)) seekFor(reader, s, facts);
  // Read on until the start keyframe is certain: a packet presented after s follows it.
  for (;;) {
    const k = startKeyframe(reader.run, s, tb);
    if (k >= 0 && presentedAfter(reader.run, k, s, tb)) return k;
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

/** Index one past the last packet (decode order, from `k`) presented before `e`. */
function windowEnd(run: PacketRun, k: number, e: number, tb: Rational): number {
  let end = k + 1;
  for (let i = k; i < run.length; i++) if (run.seconds(i, tb) < e) end = i + 1;
  return Math.min(end, run.length);
}

// ------------------------------------------------------------------------------------------ entry points

/** Demuxes synchronously (the work behind {@link demuxVideo}); returns one result per window, or one in all. */
export function demuxVideoSync(src: MediaInput, opts: DemuxOptions = {}): VideoPackets[] {
  if (opts.window !== undefined && opts.windows !== undefined) {
    throw new InvalidArgumentError("demuxVideo: pass either `window` or `windows`, not both");
  }
  using source = MediaSource.open(src);
  const label = source.label;
  const fmt = source.fmt;
  const index = selectVideoStream(source, opts.streamIndex, "demux");
  const st = formatContext.stream(fmt, index);
  const mode = opts.streamInfo ?? "auto";
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

  using bsf = opts.bsf ? openBsfForStream(opts.bsf, st, label) : null;
  const codec = bsf ? codecInfoFromPar(bsfContext.parOut(bsf.ptr)) : readCodecInfo(st);
  const rate = streamFrameRate(st);
  const common = {
    ...codec,
    source: label,
    streamIndex: index,
    timeBase: tb,
    frameRate: rate[0] / rate[1],
    rotation: streamRotation(st),
    startTimeSec: startSec,
  };
  using reader = new StreamReader(source, index, bsf);

  const wanted = opts.windows ?? (opts.window ? [opts.window] : null);
  if (wanted === null) {
    while (reader.next()) { /* whole stream */ }
    if (reader.run.length === 0) throw new MediaError(label, "demux", `stream ${index} has no packets`);
    return [new VideoPackets({ ...common, window: null, ...reader.run.slice(0, reader.run.length) })];
  }
  const windows = wanted.map((w) => validateWindow(w, label, facts));
  const order = windows.map((_, i) => i).sort((a, b) =>
    windows[a][0] - windows[b][0] || windows[a][1] - windows[b][1]
  );
  const results: VideoPackets[] = new Array(windows.length);
  for (const wi of order) {
    const [s, e] = windows[wi];
    const k = positionFor(reader, s, facts);
    if (k < 0) {
      throw new MediaError(
        label,
        "demux window",
        `no keyframe found at or before ${fmtSec(s)} s in stream ${index}`,
      );
    }
    readThrough(reader, k, e, tb);
    const end = windowEnd(reader.run, k, e, tb);
    // Each window owns its buffers (extradata included): windows travel to Workers one by one, and a
    // transferred buffer is detached for every object that shares it.
    const extradata = common.extradata.slice();
    results[wi] = new VideoPackets({ ...common, extradata, window: [s, e], ...reader.run.slice(k, end) });
    reader.run.dropBefore(k); // later windows start no earlier, so they never need packets before k
  }
  return results;
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
  try {
    const out = demuxVideoSync(src, opts);
    return Promise.resolve(opts.windows !== undefined ? out : out[0]);
  } catch (e) {
    return Promise.reject(e);
  }
}
