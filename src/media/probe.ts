/**
 * `probe()`: what a media file holds (container, duration, streams; for the chosen video stream codec, size,
 * pixel format, bit depth, frame rate, time base, frame count, rotation), read from the container header.
 *
 * `avformat_find_stream_info` (which opens decoders behind FFmpeg's process-wide codec lock) runs only when the
 * header leaves a field of the video stream unknown (typically the pixel format, which MP4/MKV headers do not
 * store), with small probe limits. Pass `streamInfo: "never"` for a lock-free probe that reports such fields as
 * unknown.
 * @module
 */
import { readCString } from "../../ffi/cstring.ts";
import { MediaError } from "../errors.ts";
import { Packet } from "./av_objects.ts";
import { ffmpeg } from "./ffmpeg.ts";
import { type MediaInput, MediaSource, readFrame } from "./source.ts";
import {
  AV_PKT_FLAG_KEY,
  codecpar,
  formatContext,
  packet,
  pixelFormatInfo,
  type Ptr,
  stream,
} from "./structs.ts";
import { type CodecInfo, ptsToSeconds } from "./packets.ts";
import { settle } from "../settle.ts";

/** `AVMediaType` values. */
const MEDIA_TYPES = ["video", "audio", "data", "subtitle", "attachment"] as const;
/** `AV_DISPOSITION_DEFAULT`. */
const AV_DISPOSITION_DEFAULT = 0x1;
/** `AV_DISPOSITION_ATTACHED_PIC`. */
const AV_DISPOSITION_ATTACHED_PIC = 0x400;

/** One stream of any type. */
export interface StreamInfo {
  /** Absolute stream index in the container. */
  index: number;
  /** "video", "audio", "data", "subtitle", "attachment" or "unknown". */
  type: string;
  /** FFmpeg codec name ("h264", "aac", ...), "none" when unknown. */
  codec: string;
  /** FFmpeg `AVCodecID`. */
  codecId: number;
  /** Time base of the stream's timestamps, `[num, den]`. */
  timeBase: [number, number];
  /** Seconds, or null when the container does not say. */
  durationSec: number | null;
  /** Seconds, or null when the container does not say. */
  startTimeSec: number | null;
  /** Bits per second, 0 when unknown. */
  bitRate: number;
  /** Marked default (`AV_DISPOSITION_DEFAULT`): FFmpeg's best-stream choice ranks these first. */
  isDefault: boolean;
  /** A cover image (`AV_DISPOSITION_ATTACHED_PIC`), not a video; never chosen as the video stream. */
  attachedPic: boolean;
}

/** The video stream `probe()` reports on. */
export interface VideoStreamInfo {
  /** Absolute stream index in the container. */
  index: number;
  /** FFmpeg codec name ("h264", "hevc", ...). */
  codec: string;
  /** Profile name ("High", "Main 10", ...), or null. */
  profile: string | null;
  /** Coded size. Display size differs when `rotation` is ±90 or the pixels are not square (`sampleAspectRatio`). */
  width: number;
  /** See `width`. */
  height: number;
  /**
   * Width of one pixel relative to its height, `[num, den]`, as ffprobe's `sample_aspect_ratio`: the container's
   * when it gives one, else the codec's; `[1, 1]` when neither does. A 720×480 frame with `[32, 27]` is shown
   * 853⅓×480 (16:9).
   */
  sampleAspectRatio: [number, number];
  /** FFmpeg pixel format name ("yuv420p", "yuv420p10le", ...), or null when unknown. */
  pixelFormat: string | null;
  /** Bits per component (8, 10, ...), 0 when unknown. */
  bitDepth: number;
  /** Average frames per second (`avg_frame_rate`, else `r_frame_rate`), 0 when unknown. */
  frameRate: number;
  /** The same as a rational, `[0, 1]` when unknown. */
  frameRateRational: [number, number];
  /** Time base of the stream's timestamps, `[num, den]`. */
  timeBase: [number, number];
  /** Frame count from the container (`nb_frames`), null when the container does not say. */
  numFrames: number | null;
  /** Display rotation in degrees, counter-clockwise, exactly as ffprobe's `rotation` (e.g. -90), 0 when none. */
  rotation: number;
  /** Stream duration in seconds (the container's duration when the stream has none), null when unknown. */
  durationSec: number | null;
  /** Stream start time in seconds (pts of its first frame), 0 when unknown. */
  startTimeSec: number;
  /** Presentation times (seconds, ascending) of the keyframe packets; only with `probe(src, { keyframes: true })`. */
  keyframeTimes?: number[];
}

