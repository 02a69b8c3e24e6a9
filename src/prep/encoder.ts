/**
 * `VideoEncoder`: one libavcodec video encoder (H.264, VP9 or AV1) fed 8-bit 4:2:0 frames that the caller writes
 * straight into the encoder's own `AVFrame` planes, with a fixed keyframe interval (a keyframe exactly every
 * `gop` frames: scene-cut keyframes are turned off so that subclip seeking costs the same everywhere).
 *
 * Encoders are looked up by name in the order of {@link ENCODERS}; a codec with none installed fails with an
 * {@link EncoderNotFoundError} that names the encoders tried and the Debian package that provides each.
 * Options go through `av_opt_set*` (no struct field writes beyond the size, pixel format and time bases that
 * have no option).
 * @module
 */

import { AVERROR_EAGAIN, AVERROR_EOF } from "../../ffi/ffmpeg/errors.ts";
import { cstr } from "../../ffi/cstring.ts";
import { CodecContext, Frame, Packet } from "../media/av_objects.ts";
import { check, errorText, ffmpeg } from "../media/ffmpeg.ts";
import { pixFmtId } from "../media/scale.ts";
import { codecContext, frame as avframe, type Ptr, type Rational } from "../media/structs.ts";
import { EncoderNotFoundError, InvalidArgumentError, MediaError } from "../errors.ts";

/** Codecs `transcode` writes. */
export type TargetCodec = "h264" | "vp9" | "av1";

/** Every {@link TargetCodec}, for validating input. */
export const TARGET_CODECS: readonly TargetCodec[] = ["h264", "vp9", "av1"];

/** One encoder sluice can drive, and how to get it. */
export interface EncoderSpec {
  /** libavcodec's name for it. */
  name: string;
  /** The Debian/Ubuntu package with the library FFmpeg links for it. */
  debianPackage: string;
  /** The FFmpeg `configure` switch that builds it in. */
  configure: string;
  /** Constant-quality value used when `crf` is not given. */
  defaultCrf: number;
}

/** Encoders per codec, in order of preference (SVT-AV1 before libaom: several times faster at similar quality). */
export const ENCODERS: Record<TargetCodec, readonly EncoderSpec[]> = {
  h264: [{ name: "libx264", debianPackage: "libx264-164", configure: "--enable-libx264", defaultCrf: 23 }],
  vp9: [{ name: "libvpx-vp9", debianPackage: "libvpx7", configure: "--enable-libvpx", defaultCrf: 32 }],
  av1: [
    { name: "libsvtav1", debianPackage: "libsvtav1enc1", configure: "--enable-libsvtav1", defaultCrf: 35 },
    { name: "libaom-av1", debianPackage: "libaom3", configure: "--enable-libaom", defaultCrf: 32 },
  ],
};

/** Options of a {@link VideoEncoder}. */
export interface EncoderOptions {
  codec: TargetCodec;
  /** Frame size in pixels; both even (4:2:0). */
  width: number;
  height: number;
  /** Frames per second (a rational is derived: 29.97 becomes 30000/1001). */
  fps: number;
  /** Keyframe interval in frames. */
  gop: number;
  /** Constant-quality factor (lower is better; default per encoder, see {@link ENCODERS}). */
  crf?: number;
  /** Encoder speed preset: "fast" (default), "medium" or "slow"; mapped to each encoder's own scale. */
  speed?: EncoderSpeed;
  /** Encoder threads (default 1: `transcode` runs one encoder per Worker). */
  threads?: number;
  /** Use this encoder (a name from {@link ENCODERS}) instead of the first installed one. */
  encoder?: string;
}

/** Speed presets of {@link EncoderOptions.speed}. */
export type EncoderSpeed = "fast" | "medium" | "slow";

const AV_OPT_SEARCH_CHILDREN = 1;
const AV_PIX_FMT_YUV420P = 0;

