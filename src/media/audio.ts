/**
 * A clip's audio: the samples of a video's audio track that cover a time window, decoded from the same open of
 * the file as the window's video packets, resampled, converted to `float32` and mixed to the channels asked for
 * by libswresample (its default filter and mixing matrix, as `ffmpeg -ar R -ac C` and PyAV's `AudioResampler`).
 * Where no seek reaches the track's packets before the window (near a Matroska file's start), a new open of the
 * file is read from its first packet.
 *
 * The rule (see docs/clips.md): at `sampleRate` R, sample `k` of the resampled track is at `k / R` seconds on the
 * stream's timeline (`pts_time`); the window `[s, e)` holds samples `round(s·R)` … `round(s·R) + round((e−s)·R)`
 * (exclusive), so every window of the same length holds the same number of samples. Samples follow each other
 * as the decoder gives them from the first frame that reaches the window (a gap in the track's timestamps is
 * not filled, as FFmpeg's resampler without `async`). The resampler is started on the grid its output keeps
 * with the track's start (an input sample whose time is a multiple of `1 / gcd(r, R)` s), {@link MARGIN_SEC}
 * before the window, after {@link PREROLL_SEC} of decoding: the window's samples are those a decode of the
 * whole track gives.
 *
 * What the window could not be given is zeros, and {@link ClipAudio.status} says why: `"missing"` (the video
 * has no audio track), `"short"` (the track starts after the window's start or ends before its end), `"error"`
 * (the track cannot be decoded here, or a packet in reach of the window is corrupt: the whole window is zeros;
 * the clip's video is not affected).
 * @module
 */
import { cstr } from "../../ffi/cstring.ts";
import { AVERROR_EAGAIN, AVERROR_EOF } from "../../ffi/ffmpeg/errors.ts";
import { MediaError } from "../errors.ts";
import { CodecContext, Frame, Packet, ResampleContext } from "./av_objects.ts";
import { check, errorText, ffmpeg } from "./ffmpeg.ts";
import { ptsToSeconds } from "./packets.ts";
import { type MediaSource, readFrame } from "./source.ts";
import { ChannelLayout } from "./channel_layout.ts";
import { type AudioSpec, type ClipAudio, silentAudio, windowSamples } from "./audio_window.ts";

export {
  AUDIO_STATUSES,
  audioSampleRange,
  type AudioSpec,
  type AudioStatus,
  checkAudioSpec,
  type ClipAudio,
  silentAudio,
  windowSamples,
} from "./audio_window.ts";

import {
  AVDISCARD_ALL,
  codecContext,
  codecpar,
  formatContext,
  frame,
  packet,
  type Ptr,
  type Rational,
  stream,
} from "./structs.ts";

/** Seconds decoded before the resampler starts (decoders with overlap or a bit reservoir need earlier packets). */
export const PREROLL_SEC = 0.25;
/** Seconds the resampler runs before the window (its filter's history: well over its ~1 ms half-length). */
export const MARGIN_SEC = 0.05;
/** Packets later than this after the window's end are not read (a track that never reaches it: bounded work). */
const READ_LIMIT_SEC = 2;
const AVMEDIA_TYPE_AUDIO = 1;
const AV_SAMPLE_FMT_FLTP = 8;
const AVDISCARD_DEFAULT = 0;
const INT64_MIN = -(2n ** 63n);
/** Where {@link AudioTrack} seeks from, in the order it tries them (see its `#land`). */
type Landing = "own" | "video" | "start";
const LANDINGS: readonly Landing[] = ["own", "video", "start"];
/** Option names read from the decoder each frame (encoded once). */
const OPT_AR = cstr("ar");
/** Most input channels accepted (FFmpeg's own decoders give at most 64). */
const MAX_IN_CHANNELS = 64;

function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}

/**
 * The audio of each window (null entries are skipped: null results) from `source`, whose chosen video stream is
 * `videoIndex`: a seek and a new decoder per window. The demuxer's discard flags are left as the video
 * demux wants them (every stream but `videoIndex` discarded); the read position is not (seek before reading
 * video again).
 */
