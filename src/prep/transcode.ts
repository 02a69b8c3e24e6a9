/**
 * `transcodeVideoSync`: one video re-encoded at the resolution a model trains at.
 * @module
 */

import { type DecodeOptions, decodeVideoSync } from "../media/decode.ts";
import { demuxVideoSync } from "../media/demux.ts";
import type { VideoFrames } from "../media/frames.ts";
import { orientedSize, orientPlane, quarterTurns } from "../media/orient.ts";
import { type MediaInfo, probeSync, type VideoStreamInfo } from "../media/probe.ts";
import { type MediaInput, sourceLabel } from "../media/source.ts";
import { AV_PKT_FLAG_KEY, packet, type Ptr } from "../media/structs.ts";
import { InvalidArgumentError, MediaError } from "../errors.ts";
import { AudioCopier } from "./audio_copy.ts";
import { type EncoderSpeed, type TargetCodec, VideoEncoder } from "./encoder.ts";
import { Muxer } from "./muxer.ts";

/** What to make of a video. */
export interface TranscodeOptions {
  /** Output height in pixels, after rotation (even). */
  height: number;
  /** Output frames per second. */
  fps: number;
  /** Output codec. */
  codec: TargetCodec;
  /** Keyframe interval in frames. */
  gop: number;
  /** Constant-quality factor (default per encoder). */
  crf?: number;
  /** Encoder speed preset (default "fast"). */
  speed?: EncoderSpeed;
  /** A specific encoder for `codec` (default: the first installed, see `ENCODERS`). */
  encoder?: string;
  /** Copy the best audio stream unchanged (default false: audio is dropped). */
  audio?: boolean;
  /** Start of the part of the source to transcode, seconds (default: its start). */
  start?: number;
  /** End of that part, seconds (default: the source's end). */
  end?: number;
  /** Source seconds decoded per step (default 10); bounds memory for long videos. */
  chunkSec?: number;
}

/** What was written. */
export interface TranscodeResult {
  /** The encoder used, e.g. "libx264". */
  encoder: string;
  /** Output width in pixels. */
  width: number;
  /** Output height in pixels. */
  height: number;
  /** Output frames per second. */
  fps: number;
  /** Frames written. */
  frames: number;
  /** `frames / fps` seconds. */
  durationSec: number;
  /** Presentation times (seconds, ascending) of the keyframes written. */
  keyframes: number[];
  /** The source's display rotation, now applied to the pixels. */
  rotation: number;
  /** True when an audio stream was copied. */
  audio: boolean;
  /** Source packets the decoder rejected (their frames were replaced by neighbours). */
  corruptPackets: number;
}

/**
 * Output size for a `codedWidth`×`codedHeight` source of pixels `sampleAspectRatio` wide (`[num, den]`, as
 * probed), shown turned by `rotation`: `height` high, the width keeping the display aspect ratio, rounded to the
 * nearest even number (at least 2). The output's pixels are square: a 720×480 MPEG-2 frame of 16:9 (pixels
 * 32:27) becomes 228×128, where `scale=-2:128` would give 192×128 and leave the stretch to its SAR.
 * @param codedWidth the source's coded width
 * @param codedHeight the source's coded height
 * @param rotation the display rotation, degrees
 * @param height the output height
 * @param sampleAspectRatio the source's pixel aspect ratio, `[num, den]` as probed (default square)
 * @returns the output's width and height
 */
export function outputSize(
  codedWidth: number,
  codedHeight: number,
  rotation: number,
  height: number,
  sampleAspectRatio: readonly [number, number] = [1, 1],
): [number, number] {
  const [num, den] = sampleAspectRatio;
  const sar = num > 0 && den > 0 ? num / den : 1;
  const [dw, dh] = orientedSize(codedWidth * sar, codedHeight, rotation);
  return [Math.max(2, 2 * Math.round((height * dw) / dh / 2)), height];
}

/** Checks the numbers of {@link TranscodeOptions}; throws {@link InvalidArgumentError} naming the bad one. */
export function validateTranscodeOptions(o: TranscodeOptions): void {
  const bad = (what: string) => new InvalidArgumentError(`transcode: ${what}`);
  if (!Number.isInteger(o.height) || o.height < 2 || o.height % 2) {
    throw bad(`height must be an even integer >= 2, got ${o.height}`);
  }
  if (!(o.fps > 0) || !Number.isFinite(o.fps)) throw bad(`fps must be a positive number, got ${o.fps}`);
  if (!Number.isInteger(o.gop) || o.gop < 1) throw bad(`gop must be a positive integer, got ${o.gop}`);
  if (o.crf !== undefined && !(o.crf >= 0 && o.crf <= 63)) throw bad(`crf must be in 0..63, got ${o.crf}`);
  if (o.chunkSec !== undefined && !(o.chunkSec > 0)) {
    throw bad(`chunkSec must be positive, got ${o.chunkSec}`);
  }
  if (o.start !== undefined && o.end !== undefined && !(o.end > o.start)) {
    throw bad(`end ${o.end} must be after start ${o.start}`);
  }
}

