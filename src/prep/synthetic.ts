/**
 * Synthetic labelled videos, encoded in-process through libavcodec (libx264 when the installed FFmpeg has it,
 * MPEG-4 part 2 otherwise) and muxed to MP4 through libavformat.
 *
 * Every frame carries its own ground truth as a 4×8 grid of big blocks that survives compression and resizing:
 * row 0 holds the label (8 bits), rows 1–2 the frame index (16 bits, high byte first), row 3 the check
 * `label ^ frameIndexLowByte ^ 0x5a` (so a flat bright or dark frame fails it). A bit is a bright (1) or dark (0) block; a moving low-amplitude texture and
 * moving chroma give the encoder and the decoder real work. {@link readPattern} reads the truth back from an
 * RGB24 frame of any size, so a test can check that a decoded, resized batch holds the label and the time range
 * the sampler asked for (frame index / fps).
 * @module
 */

import { OutSlot } from "../../ffi/out_slot.ts";
import { AVERROR_EAGAIN, AVERROR_EOF } from "../../ffi/ffmpeg/errors.ts";
import { cstr } from "../../ffi/cstring.ts";
import { CodecContext, Frame, Packet } from "../media/av_objects.ts";
import { check, ffmpeg } from "../media/ffmpeg.ts";
import { codecContext, formatContext, frame as frameFields, packet, stream } from "../media/structs.ts";
import { InvalidArgumentError, MediaError } from "../errors.ts";

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
  /** Encoder name (default: "libx264" if present, else "mpeg4"). */
  encoder?: string;
  /** Varies the texture between videos of the same label. */
  seed?: number;
}

const AV_PIX_FMT_YUV420P = 0;
const AVIO_FLAG_WRITE = 2;
const AV_OPT_SEARCH_CHILDREN = 1;

