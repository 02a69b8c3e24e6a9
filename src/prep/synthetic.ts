/**
 * Synthetic labelled videos, encoded in-process with prep's `VideoEncoder` (libx264 when the installed FFmpeg has
 * it, else VP9, else AV1; a keyframe exactly every `gop` frames) and muxed to MP4 by its `Muxer`: the one encode
 * path `transcode` uses too.
 *
 * Every frame carries its own ground truth as a 4×8 grid of big blocks that survives compression and resizing:
 * row 0 holds the label (8 bits), rows 1–2 the frame index (16 bits, high byte first), row 3 the check
 * `label ^ frameIndexLowByte ^ 0x5a` (so a flat bright or dark frame fails it). A bit is a bright (1) or dark (0) block; a moving low-amplitude texture and
 * moving chroma give the encoder and the decoder real work. {@link readPattern} reads the truth back from an
 * RGB24 frame of any size, so a test can check that a decoded, resized batch holds the label and the time range
 * the sampler asked for (frame index / fps).
 * @module
 */

import { ffmpeg } from "../media/ffmpeg.ts";
import type { Ptr } from "../media/structs.ts";
import { EncoderNotFoundError, InvalidArgumentError } from "../errors.ts";
import { ENCODERS, findEncoder, TARGET_CODECS, type TargetCodec, VideoEncoder } from "./encoder.ts";
import { Muxer } from "./muxer.ts";

/** Grid geometry of the pattern. */
export const PATTERN_ROWS = 4;
export const PATTERN_COLS = 8;

/** Options of {@link encodeSyntheticVideo}. */
export interface SyntheticVideoOptions {
  /** Class index stored in every frame (0–255). */
  label: number;
  /** Frames (default 100). */
  frames?: number;
  /** Frames per second (default 25). */
  fps?: number;
  /** Frame width in pixels, even (default 320). */
  width?: number;
  /** Frame height in pixels, even (default 240). */
  height?: number;
  /** Keyframe interval in frames (default: fps, one keyframe a second). */
  gop?: number;
  /** Encoder name, one of `ENCODERS` (default: {@link defaultEncoder}). */
  encoder?: string;
  /** Varies the texture between videos of the same label. */
  seed?: number;
}

/** The encoder {@link encodeSyntheticVideo} uses by default here: the first installed for H.264, VP9, AV1. */
export function defaultEncoder(): string {
  for (const codec of TARGET_CODECS) {
    try {
      return findEncoder(codec).spec.name;
    } catch (e) {
      if (!(e instanceof EncoderNotFoundError)) throw e;
    }
  }
  throw new EncoderNotFoundError("h264", ENCODERS.h264, ffmpeg().dir);
}

/** The 32 bits of the pattern for `label` and `frameIndex`, row-major (row 0 first, most significant bit first). */
export function patternBits(label: number, frameIndex: number): boolean[] {
  const lo = frameIndex & 0xff;
  const bytes = [label & 0xff, (frameIndex >> 8) & 0xff, lo, checkByte(label, lo)];
  const bits: boolean[] = [];
  for (const b of bytes) for (let k = 7; k >= 0; k--) bits.push(((b >> k) & 1) === 1);
  return bits;
}

/** Fills YUV 4:2:0 planes with the pattern of `label` / `frameIndex`. */
export function drawPattern(
  planes: { y: Uint8Array; u: Uint8Array; v: Uint8Array; strideY: number; strideC: number },
  width: number,
  height: number,
  label: number,
  frameIndex: number,
  seed = 0,
): void {
  const bits = patternBits(label, frameIndex);
  const bw = width / PATTERN_COLS, bh = height / PATTERN_ROWS;
  const phase = (frameIndex * 3 + seed * 17) % 40;
  for (let y = 0; y < height; y++) {
    const row = Math.min(PATTERN_ROWS - 1, Math.floor(y / bh));
    const line = planes.y.subarray(y * planes.strideY, y * planes.strideY + width);
    for (let x = 0; x < width; x++) {
      const on = bits[row * PATTERN_COLS + Math.min(PATTERN_COLS - 1, Math.floor(x / bw))];
      const texture = ((x * 3 + y * 5 + phase) % 40) - 20;
      line[x] = (on ? 200 : 50) + texture;
    }
  }
  const cw = width >> 1, ch = height >> 1;
  for (let y = 0; y < ch; y++) {
    const u = planes.u.subarray(y * planes.strideC, y * planes.strideC + cw);
    const v = planes.v.subarray(y * planes.strideC, y * planes.strideC + cw);
    for (let x = 0; x < cw; x++) {
      u[x] = 108 + ((x + frameIndex * 2 + seed) & 31);
      v[x] = 108 + ((y + frameIndex + seed * 3) & 31);
    }
  }
}

