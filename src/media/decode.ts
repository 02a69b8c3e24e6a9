/**
 * CPU video decoding: `decodeVideo(packets, opts)` turns a {@link VideoPackets} (a whole stream or a window cut
 * by the demuxer) into {@link VideoFrames} with libavcodec and libswscale, synchronous FFI calls on the calling
 * thread (run it inside a Worker for parallelism; see `decode_worker.ts`). This module is the API (options,
 * checks, the result); the decode itself is `decode_pass.ts`, the codec `decoder.ts`.
 *
 * - Which decoded frames fill the output is decided by the frame selector (`frame_select.ts`, the rule the NVDEC
 *   decoder and the loader's clips share): by default the frames on screen during the packets' window
 *   `[start, end)` (the one on screen at `start`, then each whose pts — `pts × timeBase`, or the best-effort
 *   timestamp when pts is missing — lies in `(start, end)`); `frameRate` resamples like FFmpeg's
 *   `fps` filter (see {@link DecodeOptions.frameRate}); `sampling` picks `"uniform"` or `"stride"` frames.
 *   Frames are converted and resized straight into their position of one contiguous output buffer (or the caller's,
 *   `into`); the others are dropped before conversion. Output is bounded by the stream, not by the window.
 * - Rotation is reported (`VideoFrames.rotation`) and applied only with `rotate: true`; `crop` and `flip` take a
 *   region and mirror it (`frame_writer.ts`).
 * - Corrupt packets are counted (`failedPackets`) and skipped, or fail the call with `onCorrupt: "error"`.
 * - The codec context is cached per thread and flushed between calls with the same codec parameters:
 *   decoder init is expensive and takes FFmpeg's process-wide codec lock. {@link releaseDecoder} frees it.
 * @module
 */
import { InvalidArgumentError } from "../errors.ts";
import { settle } from "../settle.ts";
import { VideoPackets } from "./packets.ts";
import { frameShape, PIXEL_FORMATS, type PixelFormat, type VideoFrames } from "./frames.ts";
import { SWS_FLAGS } from "./scale.ts";
import { type FrameSampling, resolveSampling, type SamplingOptions } from "./frame_select.ts";
import type { CropRect } from "./crop.ts";
import { type FrameDestination, FrameWriter } from "./frame_writer.ts";
import { releaseDecoder, threadScaler } from "./decoder.ts";
import { decodePass, type ResolvedOptions } from "./decode_pass.ts";

export { releaseDecoder };

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
   * Resample to this many frames per second by pts, like FFmpeg's `fps=N` filter with `round=near`: output position
   * `k` has time `t_k = origin + k/N` and shows the latest decoded frame whose time, rounded to the nearest position,
   * is `<= k` (a frame whose time is `t` falls in position `round((t - origin)·N)`); frames are duplicated or dropped
   * to fill the positions. With a window `[s, e)`: origin `s`, positions `t_k < e` and before the end of the stream
   * (`VideoPackets.endSec`: output is bounded by the stream), frames at or after `e` are never shown, and a
   * position before the first decoded frame shows that first frame. Without a window (whole stream):
   * origin 0, positions from `round(first·N)` to `round(end·N)` exclusive where `end` is the end of the stream
   * (the last packet's `pts + duration` unless another stream outlasts the video), exactly the frames
   * `ffmpeg -i F -vf fps=N` writes. Output `pts` are the position times.
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
   * Leave undecoded the non-reference frames no output position shows (default true): those between the keyframe and
   * the window's first frame, and those a stride, a resampling or `"uniform"` passes over. The output is
   * byte-identical either way (see `decode_pass.ts`); `false` decodes every frame up to the last one shown.
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
    frameIndex: run.frameIndex,
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
  /** Index of each output frame in the stream's presentation order, or null (see `VideoFrames.frameIndex`). */
  frameIndex: Int32Array | null;
  /** Frames the decoder produced, and packets it rejected (with the first rejection's message). */
  decodedFrames: number;
  /** Frames left undecoded because no position shows them (`skipUnshown`). */
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
  return { data: out.data, offset: out.offset, pts: out.pts, frameIndex: out.frameIndex, ...counts };
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