/** The encoder {@link encodeSyntheticVideo} uses by default here. */
export function defaultEncoder(): string {
  const { avcodec } = ffmpeg();
  return avcodec.avcodec_find_encoder_by_name(cstr("libx264")) !== null ? "libx264" : "mpeg4";
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

/** Encodes one synthetic video to `path` (MP4). Returns the encoder used. */
export function encodeSyntheticVideo(path: string, opts: SyntheticVideoOptions): string {
  const frames = opts.frames ?? 100, fps = opts.fps ?? 25;
  const width = opts.width ?? 320, height = opts.height ?? 240;
  const gop = opts.gop ?? fps;
  if (!Number.isInteger(opts.label) || opts.label < 0 || opts.label > 255) {
    throw new InvalidArgumentError(`synthetic video: label must be an integer in 0..255, got ${opts.label}`);
  }
  if (frames < 1 || frames > 65536) {
    throw new InvalidArgumentError(`synthetic video: frames must be 1..65536`);
  }
  if (width % 2 || height % 2) {
    throw new InvalidArgumentError(`synthetic video: width and height must be even`);
  }
  const { avcodec, avformat, avutil } = ffmpeg();
  const encoderName = opts.encoder ?? defaultEncoder();
  const codec = avcodec.avcodec_find_encoder_by_name(cstr(encoderName));
  if (codec === null) {
    throw new MediaError(path, "avcodec_find_encoder_by_name", `no encoder "${encoderName}"`);
  }

  using enc = new CodecContext(codec);
  codecContext.setSize(enc.ptr, width, height);
  codecContext.setPixFmt(enc.ptr, AV_PIX_FMT_YUV420P);
  codecContext.setTimeBase(enc.ptr, [1, fps]);
  codecContext.setFramerate(enc.ptr, [fps, 1]);
  check(avutil.av_opt_set_int(enc.ptr, cstr("g"), BigInt(gop), 0), path, "set gop");
  check(avutil.av_opt_set(enc.ptr, cstr("flags"), cstr("+global_header"), 0), path, "set global_header");
  if (encoderName === "libx264") {
    avutil.av_opt_set(enc.ptr, cstr("preset"), cstr("veryfast"), AV_OPT_SEARCH_CHILDREN);
    avutil.av_opt_set_int(enc.ptr, cstr("threads"), 1n, 0);
  } else {
    avutil.av_opt_set_int(enc.ptr, cstr("b"), 800_000n, 0);
  }
  check(avcodec.avcodec_open2(enc.ptr, codec, null), path, `avcodec_open2(${encoderName})`);

  const ctxSlot = new OutSlot();
  check(
    avformat.avformat_alloc_output_context2(ctxSlot.bytes, null, cstr("mp4"), cstr(path)),
    path,
    "alloc output",
  );
  const oc = ctxSlot.pointer as Deno.PointerObject;
  try {
    const st = avformat.avformat_new_stream(oc, null);
    if (st === null) throw new MediaError(path, "avformat_new_stream", "out of memory");
    check(
      avcodec.avcodec_parameters_from_context(stream.codecpar(st), enc.ptr),
      path,
      "parameters_from_context",
    );
    stream.setTimeBase(st, [1, fps]);
    const pbSlot = new OutSlot();
    check(avformat.avio_open(pbSlot.bytes, cstr(path), AVIO_FLAG_WRITE), path, "avio_open");
    formatContext.setPb(oc, pbSlot.pointer);
    try {
      check(avformat.avformat_write_header(oc, null), path, "avformat_write_header");
      const tb = stream.timeBase(st);
      using frame = new Frame();
      using pkt = new Packet();
      frameFields.setVideoFormat(frame.ptr, width, height, AV_PIX_FMT_YUV420P);
      check(avutil.av_frame_get_buffer(frame.ptr, 0), path, "av_frame_get_buffer");
      const write = () => drain(enc.ptr, pkt.ptr, oc, fps, tb, path);
      for (let i = 0; i < frames; i++) {
        check(avutil.av_frame_make_writable(frame.ptr), path, "av_frame_make_writable");
        drawPattern(planesOf(frame.ptr, height), width, height, opts.label, i, opts.seed ?? 0);
        frameFields.setPts(frame.ptr, BigInt(i));
        check(avcodec.avcodec_send_frame(enc.ptr, frame.ptr), path, "avcodec_send_frame");
        write();
      }
      check(avcodec.avcodec_send_frame(enc.ptr, null), path, "avcodec_send_frame(flush)");
      write();
      check(avformat.av_write_trailer(oc), path, "av_write_trailer");
    } finally {
      const pb = new OutSlot(formatContext.pb(oc)).bytes;
      avformat.avio_closep(pb);
      formatContext.setPb(oc, null);
    }
  } finally {
    avformat.avformat_free_context(oc);
  }
  return encoderName;
}

function planesOf(f: Deno.PointerObject, height: number) {
  const plane = (i: number, h: number) => {
    const p = frameFields.data(f, i) as Deno.PointerObject;
    return new Uint8Array(Deno.UnsafePointerView.getArrayBuffer(p, frameFields.linesize(f, i) * h));
  };
  return {
    y: plane(0, height),
    u: plane(1, height >> 1),
    v: plane(2, height >> 1),
    strideY: frameFields.linesize(f, 0),
    strideC: frameFields.linesize(f, 1),
  };
}

/**
 * Moves every ready packet from the encoder to the muxer, rescaling 1/fps timestamps to the stream's time base.
 * Every packet lasts one frame (encoders may leave it 0, and MP4's edit list would then cut the last frame).
 */
function drain(
  enc: Deno.PointerObject,
  pkt: Deno.PointerObject,
  oc: Deno.PointerObject,
  fps: number,
  tb: [number, number],
  path: string,
): void {
  const { avcodec, avformat } = ffmpeg();
  for (;;) {
    const r = avcodec.avcodec_receive_packet(enc, pkt);
    if (r === AVERROR_EAGAIN || r === AVERROR_EOF) return;
    check(r, path, "avcodec_receive_packet");
    const scale = (t: bigint | null) =>
      t === null ? null : (t * BigInt(tb[1])) / (BigInt(fps) * BigInt(tb[0]));
    packet.setTiming(pkt, scale(packet.pts(pkt)), scale(packet.dts(pkt)), scale(1n) ?? 0n, packet.flags(pkt));
    packet.setStreamIndex(pkt, 0);
    check(avformat.av_interleaved_write_frame(oc, pkt), path, "av_interleaved_write_frame");
  }
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
  /** Encoder name (default: "libx264" if present, else "mpeg4"). */
  encoder?: string;
  /** Called after each video with (done, total). */
  onProgress?: (done: number, total: number) => void;
}

/**
 * Writes `dir/class_KK/video_NNNN.mp4` (video n has label n mod classes), a directory-tree dataset whose labels,
 * sorted by name, match the labels drawn in the frames. Returns the paths written.
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