export function clipAudioWindows(
  source: MediaSource,
  videoIndex: number,
  windows: readonly ([number, number] | null)[],
  spec: AudioSpec,
): (ClipAudio | null)[] {
  const fmt = source.fmt;
  const index = ffmpeg().avformat.av_find_best_stream(fmt, AVMEDIA_TYPE_AUDIO, -1, videoIndex, null, 0);
  if (index < 0) {
    return windows.map((w) => w && silentAudio(spec, w[0], w[1], "missing", "the video has no audio track"));
  }
  let track: AudioTrack;
  try {
    track = new AudioTrack(source, index, videoIndex);
  } catch (e) {
    if (!(e instanceof MediaError)) throw e;
    return windows.map((w) => w && silentAudio(spec, w[0], w[1], "error", e.reason));
  }
  const n = formatContext.nbStreams(fmt);
  const discard = (i: number, d: number) => stream.setDiscard(formatContext.stream(fmt, i), d);
  try {
    for (let i = 0; i < n; i++) discard(i, i === index ? AVDISCARD_DEFAULT : AVDISCARD_ALL);
    return windows.map((w) => w && track.window(w, spec));
  } finally {
    track[Symbol.dispose]();
    for (let i = 0; i < n; i++) discard(i, i === videoIndex ? AVDISCARD_DEFAULT : AVDISCARD_ALL);
  }
}

/** Seeks `fmt` by stream `index` to its last index point at or before `sec` (else to 0); false when neither. */
function seekBefore(fmt: Ptr, index: number, sec: number): boolean {
  const { avformat } = ffmpeg();
  const tb = stream.timeBase(formatContext.stream(fmt, index));
  const ts = BigInt(Math.floor(sec * tb[1] / tb[0]));
  const seek = (to: bigint) => avformat.avformat_seek_file(fmt, index, INT64_MIN, to, to, 0) >= 0;
  return seek(ts) || seek(0n); // a time before the first index entry: the start
}

/** A new open of `src` with every stream but `index` discarded; null when it cannot be opened. */
function reopenTrack(src: MediaSource, index: number): MediaSource | null {
  let fresh: MediaSource;
  try {
    fresh = src.reopen();
  } catch (e) {
    if (e instanceof MediaError) return null;
    throw e;
  }
  const fmt = fresh.fmt, n = formatContext.nbStreams(fmt);
  for (let i = 0; i < n; i++) {
    stream.setDiscard(formatContext.stream(fmt, i), i === index ? AVDISCARD_DEFAULT : AVDISCARD_ALL);
  }
  return fresh;
}

/** The input side of a resampler: what the decoder's frames hold. */
interface InputFormat {
  rate: number;
  format: number;
  channels: number;
  layout: ChannelLayout;
}

/** One audio stream's decoder, packet and frame; {@link window} decodes a window's samples. */
class AudioTrack implements Disposable {
  readonly #src: MediaSource;
  /** A new open of `#src` that the current window is read from (see {@link #land}), or null: `#src` is. */
  #fresh: MediaSource | null = null;
  readonly #index: number;
  readonly #tb: Rational;
  /**
   * The track's start (seconds; -Infinity while unknown): a landing there is not late. From the stream's header,
   * else the first packet of a fresh open, once one was read.
   */
  #start: number;
  /** The video stream, whose index a landing falls back to (see {@link #land}). */
  readonly #video: number;
  readonly #codec: Ptr;
  readonly #par: Ptr;
  #ctx: CodecContext;
  /** Whether `#ctx` decoded a window (the next window gets a new one). */
  #used = false;
  readonly #pkt = new Packet();
  readonly #frame = new Frame();
  #swr: { key: string; ctx: ResampleContext } | null = null;