function checkByte(label: number, lo: number): number {
  return (label ^ lo ^ 0x5a) & 0xff;
}

/** What {@link readPattern} found in a frame. */
export interface PatternReading {
  /** The class index drawn in the frame. */
  label: number;
  /** The frame's index in its video (its time is `frameIndex / fps`). */
  frameIndex: number;
}

/**
 * Reads label and frame index back from one RGB24 frame (`width * height * 3` bytes starting at `offset`, or a
 * planar frame when `planeStride` is given: R, G, B planes `planeStride` bytes apart). Returns null when the check
 * row does not match (not a sluice pattern, or too damaged).
 * @param rgb the frame's bytes
 * @param width the frame's width
 * @param height the frame's height
 * @param offset where the frame starts in `rgb`
 * @param planeStride bytes between the R, G and B planes of a planar frame (none: packed RGB24)
 * @returns the label and frame index drawn in it, or null
 */
export function readPattern(
  rgb: Uint8Array,
  width: number,
  height: number,
  offset = 0,
  planeStride?: number,
): PatternReading | null {
  const bytes: number[] = [0, 0, 0, 0];
  for (let row = 0; row < PATTERN_ROWS; row++) {
    for (let col = 0; col < PATTERN_COLS; col++) {
      const luma = blockLuma(rgb, width, height, offset, planeStride, row, col);
      bytes[row] = (bytes[row] << 1) | (luma > 125 ? 1 : 0);
    }
  }
  const [label, hi, lo, check] = bytes;
  if (checkByte(label, lo) !== check) return null;
  return { label, frameIndex: (hi << 8) | lo };
}

function blockLuma(
  rgb: Uint8Array,
  width: number,
  height: number,
  offset: number,
  planeStride: number | undefined,
  row: number,
  col: number,
): number {
  const bw = width / PATTERN_COLS, bh = height / PATTERN_ROWS;
  const x0 = Math.floor(col * bw + bw * 0.3), x1 = Math.max(x0 + 1, Math.floor(col * bw + bw * 0.7));
  const y0 = Math.floor(row * bh + bh * 0.3), y1 = Math.max(y0 + 1, Math.floor(row * bh + bh * 0.7));
  let sum = 0, n = 0;
  for (let y = y0; y < y1; y++) {
    for (let x = x0; x < x1; x++) {
      let r: number, g: number, b: number;
      if (planeStride === undefined) {
        const i = offset + (y * width + x) * 3;
        r = rgb[i], g = rgb[i + 1], b = rgb[i + 2];
      } else {
        const i = offset + y * width + x;
        r = rgb[i], g = rgb[i + planeStride], b = rgb[i + 2 * planeStride];
      }
      sum += 0.299 * r + 0.587 * g + 0.114 * b;
      n++;
    }
  }
  return sum / n;
}

/**
 * Encodes one synthetic video to `path` (MP4) with prep's encoder and muxer: each frame shows its label and
 * its index as a pattern {@link readPattern} reads back.
 * @param path the file to write
 * @param opts label, frames, rate, size and encoder
 * @returns the encoder used
 */