/** The audio stream `probe()` picked (FFmpeg's "best" audio stream). */
export interface AudioStreamInfo {
  /** Absolute stream index in the container. */
  index: number;
  /** FFmpeg codec name ("aac", "opus", ...). */
  codec: string;
  /** Samples per second. */
  sampleRate: number;
  /** Time base of the stream's timestamps, `[num, den]`. */
  timeBase: [number, number];
  /** Seconds, or null when unknown. */
  durationSec: number | null;
}

/** What `probe()` returns. */
export interface MediaInfo {
  /** Demuxer name, e.g. "mov,mp4,m4a,3gp,3g2,mj2", "matroska,webm". */
  format: string;
  /** Container duration in seconds, null when unknown. */
  durationSec: number | null;
  /** Container start time in seconds, 0 when unknown. */
  startTimeSec: number;
  /** Bits per second, 0 when unknown. */
  bitRate: number;
  /** The chosen video stream (FFmpeg's best, or `streamIndex`), null when the file has none. */
  video: VideoStreamInfo | null;
  /** FFmpeg's best audio stream, null when the file has none. */
  audio: AudioStreamInfo | null;
  /** Every stream of the container, in index order. */
  streams: StreamInfo[];
}

/** Options for {@link probe}. */
export interface ProbeOptions {
  /** Also list keyframe times of the video stream (reads every packet; no decoding). */
  keyframes?: boolean;
  /** Report on this stream index instead of FFmpeg's best video stream. */
  streamIndex?: number;
  /**
   * When to run `avformat_find_stream_info`: "auto" (default) only when the header leaves the video stream's
   * codec, size or pixel format unknown; "always"; "never" (no decoder is opened).
   */
  streamInfo?: "auto" | "always" | "never";
}

/** FFmpeg's name for a codec id. */
export function codecName(codecId: number): string {
  return readCString(ffmpeg().avcodec.avcodec_get_name(codecId)) ?? "none";
}

function mediaType(par: Ptr): string {
  return MEDIA_TYPES[codecpar.codecType(par)] ?? "unknown";
}

function secondsOrNull(v: bigint | null, tb: [number, number]): number | null {
  return v === null ? null : ptsToSeconds(v, tb);
}

/** Display rotation as ffprobe prints it (`av_display_rotation_get` of the display matrix), 0 when none. */
export function streamRotation(st: Ptr): number {
  const matrix = stream.displayMatrix(st);
  if (matrix === null || matrix.byteLength < 36) return 0;
  const aligned = new Uint8Array(36);
  aligned.set(matrix.subarray(0, 36));
  const deg = ffmpeg().avutil.av_display_rotation_get(Deno.UnsafePointer.of(aligned));
  if (!Number.isFinite(deg)) return 0;
  const r = Math.round(deg);
  return r === 0 ? 0 : r; // no -0
}

/** Index of the video stream to use: `wanted` when given (must be video), else FFmpeg's best video stream. */
export function selectVideoStream(src: MediaSource, wanted: number | undefined, operation: string): number {
  const fmt = src.fmt;
  const n = formatContext.nbStreams(fmt);
  if (wanted !== undefined) {
    if (!Number.isInteger(wanted) || wanted < 0 || wanted >= n) {
      throw new MediaError(
        src.label,
        operation,
        `stream ${wanted} does not exist (the file has ${n} streams)`,
      );
    }
    const type = mediaType(stream.codecpar(formatContext.stream(fmt, wanted)));
    if (type !== "video") {
      throw new MediaError(src.label, operation, `stream ${wanted} is ${type}, not video`);
    }
    return wanted;
  }
  const best = ffmpeg().avformat.av_find_best_stream(fmt, 0, -1, -1, null, 0);
  if (best >= 0) return best;
  // av_find_best_stream skips attached pictures and streams it cannot rank; take any real video stream.
  for (let i = 0; i < n; i++) {
    const st = formatContext.stream(fmt, i);
    if (
      mediaType(stream.codecpar(st)) === "video" && !(stream.disposition(st) & AV_DISPOSITION_ATTACHED_PIC)
    ) {
      return i;
    }
  }
  throw new MediaError(src.label, operation, "the input has no video stream");
}