/** The first installed encoder for `codec` (or the one named), or an {@link EncoderNotFoundError}. */
export function findEncoder(codec: TargetCodec, name?: string): { spec: EncoderSpec; codec: Ptr } {
  const specs = ENCODERS[codec];
  if (specs === undefined) {
    throw new InvalidArgumentError(`codec must be one of ${TARGET_CODECS.join(", ")}, got "${codec}"`);
  }
  const wanted = name === undefined ? specs : specs.filter((s) => s.name === name);
  if (wanted.length === 0) {
    throw new InvalidArgumentError(
      `encoder "${name}" does not write ${codec}; choose one of ${specs.map((s) => s.name).join(", ")}`,
    );
  }
  const { avcodec, dir } = ffmpeg();
  for (const spec of wanted) {
    const ptr = avcodec.avcodec_find_encoder_by_name(cstr(spec.name));
    if (ptr !== null) return { spec, codec: ptr };
  }
  throw new EncoderNotFoundError(codec, wanted, dir);
}

/** `fps` as a rational: integers exactly, NTSC rates as n·1000/1001, others to a millisecond. */
export function fpsRational(fps: number): Rational {
  if (!(fps > 0) || !Number.isFinite(fps)) throw new InvalidArgumentError(`fps must be positive, got ${fps}`);
  if (Number.isInteger(fps)) return [fps, 1];
  const ntsc = Math.round(fps * 1.001);
  if (Math.abs(ntsc / 1.001 - fps) < 1e-3) return [ntsc * 1000, 1001];
  return [Math.round(fps * 1000), 1000];
}

/** Writable views of one 4:2:0 frame's planes (Y, U, V), rows `stride` bytes apart. */
export interface FramePlanes {
  planes: { data: Uint8Array; width: number; height: number; stride: number }[];
}

/**
 * An opened encoder with its reusable frame and packet. Frames are numbered by the caller (`pts` in units of
 * `1/fps`); packets come back through {@link VideoEncoder.drain} with timestamps in those units.
 */
export class VideoEncoder implements Disposable {
  /** The encoder in use, e.g. "libx264". */
  readonly name: string;
  /** The encoder's time base: one tick per frame. */
  readonly timeBase: Rational;
  readonly width: number;
  readonly height: number;
  readonly #label: string;
  readonly #ctx: CodecContext;
  readonly #frame = new Frame();
  readonly #pkt = new Packet();

