/**
 * CPU video decoding: `decodeVideo(packets, opts)` turns a {@link VideoPackets} (a whole stream or a window cut
 * by the demuxer) into {@link VideoFrames} with libavcodec and libswscale, synchronous FFI calls on the calling
 * thread (run it inside a Worker for parallelism; see `decode_worker.ts`).
 *
 * - Which decoded frames fill the output is decided by the frame selector (`frame_select.ts`, the rule the NVDEC
 *   decoder and the loader's clips share): by default the frames on screen during the packets' window
 *   `[start, end)` (the one on screen at `start`, then each whose pts — `pts × timeBase`, or the best-effort
 *   timestamp when pts is missing — lies in `(start, end)`); `frameRate` resamples like FFmpeg's
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
  framesShown,
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
   * to fill the slots. With a window `[s, e)`: origin `s`, slots `t_k < e` and before the end of the stream
   * (`VideoPackets.endSec`: output is bounded by the stream), frames at or after `e` are never shown, and a
   * slot before the first decoded frame shows that first frame. Without a window (whole stream):
   * origin 0, slots from `round(first·N)` to `round(end·N)` exclusive where `end` is the end of the stream
   * (the last packet's `pts + duration` unless another stream outlasts the video), exactly the frames
   * `ffmpeg -i F -vf fps=N` writes. Output `pts` are the slot times.
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
  /**
   * Skip decoding every non-reference frame (`skip_frame=nonref`), shown or not: faster when only sparse frames
   * are needed, but the output lacks those frames.
   */
  skipNonRef?: boolean;
  /**
   * Leave undecoded the non-reference frames no output slot shows (default true): those between the keyframe and
   * the window's first frame, and those a stride, a resampling or `"uniform"` passes over. The output is
   * byte-identical either way (see {@link decodePass}); `false` decodes every frame up to the last one shown.
   * `VideoFrames.decodedFrames` tells what was decoded.
   */
  skipUnshown?: boolean;
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
    skippedFrames: run.skippedFrames,
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
  /** Frames left undecoded because no slot shows them (`skipUnshown`). */
  skippedFrames: number;
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
  const run = decodePass(p, o, [{ range: [0, p.numPackets], window: p.window, writer, dest }]);
  const [out] = run.outputs;
  if (out.error !== undefined) throw out.error;
  const { outputs: _, ...counts } = run;
  return { data: out.data, offset: out.offset, pts: out.pts, ...counts };
}

/** One output of a {@link decodePass}: its own packets among the pass's, its window, and where its frames go. */
export interface PassOutput {
  /**
   * Its own packets `[from, to)` among the pass's: what the demuxer cuts for its window alone. They decide its
   * slots (the stream's extent, what the window can hold) exactly as when it is decoded alone; the frames of the
   * other packets are offered to its selector too, which keeps the same frames (earlier ones are before its start
   * keyframe, so before its window; later ones after its last slot or its window).
   */
  range: readonly [number, number];
  /** Its window `[start, end)` seconds, or null for the whole stream. */
  window: readonly [number, number] | null;
  /** Region, size and format of its frames. */
  writer: FrameWriter;
  /** Where its frame `k` goes (`dest.offset + k·writer.frameSize`); null: a buffer grown as needed. */
  dest: FrameDestination | null;
}

/** What a {@link decodePass} did for one output. */
export interface OutputRun {
  /** The buffer holding its frames and the element offset of its frame 0. */
  data: Uint8Array | Float32Array;
  offset: number;
  /** Time of each of its frames (the grid time when resampling). */
  pts: Float64Array;
  /** Why this output failed (its frames are not valid; the pass's other outputs are unaffected). */
  error?: unknown;
}

/** What a {@link decodePass} did: per output, and the work of the pass as a whole. */
export interface PassRun {
  /** One entry per output, in the order given. */
  outputs: OutputRun[];
  /** Frames the decoder produced (over both attempts when a skipping pass had to start over). */
  decodedFrames: number;
  /** Frames left undecoded because no output shows them. */
  skippedFrames: number;
  /** Packets the decoder rejected, and the first rejection's message. */
  failedPackets: number;
  firstFailure: string;
}

