/**
 * The rules a `VideoPackets`' codec parameters must satisfy before they become FFmpeg state. Serialized packets
 * cross process boundaries (the backend child, files, later the network) and FFmpeg trusts what a demuxer
 * hands it: an `AVCodecContext` field out of range can select code that writes past a frame buffer (MPEG-2 with
 * `bits_per_raw_sample` 10 picks the 16-bit IDCT for 8-bit frames: heap corruption). Every field is checked
 * against what FFmpeg's own demuxers produce:
 *
 * - {@link codecParamsProblem}: ranges that need no FFmpeg (enums, sizes, rationals, lengths); the
 *   deserializer runs it and maps a problem to a `ProtocolError` at the field's byte offset.
 * - {@link checkCodecParams}: those plus the facts only the loaded FFmpeg knows (the codec id names a video
 *   codec of this build, the pixel format exists and is not a hardware format, bits per raw sample fit the
 *   pixel format and the codec's decoder); `writeCodecParameters` runs it before anything is copied.
 * - {@link codecParamsKey}: every field `writeCodecParameters` copies, for the decoder cache key.
 * @module
 */
import { readCString } from "../../ffi/cstring.ts";
import { MediaError } from "../errors.ts";
import { ffmpeg } from "./ffmpeg.ts";
import { type CodecParamsInit, pixelFormatInfo } from "./structs.ts";

/** What is checked: the fields written into `AVCodecParameters`, the extradata, and the codec's name. */
export type CheckedParams = CodecParamsInit & { codec: string; extradata: Uint8Array; source: string };

/** A field that breaks a rule, and why. */
export interface ParamsProblem {
  field: keyof CodecParamsInit | "codec" | "extradata";
  reason: string;
}

const INT32_MAX = 0x7fffffff;
/** `FF_PROFILE_UNKNOWN` / `FF_LEVEL_UNKNOWN`. */
const UNKNOWN = -99;
/**
 * `AV_CODEC_ID_FIRST_AUDIO`: every codec id below it (and above 0) is a video codec. This also keeps out the
 * pseudo-codecs above it that no demuxer produces, `wrapped_avframe` (0x21001) among them: its decoder takes the
 * bytes of a packet flagged `AV_PKT_FLAG_TRUSTED` for an `AVFrame` and follows its pointers.
 */
const FIRST_AUDIO_CODEC = 0x10000;
/** `AV_INPUT_BUFFER_PADDING_SIZE`: FFmpeg refuses extradata within this much of `INT_MAX`. */
const PADDING = 64;
/** Pixel format ids stay far below this in every FFmpeg release (about 230 in 7.1). */
const PIX_FMT_BOUND = 1024;
/** `AV_PIX_FMT_FLAG_HWACCEL`: a handle to GPU memory, never a demuxer's format. */
const PIX_FMT_FLAG_HWACCEL = 1 << 3;

/**
 * Enum fields and their `*_NB` bound, the largest across FFmpeg 5.1–7.x (values in between that a release
 * reserves are harmless: FFmpeg bounds-checks its name tables; a value outside the enum is not).
 */
const ENUMS = {
  fieldOrder: 6, // AVFieldOrder: UNKNOWN .. BT
  colorRange: 3, // AVCOL_RANGE_NB
  colorPrimaries: 23, // AVCOL_PRI_NB (EBU3213 = 22)
  colorTrc: 19, // AVCOL_TRC_NB
  colorSpace: 18, // AVCOL_SPC_NB in 7.1 (15 in 5.1)
  chromaLocation: 7, // AVCHROMA_LOC_NB
} as const satisfies Partial<Record<keyof CodecParamsInit, number>>;

/**
 * Decoders of FFmpeg 5.1–7.x that produce more than 8 bits per sample (by `avcodec_get_name`). Every other
 * decoder works at 8 bits, and several of them (MPEG-1/2, H.261/H.263, MSMPEG4, WMV, DV, ...) pick their IDCT from
 * `bits_per_raw_sample` alone: they get at most 8 bits and an 8-bit pixel format.
 */
const HIGH_DEPTH_CODECS = new Set([
  "012v",
  "apv",
  "av1",
  "avrp",
  "bitpacked",
  "cfhd",
  "cri",
  "dds",
  "dirac",
  "dnxhd",
  "dpx",
  "exr",
  "ffv1",
  "ffvhuff",
  "fits",
  "h264",
  "hdr",
  "hevc",
  "hqx",
  "huffyuv",
  "jpeg2000",
  "jpegls",
  "jpegxl",
  "magicyuv",
  "mjpeg",
  "mpeg4",
  "notchlc",
  "pam",
  "pfm",
  "pgm",
  "pgmyuv",
  "phm",
  "pixlet",
  "png",
  "apng",
  "ppm",
  "prores",
  "psd",
  "r10k",
  "r210",
  "rawvideo",
  "sgi",
  "tiff",
  "utvideo",
  "v210",
  "v210x",
  "v410",
  "vp9",
  "vvc",
]);

const isInt = (v: unknown, lo: number, hi: number): boolean =>
  typeof v === "number" && Number.isInteger(v) && v >= lo && v <= hi;

