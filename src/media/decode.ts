/**
 * CPU video decoding: `decodeVideo(packets, opts)` turns a {@link VideoPackets} (a whole stream or a window cut
 * by the demuxer) into {@link VideoFrames} with libavcodec and libswscale, synchronous FFI calls on the calling
 * thread (run it inside a Worker for parallelism; see `decode_worker.ts`).
 *
 * - Frames whose pts (`pts × timeBase`, or the best-effort timestamp when pts is missing) lies in the packets'
 *   window `[start, end)` are converted and resized straight into their slot of one contiguous output buffer;
 *   the others (decoded only because a window starts after a keyframe) are dropped before conversion.
 * - `frameRate` resamples by pts like FFmpeg's `fps` filter (`round=near`): see {@link DecodeOptions.frameRate}.
 * - Rotation is reported (`VideoFrames.rotation`), never applied: pixels stay in coded orientation.
 * - Corrupt packets are counted (`failedPackets`) and skipped, or fail the call with `onCorrupt: "error"`.
 * - The codec context is cached per thread and flushed between calls with the same codec parameters:
 *   decoder init is expensive and takes FFmpeg's process-wide codec lock.
 * @module
 */
import { errorText, ffmpeg } from "./ffmpeg.ts";
import { CodecContext, CodecParameters, Frame, Packet, writeCodecParameters } from "./av_objects.ts";
import { codecParamsKey } from "./codec_params.ts";
import { codecContext, frame as avframe, packet as avpacket, type Ptr } from "./structs.ts";
import { AVERROR_EAGAIN, AVERROR_EOF } from "../../ffi/ffmpeg/errors.ts";
import { cstr } from "../../ffi/cstring.ts";
import { InvalidArgumentError, MediaError } from "../errors.ts";
import { inWindow, NOPTS, ptsToSeconds, VideoPackets } from "./packets.ts";
import { frameLayout, frameShape, PIXEL_FORMATS, type PixelFormat, type VideoFrames } from "./frames.ts";
import { Scaler, type ScaleTarget, SWS_FLAGS } from "./scale.ts";

/** Options of {@link decodeVideo}. */
export interface DecodeOptions {
  /**
   * Output size in pixels (default: the decoded frame's size). Give one of them to keep the aspect ratio of the
   * coded frame (the other is rounded to the nearest integer, at least 1).
   */
  width?: number;
  height?: number;
  /** Output layout (default `"rgb24"`); see `frames.ts`. */
  pixelFormat?: PixelFormat;
  /**
   * Resample to this many frames per second by pts, like FFmpeg's `fps=N` filter with `round=near`: output slot
   * `k` has time `t_k = origin + k/N` and shows the latest decoded frame whose time, rounded to the nearest slot,
   * is `<= k` (a frame whose time is `t` falls in slot `round((t - origin)·N)`); frames are duplicated or dropped
   * to fill the slots. With a window `[s, e)`: origin `s`, slots `t_k < e`, frames at or after `e` are never
   * shown, and a slot before the first decoded frame shows that first frame. Without a window (whole stream):
   * origin 0, slots from `round(first·N)` to `round(end·N)` exclusive where `end` is the last packet's
   * `pts + duration`, exactly the frames `ffmpeg -i F -vf fps=N` writes. Output `pts` are the slot times.
   */
  frameRate?: number;
  /** Stop after this many output frames (fewer when the packets hold fewer: `short` is then true). */
  numFrames?: number;
  /** libavcodec `thread_count` (default 1: decode concurrency comes from the pipeline's Workers). */
  threads?: number;
  /** Skip decoding non-reference frames (`skip_frame=nonref`): faster when only sparse frames are needed. */
  skipNonRef?: boolean;
  /** What a packet the decoder rejects does: `"skip"` (default: counted in `failedPackets`) or `"error"`. */
  onCorrupt?: "skip" | "error";
  /** swscale interpolation (default `"bilinear"`, which matches `ffmpeg -vf scale=W:H:flags=bilinear`). */
  interpolation?: keyof typeof SWS_FLAGS;
}

/** Decodes `packets` into frames. See the module docs and {@link DecodeOptions}. */
export function decodeVideo(packets: VideoPackets, opts: DecodeOptions = {}): Promise<VideoFrames> {
  try {
    return Promise.resolve(decodeVideoSync(packets, opts));
  } catch (e) {
    return Promise.reject(e);
  }
}