/**
 * Decodes `p` once, forward, for several outputs (windows of one video whose packets overlap): each decoded frame
 * is offered to every output's selector and written into every output that shows it; decoding stops when every
 * output is full. Output `k` gets exactly the frames it gets when decoded alone from its own packets (`range`).
 * A failure that concerns one output (its destination is too small, its window would fill too many slots) is
 * recorded in its {@link OutputRun.error} and the others go on; a failure of the decoder fails the pass.
 *
 * With `o.skipUnshown`, the frames no output shows are sent with `skip_frame = nonref`: the decoder leaves them
 * undecoded when nothing references them (non-reference B-frames before a window, between the frames a stride or
 * a resampling keeps). Which frames are shown is known before decoding ({@link framesShown} over the packets'
 * times); where a skipped frame would have come out, its time is offered to the selectors all the same, so they
 * decide exactly as without skipping. The decode is checked as it goes (frames come out in presentation order,
 * one per packet, with the packet's pts; no packet fails): anything else (field-coded pictures, a corrupt packet,
 * packets without timestamps) starts the pass over without skipping, so the output never depends on the switch.
 */
export function decodePass(p: VideoPackets, o: ResolvedOptions, outputs: readonly PassOutput[]): PassRun {
  const decoder = acquireDecoder(p, o.threads);
  decoder.setSkipNonRef(o.skipNonRef);
  const outs = outputs.map((spec) => new Output(p, o, spec, decoder.pool));
  let decoded = 0;
  try {
    const plan = o.skipUnshown && !o.skipNonRef ? skipPlan(p, outs) : null;
    let result: { decoded: number; skipped: number } | null = null;
    if (plan !== null) {
      try {
        result = runPass(decoder, p, o, outs, plan);
      } catch (e) {
        if (!(e instanceof PlanMismatch)) throw e;
        // The stream is not what skipping assumes: decode it again, every frame.
        decoded += e.decoded;
        decoder.flush();
        decoder.setSkipNonRef(false);
        for (const out of outs) out.reset();
      }
    }
    result ??= runPass(decoder, p, o, outs, null);
    decoded += result.decoded;
    return {
      outputs: outs.map((out) => out.result()),
      decodedFrames: decoded,
      skippedFrames: result.skipped,
      failedPackets: decoder.failed,
      firstFailure: decoder.firstFailure,
    };
  } catch (e) {
    // A failure mid-stream leaves the codec in an unknown state: drop it rather than reuse it.
    releaseDecoder();
    throw e;
  } finally {
    for (const out of outs) out.release();
  }
}

/** `p`'s packets `[from, to)` as a {@link VideoPackets} of their own (views, no copy) with `window`. */
export function packetRange(
  p: VideoPackets,
  [from, to]: readonly [number, number],
  window: readonly [number, number] | null,
): VideoPackets {
  if (from === 0 && to === p.numPackets && window === p.window) return p;
  return new VideoPackets({
    ...p,
    window: window === null ? null : [window[0], window[1]],
    pts: p.pts.subarray(from, to),
    dts: p.dts.subarray(from, to),
    duration: p.duration.subarray(from, to),
    flags: p.flags.subarray(from, to),
    offsets: p.offsets.subarray(from, to),
    sizes: p.sizes.subarray(from, to),
  });
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
  skipUnshown: boolean;
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
    skipUnshown: opts.skipUnshown ?? true,
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
 * The frame selector's view of `p`: its window, the earliest pts, and until when its last frame is on screen:
 * `p.endSec` (the demuxer knows what follows the packets), else the latest `pts + duration` (a packet without
 * duration lasts one frame at the stream's rate).
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
    streamEnd: p.endSec ?? end,
    streamStart: start,
  };
}

/**
 * The frames on screen during the window (see `frame_select.ts`), counted from the packets: those presented in
 * it after its start, plus one when a packet is presented at or before its start; those without a time count
 * too. What the native kinds can fill at most.
 */
export function framesInWindow(p: VideoPackets): number {
  let n = 0, before = 0;
  for (let i = 0; i < p.numPackets; i++) {
    const t = seconds(p.pts[i], p.timeBase);
    if (p.window !== null && t <= p.window[0]) before = 1;
    else if (Number.isNaN(t) || inWindow(p.window, t)) n++;
  }
  return n + before;
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
  /** The frames it decodes into, kept while a selector holds them back. */
  readonly pool: FramePool = new FramePool();
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

  /** Sets `skip_frame` to `nonref` (true) or `default`; it applies to the packets sent from now on. */
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
    this.failed = 0;
    this.firstFailure = "";
  }

  #disposeFrames(): void {
    this.#pkt[Symbol.dispose]();
    this.pool[Symbol.dispose]();
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

// ------------------------------------------------------------------------------------------ frames held