  /** Opens the encoder for `label` (the output file, for messages). */
  constructor(opts: EncoderOptions, label: string) {
    const bad = (what: string) => new InvalidArgumentError(`${label}: encoder: ${what}`);
    for (const k of ["width", "height", "gop"] as const) {
      if (!Number.isInteger(opts[k]) || opts[k] < 1) {
        throw bad(`${k} must be a positive integer, got ${opts[k]}`);
      }
    }
    if (opts.width % 2 || opts.height % 2) {
      throw bad(`4:2:0 needs an even size, got ${opts.width}x${opts.height}`);
    }
    const { spec, codec } = findEncoder(opts.codec, opts.encoder);
    // SVT-AV1 logs its configuration to stderr itself (not through av_log) unless told otherwise.
    if (spec.name === "libsvtav1" && Deno.env.get("SVT_LOG") === undefined) Deno.env.set("SVT_LOG", "1");
    this.name = spec.name;
    this.width = opts.width;
    this.height = opts.height;
    this.#label = label;
    const rate = fpsRational(opts.fps);
    this.timeBase = [rate[1], rate[0]];
    try {
      this.#ctx = new CodecContext(codec);
      this.#configure(spec, opts, rate);
      check(ffmpeg().avcodec.avcodec_open2(this.#ctx.ptr, codec, null), label, `avcodec_open2(${spec.name})`);
      avframe.setVideoFormat(this.#frame.ptr, opts.width, opts.height, AV_PIX_FMT_YUV420P);
      check(ffmpeg().avutil.av_frame_get_buffer(this.#frame.ptr, 0), label, "av_frame_get_buffer");
    } catch (e) {
      this[Symbol.dispose]();
      throw e;
    }
  }

  #configure(spec: EncoderSpec, opts: EncoderOptions, rate: Rational): void {
    const ctx = this.#ctx.ptr;
    codecContext.setSize(ctx, opts.width, opts.height);
    codecContext.setPixFmt(ctx, pixFmtId("yuv420p"));
    codecContext.setTimeBase(ctx, this.timeBase);
    codecContext.setFramerate(ctx, rate);
    const crf = opts.crf ?? spec.defaultCrf;
    const speed = opts.speed ?? "fast";
    const gop = opts.gop;
    this.#setInt("g", gop);
    this.#setInt("keyint_min", gop);
    this.#setInt("threads", opts.threads ?? 1);
    // MP4 wants codec configuration in the stream header (avcC, vpcC, av1C), not repeated in-band only.
    this.#set("flags", "+global_header");
    // Square pixels, said in the stream (the size already holds the display aspect ratio).
    this.#set("aspect", "1:1");
    switch (spec.name) {
      case "libx264":
        this.#set("preset", { fast: "veryfast", medium: "medium", slow: "slow" }[speed]);
        this.#set("crf", String(crf));
        this.#set("x264-params", `keyint=${gop}:min-keyint=${gop}:scenecut=0`);
        break;
      case "libvpx-vp9":
        this.#setInt("b", 0); // constant quality: crf alone
        this.#set("crf", String(crf));
        this.#set("deadline", "good");
        this.#set("cpu-used", { fast: "5", medium: "3", slow: "1" }[speed]);
        break;
      case "libsvtav1":
        this.#set("preset", { fast: "10", medium: "7", slow: "4" }[speed]);
        this.#set("crf", String(crf));
        break;
      case "libaom-av1":
        this.#setInt("b", 0);
        this.#set("crf", String(crf));
        this.#set("cpu-used", { fast: "8", medium: "5", slow: "3" }[speed]);
        break;
    }
  }

  #set(name: string, value: string): void {
    const rc = ffmpeg().avutil.av_opt_set(this.#ctx.ptr, cstr(name), cstr(value), AV_OPT_SEARCH_CHILDREN);
    check(rc, this.#label, `av_opt_set(${name}=${value})`);
  }

  #setInt(name: string, value: number): void {
    const rc = ffmpeg().avutil.av_opt_set_int(
      this.#ctx.ptr,
      cstr(name),
      BigInt(value),
      AV_OPT_SEARCH_CHILDREN,
    );
    check(rc, this.#label, `av_opt_set_int(${name}=${value})`);
  }

  /** The opened codec context (for `avcodec_parameters_from_context`). */
  get context(): Ptr {
    return this.#ctx.ptr;
  }

  /**
   * The frame to fill next: writable views of its Y, U and V planes (the encoder may still hold the previous
   * frame's buffers, so a fresh buffer is made when needed).
   */
  nextFrame(): FramePlanes {
    const f = this.#frame.ptr;
    check(ffmpeg().avutil.av_frame_make_writable(f), this.#label, "av_frame_make_writable");
    const cw = this.width / 2, ch = this.height / 2;
    const dims = [[this.width, this.height], [cw, ch], [cw, ch]];
    return {
      planes: dims.map(([width, height], i) => {
        const stride = avframe.linesize(f, i);
        const data = new Uint8Array(
          Deno.UnsafePointerView.getArrayBuffer(avframe.data(f, i)!, stride * height),
        );
        return { data, width, height, stride };
      }),
    };
  }

  /** Sends the frame filled after {@link VideoEncoder.nextFrame} with presentation time `pts` (frames). */
  send(pts: number, onPacket: (pkt: Ptr) => void): void {
    avframe.setPts(this.#frame.ptr, BigInt(pts));
    this.#sendAndDrain(this.#frame.ptr, onPacket);
  }

  /** Flushes the encoder: every packet it still holds goes to `onPacket`. */
  finish(onPacket: (pkt: Ptr) => void): void {
    this.#sendAndDrain(null, onPacket);
  }

  #sendAndDrain(f: Ptr | null, onPacket: (pkt: Ptr) => void): void {
    const { avcodec } = ffmpeg();
    const rc = avcodec.avcodec_send_frame(this.#ctx.ptr, f);
    if (rc < 0) throw new MediaError(this.#label, `avcodec_send_frame(${this.name})`, errorText(rc), rc);
    for (;;) {
      const r = avcodec.avcodec_receive_packet(this.#ctx.ptr, this.#pkt.ptr);
      if (r === AVERROR_EAGAIN || r === AVERROR_EOF) return;
      check(r, this.#label, `avcodec_receive_packet(${this.name})`);
      try {
        onPacket(this.#pkt.ptr);
      } finally {
        this.#pkt.unref();
      }
    }
  }

  /** Frees the codec context, frame and packet. */
  [Symbol.dispose](): void {
    this.#ctx?.[Symbol.dispose]();
    this.#frame[Symbol.dispose]();
    this.#pkt[Symbol.dispose]();
  }
}