/** The synchronous core of {@link decodeVideo}, for code already running inside a Worker. */
export function decodeVideoSync(packets: VideoPackets, opts: DecodeOptions = {}): VideoFrames {
  const p = VideoPackets.fromStructured(packets);
  const o = validate(p, opts);
  const decoder = acquireDecoder(p, o.threads);
  decoder.setSkipNonRef(o.skipNonRef);
  const sink = new FrameSink(p, o, estimateCapacity(p, o));
  const selector = o.frameRate > 0 ? new Resampler(p, o, sink) : new WindowFilter(p, sink);
  try {
    runDecode(decoder, p, o, sink, selector);
  } catch (e) {
    // A failure mid-stream leaves the codec in an unknown state: drop it rather than reuse it.
    releaseDecoder();
    throw e;
  }
  return sink.finish(selector.decoded, decoder.failed);
}

// ------------------------------------------------------------------------------------------ options

interface ResolvedOptions {
  width: number | undefined;
  height: number | undefined;
  pixelFormat: PixelFormat;
  frameRate: number;
  numFrames: number;
  threads: number;
  skipNonRef: boolean;
  onCorrupt: "skip" | "error";
  flags: number;
}

function validate(p: VideoPackets, opts: DecodeOptions): ResolvedOptions {
  const bad = (what: string) => new InvalidArgumentError(`${p.source}: decodeVideo: ${what}`);
  const positiveInt = (v: number | undefined, name: string) => {
    if (v !== undefined && (!Number.isInteger(v) || v < 1)) {
      throw bad(`${name} must be a positive integer, got ${v}`);
    }
  };
  positiveInt(opts.width, "width");
  positiveInt(opts.height, "height");
  positiveInt(opts.numFrames, "numFrames");
  positiveInt(opts.threads, "threads");
  const pixelFormat = opts.pixelFormat ?? "rgb24";
  if (!PIXEL_FORMATS.includes(pixelFormat)) throw bad(`unknown pixelFormat "${pixelFormat}"`);
  if (opts.frameRate !== undefined && !(opts.frameRate > 0 && Number.isFinite(opts.frameRate))) {
    throw bad(`frameRate must be a positive number, got ${opts.frameRate}`);
  }
  const onCorrupt = opts.onCorrupt ?? "skip";
  if (onCorrupt !== "skip" && onCorrupt !== "error") throw bad(`onCorrupt must be "skip" or "error"`);
  const interpolation = opts.interpolation ?? "bilinear";
  if (!(interpolation in SWS_FLAGS)) throw bad(`unknown interpolation "${interpolation}"`);
  if (p.timeBase[1] === 0) throw bad(`time base ${p.timeBase[0]}/${p.timeBase[1]} is invalid`);
  return {
    width: opts.width,
    height: opts.height,
    pixelFormat,
    frameRate: opts.frameRate ?? 0,
    numFrames: opts.numFrames ?? Infinity,
    threads: opts.threads ?? 1,
    skipNonRef: opts.skipNonRef ?? false,
    onCorrupt,
    flags: SWS_FLAGS[interpolation],
  };
}

// ------------------------------------------------------------------------------------------ timestamps

/**
 * Rounds to the nearest integer, halves away from zero, like `av_rescale_q_rnd(..., AV_ROUND_NEAR_INF)` does on
 * exact rationals: a value within 1e-9 of a half counts as the half (a 25 fps frame at 0.04·k s lands exactly
 * between two 12.5 fps slots, which floating point would otherwise decide at random).
 */
function roundNear(x: number): number {
  return x >= 0 ? Math.floor(x + 0.5 + 1e-9) : -Math.floor(-x + 0.5 + 1e-9);
}

/** Seconds of a timestamp in `timeBase` units (`null` / NOPTS → NaN), as ffprobe computes `pts_time`. */
function seconds(ts: bigint | null, tb: [number, number]): number {
  if (ts === null || ts === NOPTS) return NaN;
  return ptsToSeconds(ts, tb);
}

/** `pts × timeBase` of a decoded frame, falling back to its best-effort timestamp. */
function frameSeconds(f: Ptr, tb: [number, number]): number {
  return seconds(avframe.pts(f) ?? avframe.bestEffortTimestamp(f), tb);
}