/** True when the header left something a consumer needs unknown (codec, size; pixel format if `needFormat`). */
export function headerIncomplete(st: Ptr, needFormat: boolean): boolean {
  const par = stream.codecpar(st);
  if (codecpar.codecId(par) === 0 || codecpar.width(par) <= 0 || codecpar.height(par) <= 0) return true;
  return needFormat && codecpar.format(par) < 0;
}

/** Frame rate: `avg_frame_rate`, else `r_frame_rate`, else `[0, 1]`. */
export function streamFrameRate(st: Ptr): [number, number] {
  for (const r of [stream.avgFrameRate(st), stream.rFrameRate(st)]) if (r[0] > 0 && r[1] > 0) return r;
  return [0, 1];
}

/** The codec parameters of a stream, as they travel with `VideoPackets`. */
export function readCodecInfo(st: Ptr): CodecInfo {
  return codecInfoFromPar(stream.codecpar(st));
}

/** The codec parameters in an `AVCodecParameters`. */
export function codecInfoFromPar(par: Ptr): CodecInfo {
  const codecId = codecpar.codecId(par);
  return {
    codec: codecName(codecId),
    codecId,
    codecTag: codecpar.codecTag(par),
    profile: codecpar.profile(par),
    level: codecpar.level(par),
    width: codecpar.width(par),
    height: codecpar.height(par),
    format: codecpar.format(par),
    bitsPerRawSample: codecpar.bitsPerRawSample(par),
    fieldOrder: codecpar.fieldOrder(par),
    colorRange: codecpar.colorRange(par),
    colorPrimaries: codecpar.colorPrimaries(par),
    colorTrc: codecpar.colorTrc(par),
    colorSpace: codecpar.colorSpace(par),
    chromaLocation: codecpar.chromaLocation(par),
    sampleAspectRatio: codecpar.sampleAspectRatio(par),
    extradata: codecpar.extradata(par),
  };
}

/** Stream duration in seconds, falling back to the container's. */
export function streamDurationSec(fmt: Ptr, st: Ptr): number | null {
  const own = secondsOrNull(stream.duration(st), stream.timeBase(st));
  if (own !== null && own > 0) return own;
  const d = formatContext.duration(fmt);
  return d === null ? null : Number(d) / 1e6;
}

/** A stream's pixel aspect ratio as `av_guess_sample_aspect_ratio` finds it: the container's, else the codec's, else 1:1. */
function sampleAspectRatio(st: Ptr): [number, number] {
  for (const r of [stream.sampleAspectRatio(st), codecpar.sampleAspectRatio(stream.codecpar(st))]) {
    if (r[0] > 0 && r[1] > 0) return r;
  }
  return [1, 1];
}

function videoInfo(src: MediaSource, index: number): VideoStreamInfo {
  const fmt = src.fmt;
  const st = formatContext.stream(fmt, index);
  const par = stream.codecpar(st);
  const codecId = codecpar.codecId(par);
  const format = codecpar.format(par);
  const pix = format >= 0 ? pixelFormatInfo(format) : null;
  const rate = streamFrameRate(st);
  const nb = stream.nbFrames(st);
  const tb = stream.timeBase(st);
  return {
    index,
    codec: codecName(codecId),
    profile: readCString(ffmpeg().avcodec.avcodec_profile_name(codecId, codecpar.profile(par))),
    width: codecpar.width(par),
    height: codecpar.height(par),
    sampleAspectRatio: sampleAspectRatio(st),
    pixelFormat: pix?.name ?? null,
    bitDepth: pix?.bitDepth ?? Math.max(0, codecpar.bitsPerRawSample(par)),
    frameRate: rate[0] / rate[1],
    frameRateRational: rate,
    timeBase: tb,
    numFrames: nb > 0n ? Number(nb) : null,
    rotation: streamRotation(st),
    durationSec: streamDurationSec(fmt, st),
    startTimeSec: secondsOrNull(stream.startTime(st), tb) ?? 0,
  };
}

function audioInfo(src: MediaSource): AudioStreamInfo | null {
  const fmt = src.fmt;
  const index = ffmpeg().avformat.av_find_best_stream(fmt, 1, -1, -1, null, 0);
  if (index < 0) return null;
  const st = formatContext.stream(fmt, index);
  const par = stream.codecpar(st);
  return {
    index,
    codec: codecName(codecpar.codecId(par)),
    sampleRate: codecpar.sampleRate(par),
    timeBase: stream.timeBase(st),
    durationSec: streamDurationSec(fmt, st),
  };
}