export function encodeSyntheticVideo(path: string, opts: SyntheticVideoOptions): string {
  const frames = opts.frames ?? 100, fps = opts.fps ?? 25;
  const width = opts.width ?? 320, height = opts.height ?? 240;
  if (!Number.isInteger(opts.label) || opts.label < 0 || opts.label > 255) {
    throw new InvalidArgumentError(`synthetic video: label must be an integer in 0..255, got ${opts.label}`);
  }
  if (frames < 1 || frames > 65536) {
    throw new InvalidArgumentError(`synthetic video: frames must be 1..65536`);
  }
  if (width % 2 || height % 2) {
    throw new InvalidArgumentError(`synthetic video: width and height must be even`);
  }
  const name = opts.encoder ?? defaultEncoder();
  using enc = new VideoEncoder({
    codec: codecOf(name),
    encoder: name,
    width,
    height,
    fps,
    gop: opts.gop ?? fps,
  }, path);
  using mux = new Muxer(path);
  const video = mux.addEncoderStream(enc.context, enc.timeBase);
  mux.open();
  // Every packet lasts one frame (encoders may leave it 0, and MP4's edit list would then cut the last frame).
  const onPacket = (pkt: Ptr) => mux.write(video, pkt, 1n);
  for (let i = 0; i < frames; i++) {
    const [y, u, v] = enc.nextFrame().planes;
    const planes = { y: y.data, u: u.data, v: v.data, strideY: y.stride, strideC: u.stride };
    drawPattern(planes, width, height, opts.label, i, opts.seed ?? 0);
    enc.send(i, onPacket);
  }
  enc.finish(onPacket);
  mux.finish();
  return enc.name;
}

/** The codec an encoder of {@link ENCODERS} writes. */
function codecOf(encoder: string): TargetCodec {
  for (const codec of TARGET_CODECS) if (ENCODERS[codec].some((e) => e.name === encoder)) return codec;
  const names = TARGET_CODECS.flatMap((c) => ENCODERS[c].map((e) => e.name));
  throw new InvalidArgumentError(
    `synthetic video: encoder must be one of ${names.join(", ")}, got "${encoder}"`,
  );
}

/** Options of {@link makeSyntheticDataset}. */
export interface SyntheticDatasetOptions {
  /** Videos to write. */
  videos: number;
  /** Classes (1–256); video `n` has label `n mod classes`. */
  classes: number;
  /** Seconds per video (default 4). */
  durationSec?: number;
  /** Frames per second (default 25). */
  fps?: number;
  /** Frame size in pixels, even (default 320×240). */
  width?: number;
  /** See `width`. */
  height?: number;
  /** Encoder name, one of `ENCODERS` (default: {@link defaultEncoder}). */
  encoder?: string;
  /** Called after each video with (done, total). */
  onProgress?: (done: number, total: number) => void;
}

/**
 * Writes `dir/class_KK/video_NNNN.mp4` (video n has label n mod classes), a directory-tree dataset whose labels,
 * sorted by name, match the labels drawn in the frames (`sluice make-dataset` does the same).
 * @param dir the directory to write (created when missing)
 * @param opts how many videos and classes, their length, frame rate, size and encoder
 * @returns the paths written
 * @throws {EncoderNotFoundError} when the loaded FFmpeg has no encoder for the videos
 * @example A dataset to try the loader on
 * ```ts
 * import { makeSyntheticDataset, videoClassificationLoader } from "@sluice/sluice";
 *
 * const dir = await Deno.makeTempDir();
 * makeSyntheticDataset(dir, { videos: 8, classes: 2, durationSec: 2, width: 160, height: 120 });
 * await using loader = await videoClassificationLoader({
 *   dataset: dir,
 *   batchSize: 4,
 *   clip: { numFrames: 8, width: 64, height: 64 },
 * });
 * for await (using batch of loader) console.log(batch.labels);
 * ```
 */
export function makeSyntheticDataset(dir: string, opts: SyntheticDatasetOptions): string[] {
  if (!(opts.videos >= 1) || !(opts.classes >= 1) || opts.classes > 256) {
    throw new InvalidArgumentError(`make-dataset: need videos >= 1 and 1 <= classes <= 256`);
  }
  const fps = opts.fps ?? 25;
  const frames = Math.max(1, Math.round((opts.durationSec ?? 4) * fps));
  const paths: string[] = [];
  for (let n = 0; n < opts.videos; n++) {
    const label = n % opts.classes;
    const classDir = `${dir}/class_${
      String(label).padStart(Math.max(2, String(opts.classes - 1).length), "0")
    }`;
    Deno.mkdirSync(classDir, { recursive: true });
    const path = `${classDir}/video_${String(n).padStart(4, "0")}.mp4`;
    encodeSyntheticVideo(path, {
      label,
      frames,
      fps,
      width: opts.width,
      height: opts.height,
      encoder: opts.encoder,
      seed: n,
    });
    paths.push(path);
    opts.onProgress?.(n + 1, opts.videos);
  }
  return paths;
}
