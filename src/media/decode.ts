/**
 * CPU video decoding: `decodeVideo(packets, opts)` turns a {@link VideoPackets} (a whole stream or a window cut
 * by the demuxer) into {@link VideoFrames} with libavcodec and libswscale, synchronous FFI calls on the calling
 * thread (run it inside a Worker for parallelism; see `decode_worker.ts`).
 *
 * - Which decoded frames fill the output is decided by the frame selector (`frame_select.ts`, the rule the NVDEC
 *   decoder and the loader's clips share): by default every frame whose pts (`pts × timeBase`, or the best-effort
 *   timestamp when pts is missing) lies in the packets' window `[start, end)`; `frameRate` resamples like FFmpeg's
 *   `fps` filter (see {@link DecodeOptions.frameRate}); `sampling` picks `"uniform"` or `"stride"` frames.
 *   Frames are converted and resized straight into their slot of one contiguous output buffer (or the caller's,
 *   `into`); the others are dropped before conversion. Output is bounded by the stream, not by the window.
 * - Rotation is reported (`VideoFrames.rotation`) and applied only with `rotate: true`; `crop` and `flip` take a
 *   region and mirror it (`frame_writer.ts`).
 * - Corrupt packets are counted (`failedPackets`) and skipped, or fail the call with `onCorrupt: "error"`.
 * - The codec context is cached per thread and flushed between calls with the same codec parameters:
 *   decoder init is expensive and takes FFmpeg's process-wide codec lock. {@link releaseDecoder} frees it.
 * @module
 */
import { check, errorText, ffmpeg } from "./ffmpeg.ts";
import { CodecContext, CodecParameters, Frame, Packet, writeCodecParameters } from "./av_objects.ts";
import { codecParamsKey } from "./codec_params.ts";
import { codecContext, frame as avframe, packet as avpacket, type Ptr } from "./structs.ts";
import { AVERROR_EAGAIN, AVERROR_EOF } from "../../ffi/ffmpeg/errors.ts";
import { cstr } from "../../ffi/cstring.ts";
import { InvalidArgumentError, MediaError } from "../errors.ts";
import { settle } from "../settle.ts";
import { inWindow, NOPTS, ptsToSeconds, VideoPackets } from "./packets.ts";
import { frameShape, PIXEL_FORMATS, type PixelFormat, type VideoFrames } from "./frames.ts";
import { Scaler, SWS_FLAGS } from "./scale.ts";
import {
  type FrameSampling,
  FrameSelector,
  resolveSampling,
  type SamplingOptions,
  type SlotPlan,
} from "./frame_select.ts";
import type { CropRect } from "./crop.ts";
import { type FrameDestination, FrameWriter } from "./frame_writer.ts";