function streamList(fmt: Ptr): StreamInfo[] {
  const out: StreamInfo[] = [];
  for (let i = 0; i < formatContext.nbStreams(fmt); i++) {
    const st = formatContext.stream(fmt, i);
    const par = stream.codecpar(st);
    const tb = stream.timeBase(st);
    out.push({
      index: stream.index(st),
      type: mediaType(par),
      codec: codecName(codecpar.codecId(par)),
      codecId: codecpar.codecId(par),
      timeBase: tb,
      durationSec: secondsOrNull(stream.duration(st), tb),
      startTimeSec: secondsOrNull(stream.startTime(st), tb),
      bitRate: Number(codecpar.bitRate(par)),
      isDefault: (stream.disposition(st) & AV_DISPOSITION_DEFAULT) !== 0,
      attachedPic: (stream.disposition(st) & AV_DISPOSITION_ATTACHED_PIC) !== 0,
    });
  }
  return out;
}

/** Presentation times of every keyframe packet of stream `index`, ascending (reads the whole file, no decode). */
function keyframeTimes(src: MediaSource, index: number): number[] {
  const fmt = src.fmt;
  const tb = stream.timeBase(formatContext.stream(fmt, index));
  const times: number[] = [];
  using pkt = new Packet();
  for (;;) {
    const rc = readFrame(fmt, pkt.ptr);
    if (rc < 0) break; // EOF or damage past the header: report what was read
    if (packet.streamIndex(pkt.ptr) === index && packet.flags(pkt.ptr) & AV_PKT_FLAG_KEY) {
      const t = packet.pts(pkt.ptr) ?? packet.dts(pkt.ptr);
      if (t !== null) times.push(ptsToSeconds(t, tb));
    }
    pkt.unref();
  }
  return times.sort((a, b) => a - b);
}

/** Synchronous {@link probe}, for callers already inside a Worker. */
export function probeSync(src: MediaInput, opts: ProbeOptions = {}): MediaInfo {
  using source = MediaSource.open(src);
  const fmt = source.fmt;
  const hasVideo = formatContext.nbStreams(fmt) > 0 &&
    streamList(fmt).some((s) => s.type === "video");
  let index = hasVideo || opts.streamIndex !== undefined
    ? selectVideoStream(source, opts.streamIndex, "probe")
    : -1;
  const mode = opts.streamInfo ?? "auto";
  const incomplete = index >= 0 && headerIncomplete(formatContext.stream(fmt, index), true);
  if (mode === "always" || (mode === "auto" && (incomplete || formatContext.nbStreams(fmt) === 0))) {
    source.findStreamInfo();
    if (index < 0 && streamList(fmt).some((s) => s.type === "video")) {
      index = selectVideoStream(source, opts.streamIndex, "probe");
    }
  }
  const startTime = formatContext.startTime(fmt);
  const duration = formatContext.duration(fmt);
  const video = index >= 0 ? videoInfo(source, index) : null;
  const info: MediaInfo = {
    format: formatContext.formatName(fmt),
    durationSec: duration === null ? null : Number(duration) / 1e6,
    startTimeSec: startTime === null ? 0 : Number(startTime) / 1e6,
    bitRate: Number(formatContext.bitRate(fmt)),
    video,
    audio: audioInfo(source),
    streams: streamList(fmt),
  };
  if (video && opts.keyframes) video.keyframeTimes = keyframeTimes(source, index);
  return info;
}

/**
 * Describes a media file or in-memory bytes: its container, duration and streams, as ffprobe does. The work
 * is synchronous FFI; the Promise is for API symmetry.
 * @param src a path or the file's bytes
 * @param opts which video stream, and whether to list its keyframe times ({@link ProbeOptions})
 * @returns the container's and each stream's description
 * @throws {MediaError} (rejects) naming the source, the operation and FFmpeg's message, for missing, empty or
 *   unreadable input
 * @example
 * ```ts
 * import { probe } from "@sluice/sluice/media";
 * const info = await probe("clip.mp4");
 * console.log(info.durationSec, info.video?.codec);
 * ```
 */
export function probe(src: MediaInput, opts: ProbeOptions = {}): Promise<MediaInfo> {
  return settle(() => probeSync(src, opts));
}