/** What a transcode makes of its source, worked out from the probe before anything is written. */
interface TranscodePlan {
  /** The source as errors name it. */
  label: string;
  /** The source's streams. */
  info: MediaInfo;
  /** The source's video stream. */
  video: VideoStreamInfo;
  /** The source's display rotation, in quarter turns. */
  rotation: 0 | 90 | 180 | 270;
  /** Output width in pixels. */
  width: number;
  /** Output height in pixels. */
  height: number;
  /** First source second transcoded. */
  origin: number;
  /** Source second it ends at (null: the source has no duration, so it is decoded whole). */
  end: number | null;
  /** How each chunk is decoded: coded orientation, at the size that becomes the output's once turned. */
  decode: DecodeOptions;
}

/**
 * Probes the source and plans its transcode: the output's size, the decode size, the range.
 * @throws {MediaError} naming the source when it has no video stream or the range is empty
 */
function planTranscode(src: MediaInput, opts: TranscodeOptions): TranscodePlan {
  const label = sourceLabel(src);
  const info = probeSync(src);
  const v = info.video;
  if (v === null) throw new MediaError(label, "transcode", "the input has no video stream");
  const rotation = quarterTurns(v.rotation);
  const [outW, outH] = outputSize(v.width, v.height, rotation, opts.height, v.sampleAspectRatio);
  // Decode in coded orientation at the size that becomes outW×outH once turned.
  const [decW, decH] = orientedSize(outW, outH, rotation);
  const origin = opts.start ?? v.startTimeSec;
  const streamEnd = v.durationSec === null ? null : v.startTimeSec + v.durationSec;
  const end = opts.end === undefined
    ? streamEnd
    : streamEnd === null
    ? opts.end
    : Math.min(opts.end, streamEnd);
  if (end !== null && !(end > origin)) {
    throw new MediaError(label, "transcode", `nothing to transcode: range [${origin}, ${end}) is empty`);
  }
  const decode = { width: decW, height: decH, pixelFormat: "yuv420p" as const, frameRate: opts.fps };
  return { label, info, video: v, rotation, width: outW, height: outH, origin, end, decode };
}

/** The encoder's side of a transcode: frames go in turned, packets come out into the muxer, keyframes noted. */
class FrameFeed {
  /** Presentation times (seconds) of the keyframes written, in the order the encoder gave them. */
  readonly keyframes: number[] = [];
  /** Frames sent to the encoder. */
  written = 0;
  readonly #enc: VideoEncoder;
  readonly #rotation: 0 | 90 | 180 | 270;
  readonly #onPacket: (pkt: Ptr) => void;

  constructor(enc: VideoEncoder, mux: Muxer, stream: number, rotation: 0 | 90 | 180 | 270) {
    this.#enc = enc;
    this.#rotation = rotation;
    const tick = enc.timeBase[0] / enc.timeBase[1];
    this.#onPacket = (pkt: Ptr) => {
      if (packet.flags(pkt) & AV_PKT_FLAG_KEY) this.keyframes.push(Number(packet.pts(pkt) ?? 0n) * tick);
      mux.write(stream, pkt, 1n);
    };
  }

  /** Encodes frame `i` of `frames`, turned. */
  put(frames: VideoFrames, i: number): void {
    copyFrame(frames, i, this.#enc, this.#rotation);
    this.#enc.send(this.written++, this.#onPacket);
  }

  /** Encodes the encoder's frame again: it still holds the last picture. */
  repeat(): void {
    this.#enc.send(this.written++, this.#onPacket);
  }

  /** Drains the encoder into the muxer. */
  finish(): void {
    this.#enc.finish(this.#onPacket);
  }
}

/** Decodes the whole stream in one step (FFmpeg fps-filter semantics) into `feed`; returns the packets rejected. */
function feedWhole(src: MediaInput, plan: TranscodePlan, feed: FrameFeed): number {
  const [packets] = demuxVideoSync(src);
  const frames = decodeVideoSync(packets, plan.decode);
  for (let i = 0; i < frames.pts.length; i++) feed.put(frames, i);
  return frames.failedPackets;
}

/**
 * Decodes the range `[plan.origin, end)` a chunk of about `chunkSec` seconds at a time into `feed`, copying the
 * audio up to each chunk's end; returns the packets the decoder rejected.
 */
function feedChunks(
  src: MediaInput,
  plan: TranscodePlan & { end: number },
  opts: TranscodeOptions,
  feed: FrameFeed,
  audio: AudioCopier | null,
): number {
  const { origin, end } = plan;
  let corrupt = 0;
  const total = Math.ceil((end - origin) * opts.fps - 1e-9);
  const perChunk = Math.max(1, Math.round((opts.chunkSec ?? 10) * opts.fps));
  for (let first = 0; first < total; first += perChunk) {
    const want = Math.min(perChunk, total - first);
    const s = origin + first / opts.fps;
    const e = Math.min(origin + (first + perChunk) / opts.fps, end);
    const [packets] = demuxVideoSync(src, { window: [s, e] });
    const frames = decodeVideoSync(packets, plan.decode);
    corrupt += frames.failedPackets;
    const got = Math.min(want, frames.pts.length);
    for (let i = 0; i < got; i++) feed.put(frames, i);
    // A window with fewer frames (a gap in a variable-rate source): the encoder's frame still holds the
    // last picture, which is what the missing slots show.
    if (feed.written > 0) { for (let i = got; i < want; i++) feed.repeat(); }
    audio?.copyUntil(e);
  }
  return corrupt;
}