/** Options of {@link decodeVideo}. */
export interface DecodeOptions extends SamplingOptions {
  /**
   * Output size in pixels (default: the decoded frame's size, or the `crop` region's). Give one of them to keep
   * the aspect ratio (the other is rounded to the nearest integer, at least 1). With `rotate`, the size as
   * displayed.
   */
  width?: number;
  /** See `width`. */
  height?: number;
  /** Output layout (default `"rgb24"`); see `frames.ts`. */
  pixelFormat?: PixelFormat;
  /**
   * Resample to this many frames per second by pts, like FFmpeg's `fps=N` filter with `round=near`: output slot
   * `k` has time `t_k = origin + k/N` and shows the latest decoded frame whose time, rounded to the nearest slot,
   * is `<= k` (a frame whose time is `t` falls in slot `round((t - origin)·N)`); frames are duplicated or dropped
   * to fill the slots. With a window `[s, e)`: origin `s`, slots `t_k < e` and before the end of the last frame
   * (`pts + duration` of the latest packet: output is bounded by the stream), frames at or after `e` are never
   * shown, and a slot before the first decoded frame shows that first frame. Without a window (whole stream):
   * origin 0, slots from `round(first·N)` to `round(end·N)` exclusive where `end` is the last packet's
   * `pts + duration`, exactly the frames `ffmpeg -i F -vf fps=N` writes. Output `pts` are the slot times.
   * Shorthand for `sampling: { kind: "rate", frameRate }`.
   */
  frameRate?: number;
  /**
   * Which frames fill the output (default `"consecutive"`, or `"rate"` with `frameRate`); see `frame_select.ts`
   * for the exact rule of each kind. `"uniform"` needs `numFrames`.
   */
  sampling?: FrameSampling;
  /** Stop after this many output frames (fewer when the packets hold fewer: `short` is then true). */
  numFrames?: number;
  /** libavcodec `thread_count` (default 1: decode concurrency comes from the pipeline's Workers). */
  threads?: number;
  /** Skip decoding non-reference frames (`skip_frame=nonref`): faster when only sparse frames are needed. */
  skipNonRef?: boolean;
  /** What a packet the decoder rejects does: `"skip"` (default: counted in `failedPackets`) or `"error"`. */
  onCorrupt?: "skip" | "error";
  /** swscale interpolation (default `"bilinear"`, which matches `ffmpeg -vf scale=W:H:flags=bilinear`). */
  interpolation?: "bilinear" | "bicubic" | "area" | "point" | "fastBilinear" | "lanczos";
  /** Turn frames as a player shows them (the stream's display rotation; default false: coded orientation). */
  rotate?: boolean;
  /** Keep only this region of each frame (as displayed: after `rotate`), then resize it. */
  crop?: CropRect;
  /** Mirror frames left–right (after rotation and crop). */
  flip?: boolean;
  /**
   * Write the frames here (`data` from element `offset` on) instead of allocating; it must have room for them
   * (an `InvalidArgumentError` names the shortfall). `VideoFrames.data` is then a view of it.
   */
  into?: { data: Uint8Array; offset?: number };
}

/** Decodes `packets` into frames. See the module docs and {@link DecodeOptions}. */
export function decodeVideo(packets: VideoPackets, opts: DecodeOptions = {}): Promise<VideoFrames> {
  return settle(() => decodeVideoSync(packets, opts));
}

/** The synchronous core of {@link decodeVideo}, for code already running inside a Worker. */
export function decodeVideoSync(packets: VideoPackets, opts: DecodeOptions = {}): VideoFrames {
  const p = VideoPackets.fromStructured(packets);
  const o = validate(p, opts);
  const rotation = opts.rotate ? p.rotation : 0;
  const crop = opts.crop;
  const writer = new FrameWriter({
    format: o.pixelFormat,
    width: opts.width,
    height: opts.height,
    rotation,
    mirror: opts.flip ?? false,
    region: crop ? () => crop : undefined,
    flags: o.flags,
    norm: null,
  }, threadScaler(o.flags));
  const dest = opts.into ? { data: opts.into.data, offset: opts.into.offset ?? 0 } : null;
  const run = decodeFrames(p, o, writer, dest);
  const width = writer.ready ? writer.width : opts.width ?? p.width;
  const height = writer.ready ? writer.height : opts.height ?? p.height;
  const n = run.pts.length;
  return {
    data: run.data.subarray(run.offset, run.offset + n * writer.frameSize) as Uint8Array,
    shape: frameShape(o.pixelFormat, n, width, height),
    pts: run.pts,
    pixelFormat: o.pixelFormat,
    width,
    height,
    frameSize: writer.frameSize,
    planes: writer.planes,
    rotation: p.rotation,
    rotated: rotation !== 0,
    failedPackets: run.failedPackets,
    decodedFrames: run.decodedFrames,
    short: Number.isFinite(o.numFrames) && n < o.numFrames,
    source: p.source,
  };
}

/** What {@link decodeFrames} did. */
export interface DecodeRun {
  /** The buffer holding the frames (the caller's destination, or a new one) and the element offset of frame 0. */
  data: Uint8Array | Float32Array;
  offset: number;
  /** Time of each output frame (its grid time when resampling). */
  pts: Float64Array;
  /** Frames the decoder produced, and packets it rejected (with the first rejection's message). */
  decodedFrames: number;
  failedPackets: number;
  firstFailure: string;
}