  constructor(src: MediaSource, index: number, videoIndex: number) {
    this.#src = src;
    this.#index = index;
    this.#video = videoIndex;
    const st = formatContext.stream(src.fmt, index);
    this.#tb = stream.timeBase(st);
    const start = stream.startTime(st);
    this.#start = start === null ? -Infinity : ptsToSeconds(start, this.#tb);
    this.#par = stream.codecpar(st);
    const codec = ffmpeg().avcodec.avcodec_find_decoder(codecpar.codecId(this.#par));
    if (codec === null) {
      this.#release();
      throw new MediaError(src.label, "audio decoder", `no decoder for audio stream ${index} in this FFmpeg`);
    }
    this.#codec = codec;
    try {
      this.#ctx = this.#open();
    } catch (e) {
      this.#release();
      throw e;
    }
  }

  /** A decoder of the track, opened. */
  #open(): CodecContext {
    const { avcodec, avutil } = ffmpeg();
    const label = this.#src.label;
    const c = new CodecContext(this.#codec);
    try {
      const ctx = c.ptr;
      check(
        avcodec.avcodec_parameters_to_context(ctx, this.#par),
        label,
        "avcodec_parameters_to_context(audio)",
      );
      codecContext.setPktTimebase(ctx, this.#tb);
      check(avutil.av_opt_set_int(ctx, cstr("threads"), 1n, 0), label, "av_opt_set_int(threads)");
      check(avcodec.avcodec_open2(ctx, this.#codec, null), label, "avcodec_open2(audio)");
    } catch (e) {
      c[Symbol.dispose]();
      throw e;
    }
    return c;
  }

  /** The audio of `[s, e)`: see the module docs. */
  window([s, e]: [number, number], spec: AudioSpec): ClipAudio {
    const out = new WindowOutput(spec, this.#src.label, s, e);
    try {
      this.#decode(out, s, e);
    } catch (err) {
      if (!(err instanceof MediaError)) throw err;
      return silentAudio(spec, s, e, "error", err.reason);
    }
    return out.result();
  }

  /**
   * Seeks to the last point at or before `sec` by `way`, and reads up to the track's first packet, which `#pkt`
   * then holds: `"own"`, the index of the track's own stream (MP4 and MOV index every stream, and only this finds
   * an AAC track's priming packet before the video's first frame); `"video"`, the video stream's (Matroska's
   * cues index only video); `"start"`, the file's first packet (a Matroska seek lands no earlier than
   * the first cue and drops the blocks before it: an Opus track's first block, 7 ms before the video's first
   * keyframe), read from a new open of the file, whose demuxer has read nothing yet. Returns that packet's time
   * (-Infinity when it has none), Infinity when the track has no packet after the landing, null when the seek
   * (and, by an index, one to 0) or the open failed.
   */
  #land(way: Landing, sec: number): number | null {
    this.#pkt.unref();
    this.#fresh?.[Symbol.dispose]();
    this.#fresh = null;
    if (way === "start") this.#fresh = reopenTrack(this.#src, this.#index);
    const landed = way === "start"
      ? this.#fresh !== null
      : seekBefore(this.#src.fmt, way === "video" ? this.#video : this.#index, sec);
    if (!landed) return null;
    const fmt = this.#fmt;
    const pkt = this.#pkt.ptr;
    for (;;) {
      const rc = readFrame(fmt, pkt);
      if (rc === AVERROR_EOF) return Infinity;
      check(rc, this.#src.label, "av_read_frame(audio)");
      if (packet.streamIndex(pkt) === this.#index) {
        const t = packet.pts(pkt) ?? packet.dts(pkt);
        const at = t === null ? -Infinity : ptsToSeconds(t, this.#tb);
        if (way === "start" && this.#start === -Infinity) this.#start = at;
        return at;
      }
      this.#pkt.unref();
    }
  }

  /** The demuxer the current window is read from: a fresh open's after a `"start"` landing, else the source's. */
  get #fmt(): Ptr {
    return (this.#fresh ?? this.#src).fmt;
  }

  /**
   * Lands at the preroll `from` ({@link #land}): by each way of {@link LANDINGS} in turn until one lands at or
   * before `latest`; when none does, again by the one that landed earliest. Returns what {@link #land} does;
   * throws `MediaError` when no way can seek.
   */
  #landBefore(from: number, latest: number): number {
    let best: { way: Landing; at: number } | null = null;
    for (const way of LANDINGS) {
      const at = this.#land(way, from);
      if (at === null) continue;
      if (at <= latest) return at;
      if (best === null || at < best.at) best = { way, at };
    }
    const again = best === null || best.way === LANDINGS.at(-1) ? best?.at : this.#land(best.way, from);
    if (again === undefined || again === null) {
      throw new MediaError(this.#src.label, "audio seek", "no seek reaches the audio track");
    }
    return again;
  }

  #decode(out: WindowOutput, s: number, e: number): void {
    const { avcodec } = ffmpeg();
    const label = this.#src.label;
    // Land at the preroll, or by half of it (or at the track's start). A Matroska file's audio index holds only
    // the blocks read so far: once the video demux had read the file's later windows, its seek to 6.39 s landed
    // at 8.26 s, and the window's audio came back "short", all zeros.
    const landing = this.#landBefore(s - PREROLL_SEC, Math.max(s - PREROLL_SEC / 2, this.#start));
    const fmt = this.#fmt;
    // A new decoder for each window, not a flushed one: AAC's noise substitution and AC-3's dither draw from a
    // generator a flush keeps, so a window's samples would depend on the windows decoded before it in this open
    // (and a resumed or differently grouped run would not give the same bytes).
    if (this.#used) {
      const fresh = this.#open();
      this.#ctx[Symbol.dispose]();
      this.#ctx = fresh;
    }
    this.#used = true;
    const pkt = this.#pkt.ptr;
    // the landing's first packet, when there is one, is in `#pkt` already
    let rc = landing !== Infinity ? 0 : readFrame(fmt, pkt);
    for (;; rc = readFrame(fmt, pkt)) {
      if (rc === AVERROR_EOF) break;
      check(rc, label, "av_read_frame(audio)");
      if (packet.streamIndex(pkt) !== this.#index) {
        this.#pkt.unref();
        continue;
      }
      const t = packet.pts(pkt) ?? packet.dts(pkt);
      if (t !== null && ptsToSeconds(t, this.#tb) > e + READ_LIMIT_SEC) {
        this.#pkt.unref();
        return;
      }
      const sent = avcodec.avcodec_send_packet(this.#ctx.ptr, pkt);
      this.#pkt.unref();
      if (sent < 0 && sent !== AVERROR_EAGAIN) {
        throw new MediaError(label, "audio decode", errorText(sent), sent);
      }
      if (this.#drain(out, s)) return;
    }
    avcodec.avcodec_send_packet(this.#ctx.ptr, null);
    if (this.#drain(out, s)) return;
    out.flush();
  }

  /** Receives the decoder's frames into `out`; true once the window is complete. */
  #drain(out: WindowOutput, s: number): boolean {
    const { avcodec } = ffmpeg();
    const f = this.#frame.ptr;
    for (;;) {
      const rc = avcodec.avcodec_receive_frame(this.#ctx.ptr, f);
      if (rc === AVERROR_EAGAIN || rc === AVERROR_EOF) return false;
      check(rc, this.#src.label, "audio decode");
      try {
        if (this.#take(out, s)) return true;
      } finally {
        this.#frame.unref();
      }
    }
  }

  /** Feeds the current frame to the window's resampler (starting it on the grid); true once complete. */
  #take(out: WindowOutput, s: number): boolean {
    const f = this.#frame.ptr;
    const nb = frame.nbSamples(f);
    if (nb <= 0) return false;
    const input = this.#inputFormat(frame.format(f));
    try {
      return this.#place(out, s, f, nb, input);
    } finally {
      input.layout[Symbol.dispose]();
    }
  }

  #place(out: WindowOutput, s: number, f: Ptr, nb: number, input: InputFormat): boolean {
    if (out.resampler === null) {
      // pts first: FFmpeg 4.x shifts it, not best_effort_timestamp, past the samples a decoder skips (priming).
      const t = frame.pts(f) ?? frame.bestEffortTimestamp(f);
      if (t === null) return false; // cannot be placed on the timeline
      const first = Math.round(ptsToSeconds(t, this.#tb) * input.rate);
      const lowest = Math.ceil((s - MARGIN_SEC) * input.rate);
      if (first + nb <= lowest) return false; // decoder warm-up
      const step = input.rate / gcd(input.rate, out.spec.sampleRate);
      const start = Math.ceil(Math.max(first, lowest) / step) * step;
      if (start >= first + nb) return false;
      const swr = this.#resampler(input, out.spec);
      out.start(input, (start / step) * (out.spec.sampleRate / (input.rate / step)), swr);
      return out.feed(f, input, start - first, nb - (start - first));
    }
    if (!out.accepts(input)) {
      throw new MediaError(this.#src.label, "audio decode", "the audio format changes within the window");
    }
    return out.feed(f, input, 0, nb);
  }

  /** The frame's format (`format`: its sample format; rate and layout from the decoder, which sets them per frame). */
  #inputFormat(format: number): InputFormat {
    const { avutil } = ffmpeg();
    const ctx = this.#ctx.ptr, label = this.#src.label;
    const i64 = new BigInt64Array(1);
    check(avutil.av_opt_get_int(ctx, OPT_AR, 0, new Uint8Array(i64.buffer)), label, "av_opt_get_int(ar)");
    const layout = ChannelLayout.ofDecoder(ctx, label);
    const channels = layout.channels;
    if (channels < 1 || channels > MAX_IN_CHANNELS || i64[0] <= 0n || i64[0] > 1_000_000n) {
      layout[Symbol.dispose]();
      throw new MediaError(
        label,
        "audio decode",
        `unusable audio format (${channels} channels, ${i64[0]} Hz)`,
      );
    }
    return { rate: Number(i64[0]), format, channels, layout };
  }

  /**
   * A resampler from `input` to `spec`, reset (`swr_init`): the track keeps one, since building its filter bank
   * costs more than a window's resampling, and `swr_init` with the same formats keeps the filter.
   */
  #resampler(input: InputFormat, spec: AudioSpec): Ptr {
    const { swresample } = ffmpeg();
    const label = this.#src.label;
    const key = [input.rate, input.format, input.layout.key, spec.sampleRate, spec.channels].join(",");
    if (this.#swr?.key !== key) {
      this.#swr?.ctx[Symbol.dispose]();
      this.#swr = null;
      using outLayout = ChannelLayout.default(spec.channels);
      const swr = ChannelLayout.resampler(
        { layout: outLayout, format: AV_SAMPLE_FMT_FLTP, rate: spec.sampleRate },
        { layout: input.layout, format: input.format, rate: input.rate },
        label,
      );
      this.#swr = { key, ctx: new ResampleContext(swr) };
    }
    check(swresample.swr_init(this.#swr.ctx.ptr), label, "swr_init");
    return this.#swr.ctx.ptr;
  }

  #release(): void {
    this.#swr?.ctx[Symbol.dispose]();
    this.#pkt[Symbol.dispose]();
    this.#frame[Symbol.dispose]();
  }

  [Symbol.dispose](): void {
    this.#release();
    this.#fresh?.[Symbol.dispose]();
    this.#ctx?.[Symbol.dispose]();
  }
}

/** Where one window's resampled samples go: the output planes, the resampler, the coverage. */
class WindowOutput {
  readonly samples: Float32Array<ArrayBuffer>;
  readonly first: number;
  readonly count: number;
  /** The track's resampler, once the window started (see {@link AudioTrack}). */
  resampler: Ptr | null = null;
  #input: InputFormat | null = null;
  /** Output index (on the track's grid) of the resampler's next sample; its first one. */
  #pos = 0;
  #from = 0;
  #scratch: Float32Array<ArrayBuffer>[] = [];
  #outPtrs = new BigUint64Array(0);

  constructor(readonly spec: AudioSpec, readonly label: string, s: number, e: number) {
    [this.first, this.count] = windowSamples(spec, s, e);
    this.samples = new Float32Array(spec.channels * this.count);
  }

  /** Starts the window on `swr` (initialised for `input`), its first output being sample `pos` of the grid. */
  start(input: InputFormat, pos: number, swr: Ptr): void {
    this.resampler = swr;
    this.#input = input;
    this.#pos = this.#from = pos;
  }

  /** True when `input` is what the resampler was started for. */
  accepts(input: InputFormat): boolean {
    const a = this.#input!;
    return a.rate === input.rate && a.format === input.format && a.channels === input.channels;
  }

  /** Resamples `count` samples of frame `f` from sample `skip` on; true once the window is complete. */
  feed(f: Ptr, input: InputFormat, skip: number, count: number): boolean {
    const { avutil } = ffmpeg();
    const planar = avutil.av_sample_fmt_is_planar(input.format) !== 0;
    const bps = avutil.av_get_bytes_per_sample(input.format);
    const ext = frame.extendedData(f);
    if (ext === null || bps <= 0) {
      throw new MediaError(this.label, "audio decode", "a decoded frame has no samples");
    }
    const planes = planar ? input.channels : 1;
    const view = new Deno.UnsafePointerView(ext);
    const inPtrs = new BigUint64Array(planes);
    const shift = BigInt(skip * bps * (planar ? 1 : input.channels));
    for (let c = 0; c < planes; c++) {
      const p = view.getPointer(c * 8);
      if (p === null) {
        throw new MediaError(this.label, "audio decode", "a decoded frame lacks a channel's samples");
      }
      inPtrs[c] = BigInt(Deno.UnsafePointer.value(p)) + shift;
    }
    return this.#convert(new Uint8Array(inPtrs.buffer), count);
  }

  /** Drains what the resampler still holds (the track ended). */
  flush(): void {
    if (this.resampler !== null) this.#convert(null, 0);
  }

  #convert(inPtrs: Uint8Array<ArrayBuffer> | null, count: number): boolean {
    const { swresample } = ffmpeg();
    const swr = this.resampler!;
    const cap = swresample.swr_get_out_samples(swr, count);
    if (cap < 0) throw new MediaError(this.label, "swr_get_out_samples", errorText(cap), cap);
    this.#ensure(cap);
    const got = swresample.swr_convert(swr, new Uint8Array(this.#outPtrs.buffer), cap, inPtrs, count);
    if (got < 0) throw new MediaError(this.label, "swr_convert", errorText(got), got);
    // Copy the part of [pos, pos + got) that lies in [first, first + count).
    const a = Math.max(this.#pos, this.first), b = Math.min(this.#pos + got, this.first + this.count);
    for (let c = 0; c < this.spec.channels && b > a; c++) {
      this.samples.set(
        this.#scratch[c].subarray(a - this.#pos, b - this.#pos),
        c * this.count + (a - this.first),
      );
    }
    this.#pos += got;
    return this.#pos >= this.first + this.count;
  }

  #ensure(cap: number): void {
    if (this.#scratch.length > 0 && this.#scratch[0].length >= cap) return;
    const size = Math.max(cap, 4096);
    this.#scratch = Array.from({ length: this.spec.channels }, () => new Float32Array(size));
    this.#outPtrs = new BigUint64Array(
      this.#scratch.map((p) => BigInt(Deno.UnsafePointer.value(Deno.UnsafePointer.of(p)))),
    );
  }

  result(): ClipAudio {
    if (this.resampler === null) {
      return { status: "short", samples: this.samples, reason: "the audio track does not reach the window" };
    }
    const end = this.first + this.count;
    if (this.#from > this.first || this.#pos < end) {
      const where = this.#from > this.first
        ? "starts after the window's start"
        : "ends before the window's end";
      return { status: "short", samples: this.samples, reason: `the audio track ${where}` };
    }
    return { status: "ok", samples: this.samples };
  }
}