/** End of the stream in seconds: the latest `pts + duration` in the packet table (NaN when no pts). */
function streamEnd(p: VideoPackets): number {
  let end = NaN;
  const fallback = p.frameRate > 0 ? 1 / p.frameRate : 0;
  for (let i = 0; i < p.numPackets; i++) {
    const t = seconds(p.pts[i], p.timeBase);
    if (Number.isNaN(t)) continue;
    const d = p.duration[i] > 0n ? seconds(p.duration[i], p.timeBase) : fallback;
    if (!(t + d <= end)) end = t + d;
  }
  return end;
}

/** How many output frames to allocate room for before decoding (grown if the guess is short). */
function estimateCapacity(p: VideoPackets, o: ResolvedOptions): number {
  let n = 0;
  if (o.frameRate > 0) {
    if (p.window) n = Math.max(0, Math.ceil((p.window[1] - p.window[0]) * o.frameRate - 1e-9));
    else {
      let first = Infinity;
      for (let i = 0; i < p.numPackets; i++) {
        const t = seconds(p.pts[i], p.timeBase);
        if (t < first) first = t;
      }
      const end = streamEnd(p);
      n = Number.isFinite(first) && Number.isFinite(end)
        ? roundNear(end * o.frameRate) - roundNear(first * o.frameRate) + 1
        : p.numPackets;
    }
  } else {
    for (let i = 0; i < p.numPackets; i++) {
      const t = seconds(p.pts[i], p.timeBase);
      if (Number.isNaN(t) || inWindow(p.window, t)) n++;
    }
  }
  return Math.max(0, Math.min(n, o.numFrames));
}

// ------------------------------------------------------------------------------------------ decoder

/** `AVDISCARD_DEFAULT`, `AVDISCARD_NONREF`. */
const AVDISCARD_DEFAULT = 0;
const AVDISCARD_NONREF = 8;

/**
 * One opened libavcodec decoder for one set of codec parameters, with its packet and frame objects. Reusable:
 * `flush()` returns it to the state after opening. Owns every native object; dispose it (`using`).
 * This is the seam the GPU decoder will sit behind.
 */
export class Decoder {
  /** What the decoder was opened for (see {@link Decoder.keyOf}). */
  readonly key: string;
  readonly source: string;
  /** Packets rejected since the last flush. */
  failed = 0;
  /** The message of the first rejection since the last flush. */
  firstFailure = "";
  readonly #ctx: CodecContext;
  readonly #pkt = new Packet();
  /** Two frames: the one being received into and the one a resampler holds back. */
  readonly frames: [Frame, Frame] = [new Frame(), new Frame()];
  #skip = AVDISCARD_DEFAULT;

  /** The cache key: everything that decides how a decoder is opened (every copied field, time base, threads). */
  static keyOf(p: VideoPackets, threads: number): string {
    return `${codecParamsKey(p)}/${p.timeBase}/${threads}`;
  }

  constructor(p: VideoPackets, threads: number) {
    this.key = Decoder.keyOf(p, threads);
    this.source = p.source;
    const { avcodec } = ffmpeg();
    const codec = avcodec.avcodec_find_decoder(p.codecId);
    if (codec === null) {
      this.#disposeFrames();
      throw new MediaError(
        p.source,
        "avcodec_find_decoder",
        `no decoder for codec "${p.codec}" (id ${p.codecId}) in this FFmpeg`,
      );
    }
    try {
      this.#ctx = new CodecContext(codec);
    } catch (e) {
      this.#disposeFrames();
      throw e;
    }
    try {
      this.#open(p, codec, threads);
    } catch (e) {
      this[Symbol.dispose]();
      throw e;
    }
  }