/**
 * Re-encodes one video at the spatial and temporal resolution a model trains at, so the
 * loader decodes no pixel it will throw away: `height` pixels high (width from the display aspect ratio, the
 * source's pixel aspect ratio included, rounded to an even number; the output's pixels are square), `fps` frames
 * per second, a keyframe exactly every `gop` frames, display rotation applied to the pixels (the output has none
 * left to apply), audio dropped unless asked for (then copied unchanged).
 *
 * The source is read in chunks of about `chunkSec` seconds (a window each, through `demuxVideoSync` and
 * `decodeVideoSync` with `frameRate`, the frame selection the loader's clips use: output frame `k` shows what
 * the loader's clip starting at the source's start would show at frame position `k`), so memory stays bounded for any
 * length. Pixels are turned with `orientPlane` and fed straight into the encoder's frame.
 * @param src the source video: a path, or its bytes
 * @param dst the file to write
 * @param opts height, frame rate, codec, keyframe interval and the rest of {@link TranscodeOptions}
 * @returns the encoder used, the output's size, rate, frames, duration and keyframe times
 * @throws {MediaError} naming `src`, when it cannot be read or encoded
 * @throws {InvalidArgumentError} for an option out of range
 */
export function transcodeVideoSync(src: MediaInput, dst: string, opts: TranscodeOptions): TranscodeResult {
  validateTranscodeOptions(opts);
  const plan = planTranscode(src, opts);
  const { info, origin, end } = plan;
  using enc = new VideoEncoder(
    {
      codec: opts.codec,
      width: plan.width,
      height: plan.height,
      fps: opts.fps,
      gop: opts.gop,
      crf: opts.crf,
      speed: opts.speed,
      encoder: opts.encoder,
    },
    dst,
  );
  using mux = new Muxer(dst);
  const video = mux.addEncoderStream(enc.context, enc.timeBase);
  using audio = opts.audio && info.audio !== null
    ? new AudioCopier(src, info.audio.index, origin, end ?? Infinity)
    : null;
  if (audio) audio.attach(mux, mux.addStream(audio.codecParameters, audio.timeBase));
  mux.open();

  const feed = new FrameFeed(enc, mux, video, plan.rotation);
  const corrupt = end === null
    ? feedWhole(src, plan, feed)
    : feedChunks(src, { ...plan, end }, opts, feed, audio);
  if (feed.written === 0) throw new MediaError(plan.label, "transcode", "no frame could be decoded");
  feed.finish();
  audio?.copyUntil(Infinity);
  mux.finish();
  return {
    encoder: enc.name,
    width: plan.width,
    height: plan.height,
    fps: opts.fps,
    frames: feed.written,
    durationSec: feed.written / opts.fps,
    keyframes: feed.keyframes.sort((a, b) => a - b),
    rotation: plan.video.rotation,
    audio: audio !== null,
    corruptPackets: corrupt,
  };
}

/** Copies frame `i` of `frames` (tight yuv420p, coded orientation) into the encoder's next frame, turned. */
function copyFrame(frames: VideoFrames, i: number, enc: VideoEncoder, rotation: 0 | 90 | 180 | 270): void {
  const dst = enc.nextFrame().planes;
  const base = i * frames.frameSize;
  frames.planes.forEach((p, k) => {
    const data = frames.data.subarray(base + p.offset, base + p.offset + p.stride * p.height);
    const src = { data, width: p.width, height: p.height, stride: p.stride, bytesPerPixel: 1 };
    const out = { ...dst[k], bytesPerPixel: 1 };
    if (rotation !== 0) return orientPlane(src, out, rotation);
    for (let y = 0; y < p.height; y++) {
      out.data.set(data.subarray(y * p.stride, y * p.stride + p.width), y * out.stride);
    }
  });
}

/**
 * {@link transcodeVideoSync} as a Promise (the work is synchronous FFI: run it in a Worker for parallelism).
 * @param src the source video: a path, or its bytes
 * @param dst the file to write
 * @param opts height, frame rate, codec, keyframe interval and the rest of {@link TranscodeOptions}
 * @returns what {@link transcodeVideoSync} returns
 */
export function transcodeVideo(
  src: MediaInput,
  dst: string,
  opts: TranscodeOptions,
): Promise<TranscodeResult> {
  try {
    return Promise.resolve(transcodeVideoSync(src, dst, opts));
  } catch (e) {
    return Promise.reject(e);
  }
}
