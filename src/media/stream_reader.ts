/**
 * Reading one stream of an opened input: {@link StreamReader} reads its packets (through an optional bitstream
 * filter) into a {@link PacketRun}, seeks, rewinds to the stream's start, and finds where the file's data ends;
 * {@link ScreenTime} says until when frames are on screen (the next frame after a window, or the end of the
 * stream). The demuxer (`demux.ts`) decides what to read.
 * @module
 */
import { AVERROR_EAGAIN, AVERROR_EOF } from "../../ffi/ffmpeg/errors.ts";
import { type BsfContext, Packet } from "./av_objects.ts";
import { check, ffmpeg } from "./ffmpeg.ts";
import { ptsToSeconds } from "./packets.ts";
import { PacketRun } from "./packet_run.ts";
import { addToPrefix, emptyPrefix, type PrefixStats } from "./frame_index.ts";
import { type MediaSource, readFrame } from "./source.ts";
import { AVDISCARD_ALL, formatContext, packet, type Rational, stream } from "./structs.ts";

const AVSEEK_FLAG_BACKWARD = 1;
const AVSEEK_FLAG_BYTE = 2;
/** How far before the stream's start time a rewind seeks (dts run ahead of the start time's pts). */
const REWIND_MARGIN_SEC = 10;
/** Packets of every stream {@link StreamReader.dataEnd} reads at most from its seek point. */
const MAX_TAIL_PACKETS = 100_000;
/** `AVDISCARD_DEFAULT`. */
const AVDISCARD_DEFAULT = 0;

/** What every result of one demux shares. */
export interface StreamFacts {
  index: number;
  tb: Rational;
  startSec: number;
  endSec: number | null;
}

/** Reads the packets of one stream (through an optional bitstream filter) into a {@link PacketRun}. */
export class StreamReader implements Disposable {
  readonly run = new PacketRun();
  eof = false;
  /** True when the run starts at the beginning of the stream (fresh open, or a seek to the start). */
  fromStart = true;
  /**
   * The packets before the run's first, as read from a fresh open (nothing skipped: the run's first packet is
   * preceded by exactly these); null once a seek skipped packets unseen.
   */
  prefix: PrefixStats | null = emptyPrefix();
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
    const start = this.run.length;
    while (this.run.length === start && !this.eof) {
      const rc = readFrame(this.#src.fmt, this.#pkt.ptr);
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

  /** Drops packets `[0, k)` of the run, counting them into {@link prefix}. */
  dropBefore(k: number): void {
    const p = this.prefix;
    if (p !== null) {
      for (let i = 0; i < Math.min(k, this.run.length); i++) {
        addToPrefix(p, this.run.pts[i], this.run.flags[i]);
      }
    }
    this.run.dropBefore(k);
  }

  #reset(fromStart: boolean): void {
    this.prefix = null;
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

/**
 * End of the last frame in the run: the latest-presented packet's `pts + duration` (`fallback` seconds when it
 * has no duration). Not the latest `pts + duration` of any packet: a packet's duration is the gap to the next
 * packet in *decode* order where the container stores it so (MP4's sample table, as FFmpeg 8's MOV demuxer reads
 * it): a reordered frame decoded just before a VFR gap (its dts before the gap, its pts after it) gets the gap's
 * length (2.52 s), not its time on screen.
 */
function runEnd(run: PacketRun, tb: Rational, fallback: number): number {
  let last = -1, lastSec = -Infinity;
  for (let i = 0; i < run.length; i++) {
    const t = run.seconds(i, tb);
    if (t > lastSec) [last, lastSec] = [i, t];
  }
  if (last < 0) return -Infinity;
  const d = run.duration[last] > 0n
    ? ptsToSeconds(run.duration[last], tb)
    : Number.isFinite(fallback)
    ? fallback
    : 0;
  return lastSec + d;
}

/**
 * Until when frames are on screen, for the windows cut from one open of a file: the next frame after a window,
 * or the end of the stream (computed once, when the reader first reaches the end of the file).
 */
export class ScreenTime {
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