  #open(p: VideoPackets, codec: Ptr, threads: number): void {
    const { avcodec, avutil } = ffmpeg();
    using par = new CodecParameters();
    writeCodecParameters(par.ptr, p);
    const ctx = this.#ctx.ptr;
    this.#check(avcodec.avcodec_parameters_to_context(ctx, par.ptr), "avcodec_parameters_to_context");
    codecContext.setPktTimebase(ctx, p.timeBase);
    this.#check(avutil.av_opt_set_int(ctx, cstr("threads"), BigInt(threads), 0), "av_opt_set_int(threads)");
    this.#check(avcodec.avcodec_open2(ctx, codec, null), `avcodec_open2(${p.codec})`);
  }

  #check(code: number, op: string): void {
    if (code < 0) throw new MediaError(this.source, op, errorText(code), code);
  }

  /** Sets `skip_frame` to `nonref` (true) or `default`. */
  setSkipNonRef(skip: boolean): void {
    const want = skip ? AVDISCARD_NONREF : AVDISCARD_DEFAULT;
    if (want === this.#skip) return;
    this.#check(
      ffmpeg().avutil.av_opt_set_int(this.#ctx.ptr, cstr("skip_frame"), BigInt(want), 0),
      "av_opt_set_int(skip_frame)",
    );
    this.#skip = want;
  }

  /**
   * Sends packet `i` of `p` (copied into a padded, ref-counted AVPacket). Returns FFmpeg's code: 0,
   * `AVERROR(EAGAIN)` (receive frames first, then send again) or an error.
   */
  send(p: VideoPackets, i: number): number {
    const { avcodec } = ffmpeg();
    const pkt = this.#pkt.ptr;
    const size = p.sizes[i];
    if (avcodec.av_new_packet(pkt, size) < 0) {
      throw new MediaError(this.source, "av_new_packet", "out of memory");
    }
    if (size > 0) {
      const data = avpacket.data(pkt)!;
      new Uint8Array(Deno.UnsafePointerView.getArrayBuffer(data, size)).set(p.packet(i));
    }
    avpacket.setTiming(pkt, p.pts[i], p.dts[i], p.duration[i], p.flags[i]);
    const ret = avcodec.avcodec_send_packet(this.#ctx.ptr, pkt);
    avcodec.av_packet_unref(pkt);
    return ret;
  }

  /** Signals end of stream so the decoder releases the frames it holds back. */
  sendEof(): number {
    return ffmpeg().avcodec.avcodec_send_packet(this.#ctx.ptr, null);
  }

  /** Receives the next frame into `f`: 0, `AVERROR(EAGAIN)`, `AVERROR_EOF` or an error. */
  receive(f: Frame): number {
    return ffmpeg().avcodec.avcodec_receive_frame(this.#ctx.ptr, f.ptr);
  }

  /** Records a rejected packet. */
  noteFailure(code: number, what: string): void {
    if (this.failed === 0) this.firstFailure = `${what}: ${errorText(code)}`;
    this.failed++;
  }

  /** Back to the state after opening: drops buffered frames, clears the failure count. */
  flush(): void {
    ffmpeg().avcodec.avcodec_flush_buffers(this.#ctx.ptr);
    for (const f of this.frames) f.unref();
    this.failed = 0;
    this.firstFailure = "";
  }

  #disposeFrames(): void {
    this.#pkt[Symbol.dispose]();
    for (const f of this.frames) f[Symbol.dispose]();
  }

  /** Frees the codec context, packet and frames. */
  [Symbol.dispose](): void {
    this.#ctx?.[Symbol.dispose]();
    this.#disposeFrames();
  }
}

let cached: Decoder | undefined;

/** This thread's decoder for `p`, reused (flushed) when the codec parameters match the previous call's. */
function acquireDecoder(p: VideoPackets, threads: number): Decoder {
  const key = Decoder.keyOf(p, threads);
  if (cached && cached.key === key) {
    cached.flush();
    return cached;
  }
  releaseDecoder();
  cached = new Decoder(p, threads);
  return cached;
}

/** Frees this thread's cached decoder and scaler (they are re-created on the next call). */
export function releaseDecoder(): void {
  cached?.[Symbol.dispose]();
  cached = undefined;
  scaler?.[Symbol.dispose]();
  scaler = undefined;
}

let scaler: Scaler | undefined;

function acquireScaler(flags: number): Scaler {
  if (scaler && scaler.flags === flags) return scaler;
  scaler?.[Symbol.dispose]();
  scaler = new Scaler(flags);
  return scaler;
}

// ------------------------------------------------------------------------------------------ decode loop

/** Receives a decoded frame (owned by the decoder) and decides what becomes of it. */
interface FrameSelector {
  /** Frames seen. */
  decoded: number;
  /** Takes the frame in `decoder.frames[0]`; may swap the decoder's two frames to keep it. */
  take(decoder: Decoder): void;
  /** End of stream. */
  finish(decoder: Decoder): void;
}

/** Bound on receive calls per packet: a decoder never yields this many frames for one packet. */
const MAX_FRAMES_PER_PACKET = 4096;

function runDecode(
  decoder: Decoder,
  p: VideoPackets,
  o: ResolvedOptions,
  sink: FrameSink,
  sel: FrameSelector,
): void {
  for (let i = 0; i < p.numPackets && !sink.full; i++) {
    let ret = decoder.send(p, i);
    if (ret === AVERROR_EAGAIN) {
      drain(decoder, o, sel, sink, i);
      ret = decoder.send(p, i);
    }
    if (ret < 0 && ret !== AVERROR_EAGAIN) failPacket(decoder, o, ret, `packet ${i} (pts ${p.pts[i]})`);
    drain(decoder, o, sel, sink, i);
  }
  if (!sink.full) {
    decoder.sendEof();
    drain(decoder, o, sel, sink, -1);
  }
  sel.finish(decoder);
}

function failPacket(decoder: Decoder, o: ResolvedOptions, code: number, what: string): void {
  decoder.noteFailure(code, what);
  if (o.onCorrupt === "error") {
    throw new MediaError(
      decoder.source,
      "decode",
      `${what} is corrupt: ${errorText(code)} (onCorrupt: "error")`,
      code,
    );
  }
}

function drain(decoder: Decoder, o: ResolvedOptions, sel: FrameSelector, sink: FrameSink, i: number): void {
  for (let n = 0; n < MAX_FRAMES_PER_PACKET && !sink.full; n++) {
    const ret = decoder.receive(decoder.frames[0]);
    if (ret === AVERROR_EAGAIN || ret === AVERROR_EOF) return;
    if (ret < 0) {
      failPacket(decoder, o, ret, i < 0 ? "draining the decoder" : `frame after packet ${i}`);
      if (i < 0) return; // a failing drain may keep failing: stop
      continue;
    }
    sel.take(decoder);
    decoder.frames[0].unref();
  }
}

/** Plain mode: keeps the frames whose pts is in the window. */
class WindowFilter implements FrameSelector {
  decoded = 0;
  readonly #p: VideoPackets;
  readonly #sink: FrameSink;
  constructor(p: VideoPackets, sink: FrameSink) {
    this.#p = p;
    this.#sink = sink;
  }
  take(decoder: Decoder): void {
    this.decoded++;
    const f = decoder.frames[0].ptr;
    const t = frameSeconds(f, this.#p.timeBase);
    if (Number.isNaN(t) ? this.#p.window !== null : !inWindow(this.#p.window, t)) return;
    this.#sink.write(f, t);
  }
  finish(): void {}
}

/** `frameRate` mode: FFmpeg `fps` filter semantics (see {@link DecodeOptions.frameRate}). */
class Resampler implements FrameSelector {
  decoded = 0;
  readonly #p: VideoPackets;
  readonly #sink: FrameSink;
  readonly #rate: number;
  readonly #origin: number;
  #next: number | undefined; // next slot to emit
  #end: number; // first slot not emitted
  #held = false; // decoder.frames[1] holds the latest eligible frame

  constructor(p: VideoPackets, o: ResolvedOptions, sink: FrameSink) {
    this.#p = p;
    this.#sink = sink;
    this.#rate = o.frameRate;
    if (p.window) {
      this.#origin = p.window[0];
      this.#next = 0;
      this.#end = Math.ceil((p.window[1] - p.window[0]) * o.frameRate - 1e-9);
    } else {
      this.#origin = 0;
      this.#end = roundNear(streamEnd(p) * o.frameRate);
    }
  }

  #slotOf(t: number): number {
    return roundNear((t - this.#origin) * this.#rate);
  }

  take(decoder: Decoder): void {
    this.decoded++;
    const f = decoder.frames[0].ptr;
    const t = frameSeconds(f, this.#p.timeBase);
    if (Number.isNaN(t)) return;
    if (this.#p.window && t >= this.#p.window[1]) return;
    const slot = this.#slotOf(t);
    if (this.#next === undefined) this.#next = slot; // whole stream: the grid starts at the first frame
    // Slots before this frame's slot show the held frame (or, before any frame, this one).
    const upTo = Math.min(slot, this.#end);
    if (this.#held) this.#emit(decoder.frames[1].ptr, upTo);
    else this.#emit(f, upTo);
    // This frame becomes the held one: swap the decoder's frames so frames[1] keeps it referenced.
    decoder.frames[1].unref();
    decoder.frames.reverse();
    this.#held = true;
  }

  /** Emits slots `next .. upTo-1` showing frame `f`: scaled once, copied for duplicates. */
  #emit(f: Ptr, upTo: number): void {
    let first = -1;
    while (this.#next !== undefined && this.#next < upTo && !this.#sink.full) {
      const t = this.#origin + this.#next / this.#rate;
      if (first < 0) first = this.#sink.write(f, t);
      else this.#sink.duplicate(first, t);
      this.#next++;
    }
  }

  finish(decoder: Decoder): void {
    if (this.#held) this.#emit(decoder.frames[1].ptr, this.#end);
  }
}

// ------------------------------------------------------------------------------------------ output

/**
 * Bytes kept free after the last slot: swscale's SIMD converters may write whole vector groups past the end of a
 * row (FFmpeg's own frames have this padding), which must not run off the end of the output buffer.
 */
function tailSlack(width: number): number {
  return 4 * width + 256;
}

/** The growing output: one contiguous buffer of frame slots plus their pts. */
class FrameSink {
  readonly #p: VideoPackets;
  readonly #o: ResolvedOptions;
  readonly #limit: number;
  #capacity: number;
  #data = new Uint8Array(0);
  #pts: Float64Array;
  #count = 0;
  #target: ScaleTarget | undefined;
  #frameSize = 0;
  #slack = 0;
  #scaler: Scaler;

  constructor(p: VideoPackets, o: ResolvedOptions, capacity: number) {
    this.#p = p;
    this.#o = o;
    this.#limit = o.numFrames;
    this.#capacity = Math.max(1, capacity);
    this.#pts = new Float64Array(this.#capacity);
    this.#scaler = acquireScaler(o.flags);
  }

  /** True once `numFrames` frames were written. */
  get full(): boolean {
    return this.#count >= this.#limit;
  }

  /** Scales frame `f` into the next slot with time `t`; returns the slot index. */
  write(f: Ptr, t: number): number {
    const target = this.#target ?? this.#init(f);
    this.#reserve();
    const slot = this.#count++;
    this.#pts[slot] = t;
    this.#scaler.scaleInto(f, this.#data, slot * this.#frameSize, target, this.#p.source);
    return slot;
  }

  /** Copies slot `from` into the next slot with time `t`. */
  duplicate(from: number, t: number): void {
    this.#reserve();
    const slot = this.#count++;
    this.#pts[slot] = t;
    const size = this.#frameSize;
    this.#data.copyWithin(slot * size, from * size, (from + 1) * size);
  }

  #init(f: Ptr): ScaleTarget {
    const fw = avframe.width(f), fh = avframe.height(f);
    let { width, height } = this.#o;
    if (width === undefined && height === undefined) [width, height] = [fw, fh];
    else if (width === undefined) width = Math.max(1, Math.round((height! * fw) / fh));
    else if (height === undefined) height = Math.max(1, Math.round((width * fh) / fw));
    const { planes, frameSize } = frameLayout(this.#o.pixelFormat, width, height!);
    this.#target = { format: this.#o.pixelFormat, width, height: height!, planes };
    this.#frameSize = frameSize;
    this.#slack = tailSlack(width);
    this.#data = new Uint8Array(frameSize * this.#capacity + this.#slack);
    return this.#target;
  }

  #reserve(): void {
    if (this.#count < this.#capacity) return;
    const capacity = Math.max(this.#capacity + 4, Math.ceil(this.#capacity * 1.5));
    const data = new Uint8Array(capacity * this.#frameSize + this.#slack);
    data.set(this.#data.subarray(0, this.#count * this.#frameSize));
    const pts = new Float64Array(capacity);
    pts.set(this.#pts.subarray(0, this.#count));
    this.#data = data;
    this.#pts = pts;
    this.#capacity = capacity;
  }

  finish(decoded: number, failedPackets: number): VideoFrames {
    const format = this.#o.pixelFormat;
    const width = this.#target?.width ?? this.#o.width ?? this.#p.width;
    const height = this.#target?.height ?? this.#o.height ?? this.#p.height;
    const { planes, frameSize } = frameLayout(format, width, height);
    const n = this.#count;
    // A view: the buffer keeps its few KB of tail slack rather than being copied to drop it.
    const data = this.#data.subarray(0, n * frameSize);
    const pts = n === this.#capacity ? this.#pts : this.#pts.slice(0, n);
    return {
      data,
      shape: frameShape(format, n, width, height),
      pts,
      pixelFormat: format,
      width,
      height,
      frameSize,
      planes,
      rotation: this.#p.rotation,
      failedPackets,
      decodedFrames: decoded,
      short: Number.isFinite(this.#o.numFrames) && n < this.#o.numFrames,
      source: this.#p.source,
    };
  }
}