/**
 * The decode behind {@link decodeVideo} and the loader's clips: decodes `packets`, keeps the frames the selector
 * chooses (`o.sampling`, `o.numFrames`) and writes each through `writer` into `dest` (frame `k` at element
 * `dest.offset + k·writer.frameSize`), or into a buffer grown as needed when `dest` is null.
 */
export function decodeFrames(
  p: VideoPackets,
  o: ResolvedOptions,
  writer: FrameWriter,
  dest: FrameDestination | null,
): DecodeRun {
  const decoder = acquireDecoder(p, o.threads);
  decoder.setSkipNonRef(o.skipNonRef);
  const selector = new FrameSelector(slotPlan(p, o));
  const capacity = selector.capacity(framesInWindow(p));
  if (capacity > MAX_SLOTS_PER_PACKET * Math.max(1, p.numPackets)) {
    // Only resampling repeats frames; this many repeats means the timestamps (or the window) are not a video's.
    throw new MediaError(
      p.source,
      "decode",
      `${p.numPackets} packets with timestamps over ${slotSpan(p)} would fill ${capacity} output frames ` +
        `(more than ${MAX_SLOTS_PER_PACKET} a packet): pass numFrames or a narrower window`,
    );
  }
  const out = new SlotBuffer(p.source, writer, dest, capacity);
  try {
    runDecode(decoder, p, o, selector, out);
  } catch (e) {
    // A failure mid-stream leaves the codec in an unknown state: drop it rather than reuse it.
    releaseDecoder();
    throw e;
  }
  const pts = new Float64Array(selector.filled);
  for (let k = 0; k < pts.length; k++) pts[k] = selector.time(k);
  return {
    data: out.data,
    offset: out.offset,
    pts,
    decodedFrames: out.decoded,
    failedPackets: decoder.failed,
    firstFailure: decoder.firstFailure,
  };
}

/** Output frames a decode may produce per packet (resampling repeats frames; nothing else does). */
const MAX_SLOTS_PER_PACKET = 1000;

/** The time range the packets' timestamps claim, for messages. */
function slotSpan(p: VideoPackets): string {
  const plan = slotPlan(p, { sampling: { kind: "consecutive" }, numFrames: Infinity });
  return `[${Number(plan.streamStart.toFixed(3))}, ${Number(plan.streamEnd.toFixed(3))}) s`;
}

// ------------------------------------------------------------------------------------------ options

/** {@link DecodeOptions} checked and with their defaults. */
export interface ResolvedOptions {
  pixelFormat: PixelFormat;
  sampling: FrameSampling;
  numFrames: number;
  threads: number;
  skipNonRef: boolean;
  onCorrupt: "skip" | "error";
  flags: number;
}

/** Checks `opts` against `p` and fills in the defaults; throws `InvalidArgumentError` naming the option. */
export function validate(p: VideoPackets, opts: DecodeOptions): ResolvedOptions {
  const bad = (what: string) => new InvalidArgumentError(`${p.source}: decodeVideo: ${what}`);
  const positiveInt = (v: number | undefined, name: string) => {
    if (v !== undefined && (!Number.isInteger(v) || v < 1)) {
      throw bad(`${name} must be a positive integer, got ${v}`);
    }
  };
  positiveInt(opts.width, "width");
  positiveInt(opts.height, "height");
  positiveInt(opts.threads, "threads");
  const pixelFormat = opts.pixelFormat ?? "rgb24";
  if (!PIXEL_FORMATS.includes(pixelFormat)) throw bad(`unknown pixelFormat "${pixelFormat}"`);
  const { sampling, numFrames } = resolveSampling(opts, bad);
  const onCorrupt = opts.onCorrupt ?? "skip";
  if (onCorrupt !== "skip" && onCorrupt !== "error") throw bad(`onCorrupt must be "skip" or "error"`);
  const interpolation = opts.interpolation ?? "bilinear";
  if (!(interpolation in SWS_FLAGS)) throw bad(`unknown interpolation "${interpolation}"`);
  if (p.timeBase[1] === 0) throw bad(`time base ${p.timeBase[0]}/${p.timeBase[1]} is invalid`);
  if (opts.into !== undefined && !(opts.into.data instanceof Uint8Array)) {
    throw bad("into.data must be a Uint8Array");
  }
  return {
    pixelFormat,
    sampling,
    numFrames,
    threads: opts.threads ?? 1,
    skipNonRef: opts.skipNonRef ?? false,
    onCorrupt,
    flags: SWS_FLAGS[interpolation],
  };
}