/**
 * The AVFrames of one decoder: the one being received into, and those selectors hold back for later slots (one
 * per output at most, shared when several hold the same frame). A frame goes back (unreferenced) when its last
 * holder lets go of it.
 */
class FramePool implements Disposable {
  readonly #all: Frame[] = [];
  readonly #free: Frame[] = [];
  readonly #holders = new Map<Frame, number>();

  /** A frame to receive into, held once (by the caller). */
  take(): Frame {
    let f = this.#free.pop();
    if (f === undefined) {
      f = new Frame();
      this.#all.push(f);
    }
    this.#holders.set(f, 1);
    return f;
  }

  /** One more holder of `f`. */
  hold(f: Frame): void {
    this.#holders.set(f, (this.#holders.get(f) ?? 0) + 1);
  }

  /** One holder less; the last one's release unreferences it for reuse. */
  release(f: Frame): void {
    const n = (this.#holders.get(f) ?? 1) - 1;
    if (n > 0) {
      this.#holders.set(f, n);
      return;
    }
    this.#holders.delete(f);
    f.unref();
    this.#free.push(f);
  }

  /** Frees every frame. */
  [Symbol.dispose](): void {
    for (const f of this.#all) f[Symbol.dispose]();
    this.#all.length = this.#free.length = 0;
    this.#holders.clear();
  }
}

// ------------------------------------------------------------------------------------------ skipping

/** A skipping pass saw something skipping assumes away; it is started over without skipping. */
class PlanMismatch extends Error {
  /** Frames decoded before it was noticed. */
  decoded = 0;
}

/**
 * What a skipping pass sends and checks: which packets go with `skip_frame = nonref` (those whose frame no output
 * shows), and, as frames come out, which skipped frames passed unseen before each (to be offered as if decoded).
 * It holds the packets in presentation order; frames must come out in that order, one per packet, each with its
 * packet's pts, and every packet sent without skipping must give its frame: anything else is a
 * {@link PlanMismatch}.
 */
class SkipPlan {
  /** Per packet (decode order): 1 when it is sent with `skip_frame = nonref`. */
  readonly skip: Uint8Array;
  /** Presentation time (seconds) of each rank. */
  readonly times: Float64Array;
  /** Frames skipped (offered unseen) so far. */
  skipped = 0;
  readonly #byPts: Int32Array;
  readonly #sortedPts: BigInt64Array;
  readonly #sent: Uint8Array;
  #next = 0;

  constructor(p: VideoPackets, byPts: Int32Array, times: Float64Array, skip: Uint8Array) {
    this.#byPts = byPts;
    this.#sortedPts = BigInt64Array.from(byPts, (i) => p.pts[i]);
    this.times = times;
    this.skip = skip;
    this.#sent = new Uint8Array(p.numPackets);
  }

  /** Packet `i` is being sent. */
  send(i: number): void {
    this.#sent[i] = 1;
  }

  /** A frame with pts `pts` came out: the ranks of the skipped frames presented before it, in order. */
  out(pts: bigint | null): number[] {
    const r = pts === null ? -1 : this.#rank(pts);
    if (r < this.#next) throw new PlanMismatch(`a frame with pts ${pts} is not the next packet's`);
    const passed = this.#pass(r);
    if (!this.#sent[this.#byPts[r]]) throw new PlanMismatch(`frame ${pts} came out before its packet`);
    this.#next = r + 1;
    return passed;
  }

  /** End of stream: the ranks of the skipped frames after the last one out (every sent packet must be out). */
  end(): number[] {
    let last = this.#byPts.length;
    while (last > this.#next && !this.#sent[this.#byPts[last - 1]]) last--;
    const passed = this.#pass(last);
    this.#next = last;
    return passed;
  }

  /** Ranks `[next, r)`: each was skipped (returned), else the plan is wrong. */
  #pass(r: number): number[] {
    const passed: number[] = [];
    for (let k = this.#next; k < r; k++) {
      const i = this.#byPts[k];
      if (!this.#sent[i] || !this.skip[i]) {
        throw new PlanMismatch(`the frame of packet ${i} did not come out`);
      }
      passed.push(k);
    }
    this.skipped += passed.length;
    return passed;
  }

  #rank(pts: bigint): number {
    const a = this.#sortedPts;
    let lo = 0, hi = a.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (a[mid] < pts) lo = mid + 1;
      else hi = mid;
    }
    return lo < a.length && a[lo] === pts ? lo : -1;
  }
}

/**
 * The skip plan of a pass: every packet has a pts and no two share one (else null: nothing is skipped), each
 * output's selector is run dry over the packets' times ({@link framesShown}), and the packets whose frame no
 * output shows are skipped. Null when there is none to skip.
 */
function skipPlan(p: VideoPackets, outs: readonly Output[]): SkipPlan | null {
  const n = p.numPackets;
  for (let i = 0; i < n; i++) if (p.pts[i] === NOPTS) return null;
  const byPts = Int32Array.from({ length: n }, (_, i) => i).sort((a, b) =>
    p.pts[a] < p.pts[b] ? -1 : p.pts[a] > p.pts[b] ? 1 : 0
  );
  for (let k = 1; k < n; k++) if (p.pts[byPts[k]] === p.pts[byPts[k - 1]]) return null;
  const times = Float64Array.from(byPts, (i) => ptsToSeconds(p.pts[i], p.timeBase));
  const shown = new Uint8Array(n);
  for (const out of outs) {
    if (out.error !== undefined) continue;
    const s = framesShown(out.plan, times);
    for (let k = 0; k < n; k++) shown[k] |= s[k];
  }
  const skip = new Uint8Array(n);
  let any = false;
  for (let k = 0; k < n; k++) {
    if (shown[k]) continue;
    skip[byPts[k]] = 1;
    any = true;
  }
  return any ? new SkipPlan(p, byPts, times, skip) : null;
}

// ------------------------------------------------------------------------------------------ outputs

/** One output of a pass: its selector, its slots, the frame it holds back, and its failure. */
class Output {
  readonly plan: SlotPlan;
  readonly spec: PassOutput;
  sel: FrameSelector;
  error: unknown = undefined;
  readonly #out: SlotBuffer;
  readonly #pool: FramePool;
  /** The frame the selector holds back, or null; `#phantom` when the held frame was skipped (has no pixels). */
  #held: Frame | null = null;
  #phantom = false;

  constructor(p: VideoPackets, o: ResolvedOptions, spec: PassOutput, pool: FramePool) {
    this.spec = spec;
    this.#pool = pool;
    const own = packetRange(p, spec.range, spec.window);
    this.plan = slotPlan(own, o);
    this.sel = new FrameSelector(this.plan);
    const capacity = this.sel.capacity(framesInWindow(own));
    this.#out = new SlotBuffer(p.source, spec.writer, spec.dest, capacity);
    if (capacity > MAX_SLOTS_PER_PACKET * Math.max(1, own.numPackets)) {
      // Only resampling repeats frames; this many repeats means the timestamps (or the window) are not a video's.
      this.error = new MediaError(
        p.source,
        "decode",
        `${own.numPackets} packets with timestamps over ${
          slotSpan(own)
        } would fill ${capacity} output frames ` +
          `(more than ${MAX_SLOTS_PER_PACKET} a packet): pass numFrames or a narrower window`,
      );
    }
  }

  /** Full, or failed: no later frame changes it. */
  get done(): boolean {
    return this.error !== undefined || this.sel.done;
  }

  /** A decoded frame presented at `t` comes out: fill what it (and the held frame) fills; maybe hold it. */
  offer(f: Frame, t: number): void {
    const before = this.sel.filled;
    const d = this.sel.offer(t);
    this.#fillHeld(before, d.held);
    if (d.current > 0) this.#fill(f, before + d.held, d.current);
    if (d.hold) {
      this.#drop();
      this.#pool.hold(f);
      this.#held = f;
    }
  }

  /** A skipped frame presented at `t` would have come out here: the selector must not want its pixels. */
  offerSkipped(t: number): void {
    const before = this.sel.filled;
    const d = this.sel.offer(t);
    this.#fillHeld(before, d.held);
    if (d.current > 0) throw new PlanMismatch(`a skipped frame at ${t} s fills a slot`);
    if (d.hold) {
      this.#drop();
      this.#phantom = true;
    }
  }

  /** End of stream: the held frame fills the slots left. */
  finish(): void {
    if (this.error !== undefined) return;
    const before = this.sel.filled;
    this.#fillHeld(before, this.sel.finish());
  }

  /** Back to the start (the pass starts over); a failure stays. */
  reset(): void {
    this.#drop();
    this.sel = new FrameSelector(this.plan);
  }

  /** What it got. */
  result(): OutputRun {
    const pts = new Float64Array(this.sel.filled);
    for (let k = 0; k < pts.length; k++) pts[k] = this.sel.time(k);
    const run: OutputRun = { data: this.#out.data, offset: this.#out.offset, pts };
    if (this.error !== undefined) run.error = this.error;
    return run;
  }

  /** Lets go of the held frame. */
  release(): void {
    this.#drop();
  }

  #fillHeld(first: number, count: number): void {
    if (count === 0) return;
    if (this.#phantom || this.#held === null) throw new PlanMismatch("a skipped frame fills a slot");
    this.#fill(this.#held, first, count);
  }

  #fill(f: Frame, first: number, count: number): void {
    if (this.error !== undefined) return;
    try {
      this.#out.fill(f.ptr, first, count);
    } catch (e) {
      this.error = e; // its destination or its memory: this output's failure alone
    }
  }

  #drop(): void {
    if (this.#held !== null) this.#pool.release(this.#held);
    this.#held = null;
    this.#phantom = false;
  }
}

// ------------------------------------------------------------------------------------------ decode loop

/** Bound on receive calls per packet: a decoder never yields this many frames for one packet. */
const MAX_FRAMES_PER_PACKET = 4096;

/** State of one run through the packets. */
interface PassState {
  decoder: Decoder;
  p: VideoPackets;
  o: ResolvedOptions;
  outs: readonly Output[];
  plan: SkipPlan | null;
  decoded: number;
}

function allDone(outs: readonly Output[]): boolean {
  for (const out of outs) if (!out.done) return false;
  return true;
}

/** Sends the packets (skipping per `plan`) until every output is done; returns the frames decoded and skipped. */
function runPass(
  decoder: Decoder,
  p: VideoPackets,
  o: ResolvedOptions,
  outs: readonly Output[],
  plan: SkipPlan | null,
): { decoded: number; skipped: number } {
  const st: PassState = { decoder, p, o, outs, plan, decoded: 0 };
  try {
    for (let i = 0; i < p.numPackets && !allDone(outs); i++) {
      if (plan !== null) {
        decoder.setSkipNonRef(plan.skip[i] === 1);
        plan.send(i);
      }
      let ret = decoder.send(p, i);
      if (ret === AVERROR_EAGAIN) {
        drain(st, i);
        ret = decoder.send(p, i);
      }
      if (ret < 0 && ret !== AVERROR_EAGAIN) failPacket(st, ret, `packet ${i} (pts ${p.pts[i]})`);
      drain(st, i);
    }
    if (!allDone(outs)) {
      decoder.sendEof();
      drain(st, -1);
      if (plan !== null) offerSkipped(st, plan.end());
      for (const out of outs) out.finish();
    }
  } catch (e) {
    if (e instanceof PlanMismatch) e.decoded = st.decoded;
    throw e;
  }
  return { decoded: st.decoded, skipped: plan?.skipped ?? 0 };
}

function failPacket(st: PassState, code: number, what: string): void {
  // A skipping pass decodes exactly what a full one does only on a clean stream: start over.
  if (st.plan !== null) throw new PlanMismatch(`${what}: ${errorText(code)}`);
  st.decoder.noteFailure(code, what);
  if (st.o.onCorrupt === "error") {
    throw new MediaError(
      st.decoder.source,
      "decode",
      `${what} is corrupt: ${errorText(code)} (onCorrupt: "error")`,
      code,
    );
  }
}

function offerSkipped(st: PassState, ranks: number[]): void {
  for (const r of ranks) {
    const t = st.plan!.times[r];
    for (const out of st.outs) if (!out.done) out.offerSkipped(t);
  }
}

function drain(st: PassState, i: number): void {
  const { decoder, p, outs, plan } = st;
  for (let n = 0; n < MAX_FRAMES_PER_PACKET && !allDone(outs); n++) {
    const cur = decoder.pool.take();
    try {
      const ret = decoder.receive(cur);
      if (ret === AVERROR_EAGAIN || ret === AVERROR_EOF) return;
      if (ret < 0) {
        failPacket(st, ret, i < 0 ? "draining the decoder" : `frame after packet ${i}`);
        if (i < 0) return; // a failing drain may keep failing: stop
        continue;
      }
      st.decoded++;
      if (plan !== null) offerSkipped(st, plan.out(avframe.pts(cur.ptr)));
      const t = frameSeconds(cur.ptr, p.timeBase);
      for (const out of outs) if (!out.done) out.offer(cur, t);
    } finally {
      decoder.pool.release(cur);
    }
  }
}

// ------------------------------------------------------------------------------------------ output

/** The output slots: the caller's destination, or a buffer grown as frames come. */
class SlotBuffer {
  data: Uint8Array | Float32Array;
  offset: number;
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