/** The first field of `p` outside the ranges FFmpeg's demuxers produce (no FFmpeg needed), or null. */
export function codecParamsProblem(p: CheckedParams): ParamsProblem | null {
  const bad = (field: ParamsProblem["field"], reason: string): ParamsProblem => ({ field, reason });
  if (!isInt(p.codecId, 1, FIRST_AUDIO_CODEC - 1)) {
    return bad("codecId", `${p.codecId} is not a video codec id`);
  }
  if (!isInt(p.codecTag, 0, 0xffffffff)) return bad("codecTag", `${p.codecTag} is not a 32-bit tag`);
  for (const f of ["width", "height"] as const) {
    if (!isInt(p[f], 0, INT32_MAX)) return bad(f, `${p[f]} is not a size`);
  }
  // av_image_check_size: what FFmpeg accepts as a picture size (0 means not known yet).
  if (p.width > 0 && p.height > 0 && (p.width + 128) * (p.height + 128) >= INT32_MAX / 8) {
    return bad("width", `${p.width}x${p.height} is larger than FFmpeg allows`);
  }
  if (!isInt(p.format, -1, PIX_FMT_BOUND)) return bad("format", `${p.format} is not a pixel format`);
  if (!isInt(p.bitsPerRawSample, 0, 32)) {
    return bad("bitsPerRawSample", `${p.bitsPerRawSample} is not a sample depth`);
  }
  for (const f of ["profile", "level"] as const) {
    if (!(p[f] === UNKNOWN || isInt(p[f], 0, 0xffff))) return bad(f, `${p[f]} is out of range`);
  }
  const sar = p.sampleAspectRatio;
  if (
    !Array.isArray(sar) || sar.length !== 2 || !isInt(sar[0], 0, INT32_MAX) || !isInt(sar[1], 0, INT32_MAX)
  ) {
    return bad("sampleAspectRatio", `${sar} is not a non-negative ratio`);
  }
  for (const [f, nb] of Object.entries(ENUMS) as [keyof typeof ENUMS, number][]) {
    if (!isInt(p[f], 0, nb - 1)) return bad(f, `${p[f]} is outside the enum (0..${nb - 1})`);
  }
  if (!(p.extradata instanceof Uint8Array) || p.extradata.length >= INT32_MAX - PADDING) {
    return bad("extradata", `${p.extradata?.length} bytes of extradata are more than FFmpeg takes`);
  }
  return null;
}

/**
 * Throws `MediaError` (operation "codec parameters", naming `p.source` and the field) unless every codec
 * parameter is one FFmpeg's demuxers produce and this FFmpeg can take. See the module docs.
 */
export function checkCodecParams(p: CheckedParams): void {
  const problem = codecParamsProblem(p) ?? nativeProblem(p);
  if (problem !== null) {
    throw new MediaError(p.source, "codec parameters", `${problem.field} ${problem.reason}`);
  }
}

function nativeProblem(p: CheckedParams): ParamsProblem | null {
  const name = readCString(ffmpeg().avcodec.avcodec_get_name(p.codecId));
  if (name === "unknown_codec") return { field: "codecId", reason: `${p.codecId} is unknown to this FFmpeg` };
  if (name !== p.codec) {
    return { field: "codec", reason: `"${p.codec}" is not codec id ${p.codecId} ("${name}")` };
  }
  let depth = 8, of = "an unknown pixel format";
  if (p.format !== -1) {
    const fmt = pixelFormatInfo(p.format);
    if (fmt === null) return { field: "format", reason: `${p.format} is not a pixel format of this FFmpeg` };
    if ((fmt.flags & PIX_FMT_FLAG_HWACCEL) !== 0) {
      return { field: "format", reason: `${fmt.name} is a hardware format` };
    }
    if (!HIGH_DEPTH_CODECS.has(name) && fmt.bitDepth > 8) {
      return {
        field: "format",
        reason: `${fmt.name} has ${fmt.bitDepth}-bit samples; FFmpeg decodes ${name} at 8`,
      };
    }
    depth = Math.max(8, fmt.bitDepth);
    of = fmt.name;
  }
  if (p.bitsPerRawSample > depth) {
    return { field: "bitsPerRawSample", reason: `${p.bitsPerRawSample} exceeds the ${depth} bits of ${of}` };
  }
  return null;
}

/** Every field {@link codecParamsKey} covers: exactly the fields `codecpar.setVideo` writes. */
const COPIED_FIELDS = {
  codecId: 0,
  codecTag: 0,
  format: 0,
  bitsPerRawSample: 0,
  profile: 0,
  level: 0,
  width: 0,
  height: 0,
  sampleAspectRatio: 0,
  fieldOrder: 0,
  colorRange: 0,
  colorPrimaries: 0,
  colorTrc: 0,
  colorSpace: 0,
  chromaLocation: 0,
} as const satisfies Record<keyof CodecParamsInit, 0>;
const COPIED = Object.keys(COPIED_FIELDS) as (keyof CodecParamsInit)[];

/** A string that differs whenever anything `writeCodecParameters` copies differs (extradata included). */
export function codecParamsKey(p: CodecParamsInit & { extradata: Uint8Array }): string {
  let key = COPIED.map((f) => String(p[f])).join("/");
  key += "/";
  for (const b of p.extradata) key += b.toString(16).padStart(2, "0");
  return key;
}