// ------------------------------------------------------------------------------------------ timestamps

/** Seconds of a timestamp in `timeBase` units (`null` / NOPTS → NaN), as ffprobe computes `pts_time`. */
function seconds(ts: bigint | null, tb: [number, number]): number {
  if (ts === null || ts === NOPTS) return NaN;
  return ptsToSeconds(ts, tb);
}

/** `pts × timeBase` of a decoded frame, falling back to its best-effort timestamp. */
function frameSeconds(f: Ptr, tb: [number, number]): number {
  return seconds(avframe.pts(f) ?? avframe.bestEffortTimestamp(f), tb);
}

/**
 * The frame selector's view of `p`: its window, and the extent of the frames its packets hold: the earliest pts
 * and the latest `pts + duration` (a packet without duration lasts one frame at the stream's rate).
 */
export function slotPlan(p: VideoPackets, o: { sampling: FrameSampling; numFrames: number }): SlotPlan {
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
    streamEnd: end,
    streamStart: start,
  };
}

/** Packets presented in the window (those without a time count too): what the native kinds can fill at most. */
export function framesInWindow(p: VideoPackets): number {
  let n = 0;
  for (let i = 0; i < p.numPackets; i++) {
    const t = seconds(p.pts[i], p.timeBase);
    if (Number.isNaN(t) || inWindow(p.window, t)) n++;
  }
  return n;
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
    check(avcodec.avcodec_parameters_to_context(ctx, par.ptr), p.source, "avcodec_parameters_to_context");
    codecContext.setPktTimebase(ctx, p.timeBase);
    check(
      avutil.av_opt_set_int(ctx, cstr("threads"), BigInt(threads), 0),
      p.source,
      "av_opt_set_int(threads)",
    );
    check(avcodec.avcodec_open2(ctx, codec, null), p.source, `avcodec_open2(${p.codec})`);
  }

  /** Sets `skip_frame` to `nonref` (true) or `default`. */
  setSkipNonRef(skip: boolean): void {
    const want = skip ? AVDISCARD_NONREF : AVDISCARD_DEFAULT;
    if (want === this.#skip) return;
    check(
      ffmpeg().avutil.av_opt_set_int(this.#ctx.ptr, cstr("skip_frame"), BigInt(want), 0),
      this.source,
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
  // Only the decoder: the caller already holds this thread's scaler (a FrameWriter made before decoding).
  cached?.[Symbol.dispose]();
  cached = undefined;
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

/** This thread's swscale wrapper for `flags` (kept between calls; {@link releaseDecoder} frees it). */
export function threadScaler(flags: number): Scaler {
  if (scaler && scaler.flags === flags) return scaler;
  scaler?.[Symbol.dispose]();
  scaler = new Scaler(flags);
  return scaler;
}

// ------------------------------------------------------------------------------------------ decode loop

/** Bound on receive calls per packet: a decoder never yields this many frames for one packet. */
const MAX_FRAMES_PER_PACKET = 4096;

function runDecode(
  decoder: Decoder,
  p: VideoPackets,
  o: ResolvedOptions,
  sel: FrameSelector,
  out: SlotBuffer,
): void {
  for (let i = 0; i < p.numPackets && !sel.done; i++) {
    let ret = decoder.send(p, i);
    if (ret === AVERROR_EAGAIN) {
      drain(decoder, p, o, sel, out, i);
      ret = decoder.send(p, i);
    }
    if (ret < 0 && ret !== AVERROR_EAGAIN) failPacket(decoder, o, ret, `packet ${i} (pts ${p.pts[i]})`);
    drain(decoder, p, o, sel, out, i);
  }
  if (!sel.done) {
    decoder.sendEof();
    drain(decoder, p, o, sel, out, -1);
  }
  const n = sel.finish();
  if (n > 0) out.fill(decoder.frames[1].ptr, sel.filled - n, n);
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

function drain(
  decoder: Decoder,
  p: VideoPackets,
  o: ResolvedOptions,
  sel: FrameSelector,
  out: SlotBuffer,
  i: number,
): void {
  for (let n = 0; n < MAX_FRAMES_PER_PACKET && !sel.done; n++) {
    const ret = decoder.receive(decoder.frames[0]);
    if (ret === AVERROR_EAGAIN || ret === AVERROR_EOF) return;
    if (ret < 0) {
      failPacket(decoder, o, ret, i < 0 ? "draining the decoder" : `frame after packet ${i}`);
      if (i < 0) return; // a failing drain may keep failing: stop
      continue;
    }
    out.decoded++;
    const [cur, held] = decoder.frames;
    const before = sel.filled;
    const d = sel.offer(frameSeconds(cur.ptr, p.timeBase));
    if (d.held > 0) out.fill(held.ptr, before, d.held);
    if (d.current > 0) out.fill(cur.ptr, before + d.held, d.current);
    if (d.hold) {
      // This frame becomes the held one: swap the decoder's frames so frames[1] keeps it referenced.
      held.unref();
      decoder.frames.reverse();
    }
    decoder.frames[0].unref();
  }
}

// ------------------------------------------------------------------------------------------ output

/** The output slots: the caller's destination, or a buffer grown as frames come. */
class SlotBuffer {
  data: Uint8Array | Float32Array;
  offset: number;
  /** Frames the decoder produced. */
  decoded = 0;
  readonly #source: string;
  readonly #writer: FrameWriter;
  readonly #fixed: boolean;
  #capacity: number;

  constructor(source: string, writer: FrameWriter, dest: FrameDestination | null, capacity: number) {
    this.#source = source;
    this.#writer = writer;
    this.#fixed = dest !== null;
    this.data = dest?.data ?? new Uint8Array(0);
    this.offset = dest?.offset ?? 0;
    this.#capacity = Math.max(1, capacity);
  }

  /** Writes frame `f` into slots `[first, first + count)`: converted once, copied for the others. */
  fill(f: Ptr, first: number, count: number): void {
    const w = this.#writer;
    if (!w.ready) w.init(avframe.width(f), avframe.height(f));
    this.#reserve(first + count);
    const size = w.frameSize, at = this.offset + first * size;
    w.write(f, this.data, at, this.#source);
    for (let k = 1; k < count; k++) this.data.copyWithin(at + k * size, at, at + size);
  }

  #reserve(slots: number): void {
    const size = this.#writer.frameSize;
    if (this.#fixed) {
      if (this.offset + slots * size > this.data.length) {
        throw new InvalidArgumentError(
          `${this.#source}: the destination has room for ${
            Math.floor((this.data.length - this.offset) / size)
          } ` +
            `frames of ${size} elements from offset ${this.offset}; frame ${slots - 1} does not fit`,
        );
      }
      return;
    }
    if (this.data.length === 0) this.data = this.#alloc(this.#capacity * size);
    if (slots * size <= this.data.length) return;
    this.#capacity = Math.max(slots, this.#capacity + 4, Math.ceil(this.#capacity * 1.5));
    const next = this.#alloc(this.#capacity * size);
    next.set(this.data);
    this.data = next;
  }

  #alloc(bytes: number): Uint8Array {
    try {
      return new Uint8Array(bytes);
    } catch (e) {
      throw new MediaError(
        this.#source,
        "decode",
        `no memory for ${this.#capacity} output frames (${(bytes / 2 ** 20).toFixed(1)} MiB): ${e}`,
        undefined,
        { cause: e },
      );
    }
  }
}
