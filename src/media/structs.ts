/**
 * Typed accessors for FFmpeg structs. The only module in `src/` that knows field offsets exist: it reads them
 * from the layout table of the loaded release (`ffi/ffmpeg/layouts.ts`). Everything else calls these.
 * @module
 */
import { AV_FRAME_FLAG_INTERLACED, AV_FRAME_FLAG_KEY, type FfmpegLayout } from "../../ffi/ffmpeg/layouts.ts";
import { ffmpeg } from "./ffmpeg.ts";
import type { CodecInfo } from "./packet_info.ts";

/** A non-null native pointer. */
export type Ptr = Deno.PointerObject;

function L(): FfmpegLayout {
  return ffmpeg().layout;
}

function view(p: Ptr): Deno.UnsafePointerView {
  return new Deno.UnsafePointerView(p);
}

/** A writable window onto `size` bytes of native memory at `p + offset`. */
function writable(p: Ptr, offset: number, size: number): DataView {
  return new DataView(Deno.UnsafePointerView.getArrayBuffer(p, size, offset));
}

/** A rational as `[num, den]`. */
export type Rational = [number, number];

function rational(p: Ptr, offset: number): Rational {
  const v = view(p);
  return [v.getInt32(offset + L().AVRational.num), v.getInt32(offset + L().AVRational.den)];
}

function setRational(p: Ptr, offset: number, r: Rational): void {
  const dv = writable(p, offset, 8);
  dv.setInt32(L().AVRational.num, r[0], true);
  dv.setInt32(L().AVRational.den, r[1], true);
}

/** Reads an `int64_t`, mapping `AV_NOPTS_VALUE` to `null`. */
function ts(p: Ptr, offset: number): bigint | null {
  const v = view(p).getBigInt64(offset);
  return v === AV_NOPTS_VALUE ? null : v;
}

/** FFmpeg's "no timestamp" marker (`INT64_MIN`). */
export const AV_NOPTS_VALUE = -0x8000000000000000n;

// ---------------------------------------------------------------- AVFormatContext

/** Fields of an `AVFormatContext`. */
export const formatContext = {
  nbStreams: (p: Ptr): number => view(p).getUint32(L().AVFormatContext.nb_streams),
  stream(p: Ptr, i: number): Ptr {
    const streams = view(p).getPointer(L().AVFormatContext.streams) as Ptr;
    return view(streams).getPointer(i * 8) as Ptr;
  },
  /** Microseconds (`AV_TIME_BASE`), or null. */
  startTime: (p: Ptr): bigint | null => ts(p, L().AVFormatContext.start_time),
  /** Microseconds (`AV_TIME_BASE`), or null. */
  duration: (p: Ptr): bigint | null => ts(p, L().AVFormatContext.duration),
  bitRate: (p: Ptr): bigint => view(p).getBigInt64(L().AVFormatContext.bit_rate),
  /** The demuxer's short name, e.g. "mov,mp4,m4a,3gp,3g2,mj2". */
  formatName(p: Ptr): string {
    const iformat = view(p).getPointer(L().AVFormatContext.iformat);
    if (iformat === null) return "";
    const name = view(iformat).getPointer(L().AVInputFormat.name);
    return name === null ? "" : Deno.UnsafePointerView.getCString(name);
  },
  setPb(p: Ptr, pb: Deno.PointerValue): void {
    writable(p, L().AVFormatContext.pb, 8).setBigUint64(0, BigInt(Deno.UnsafePointer.value(pb)), true);
  },
  pb: (p: Ptr): Deno.PointerValue => view(p).getPointer(L().AVFormatContext.pb),
  flags: (p: Ptr): number => view(p).getInt32(L().AVFormatContext.flags),
  setFlags(p: Ptr, flags: number): void {
    writable(p, L().AVFormatContext.flags, 4).setInt32(0, flags, true);
  },
  /** Sets `probesize` (bytes) and `max_analyze_duration` (microseconds) for `avformat_find_stream_info`. */
  setProbeLimits(p: Ptr, probesize: bigint, maxAnalyzeDurationUs: bigint): void {
    writable(p, L().AVFormatContext.probesize, 8).setBigInt64(0, probesize, true);
    writable(p, L().AVFormatContext.max_analyze_duration, 8).setBigInt64(0, maxAnalyzeDurationUs, true);
  },
};

/** `AVFMT_FLAG_CUSTOM_IO`: the caller owns `pb`; `avformat_close_input` leaves it alone. */
export const AVFMT_FLAG_CUSTOM_IO = 0x0080;

// ---------------------------------------------------------------- AVCodec

/** The name of a decoder or encoder (`AVCodec.name`, e.g. "libdav1d"): which implementation FFmpeg picked. */
export function codecName(codec: Ptr): string {
  const name = view(codec).getPointer(L().AVCodec.name);
  return name === null ? "" : Deno.UnsafePointerView.getCString(name);
}

// ---------------------------------------------------------------- AVIOContext

/** Fields of an `AVIOContext`. */
export const ioContext = {
  /** The I/O buffer, which FFmpeg may have replaced since `avio_alloc_context` (free this one). */
  buffer: (p: Ptr): Deno.PointerValue => view(p).getPointer(L().AVIOContext.buffer),
};

// ---------------------------------------------------------------- AVStream

/** Fields of an `AVStream`. */
export const stream = {
  index: (p: Ptr): number => view(p).getInt32(L().AVStream.index),
  codecpar: (p: Ptr): Ptr => view(p).getPointer(L().AVStream.codecpar) as Ptr,
  timeBase: (p: Ptr): Rational => rational(p, L().AVStream.time_base),
  setTimeBase: (p: Ptr, r: Rational): void => setRational(p, L().AVStream.time_base, r),
  startTime: (p: Ptr): bigint | null => ts(p, L().AVStream.start_time),
  duration: (p: Ptr): bigint | null => ts(p, L().AVStream.duration),
  nbFrames: (p: Ptr): bigint => view(p).getBigInt64(L().AVStream.nb_frames),
  disposition: (p: Ptr): number => view(p).getInt32(L().AVStream.disposition),
  avgFrameRate: (p: Ptr): Rational => rational(p, L().AVStream.avg_frame_rate),
  setAvgFrameRate: (p: Ptr, r: Rational): void => setRational(p, L().AVStream.avg_frame_rate, r),
  rFrameRate: (p: Ptr): Rational => rational(p, L().AVStream.r_frame_rate),
  sampleAspectRatio: (p: Ptr): Rational => rational(p, L().AVStream.sample_aspect_ratio),
  /** Sets `discard` (`AVDISCARD_DEFAULT` = 0, `AVDISCARD_ALL` = 48). */
  setDiscard(p: Ptr, discard: number): void {
    writable(p, L().AVStream.discard, 4).setInt32(0, discard, true);
  },
  /**
   * The stream's display matrix (`AV_PKT_DATA_DISPLAYMATRIX`, 9 `int32`), copied, or null: from
   * `codecpar.coded_side_data` where the release has it (6.1 on), else from the stream's side data.
   */
  displayMatrix(p: Ptr): Uint8Array | null {
    const l = L();
    const par = l.AVCodecParameters;
    if (par.coded_side_data !== undefined && par.nb_coded_side_data !== undefined) {
      const cp = view(stream.codecpar(p));
      return findSideData(
        cp.getPointer(par.coded_side_data),
        cp.getInt32(par.nb_coded_side_data),
        DISPLAYMATRIX,
      );
    }
    if (l.AVStream.side_data === undefined || l.AVStream.nb_side_data === undefined) return null;
    const v = view(p);
    return findSideData(
      v.getPointer(l.AVStream.side_data),
      v.getInt32(l.AVStream.nb_side_data),
      DISPLAYMATRIX,
    );
  },
};

/** `AV_PKT_DATA_DISPLAYMATRIX`. */
const DISPLAYMATRIX = 5;

/** `AVDISCARD_ALL`. */
export const AVDISCARD_ALL = 48;

/** Searches an `AVPacketSideData[n]` array for `type`; returns a copy of its data or null. */
function findSideData(arr: Deno.PointerValue, n: number, type: number): Uint8Array | null {
  if (arr === null || n <= 0) return null;
  const sd = L().AVPacketSideData;
  const v = view(arr);
  for (let i = 0; i < n; i++) {
    const base = i * sd.$size;
    if (v.getInt32(base + sd.type) !== type) continue;
    const data = v.getPointer(base + sd.data);
    // An `int` in 4.x, a `size_t` from 5.0.
    const size = sd.size$bytes === 4 ? v.getInt32(base + sd.size) : Number(v.getBigUint64(base + sd.size));
    if (data === null || size <= 0) return null;
    return new Uint8Array(Deno.UnsafePointerView.getArrayBuffer(data, size).slice(0));
  }
  return null;
}

// ---------------------------------------------------------------- AVCodecParameters

/** Fields of an `AVCodecParameters`. */
export const codecpar = {
  codecType: (p: Ptr): number => view(p).getInt32(L().AVCodecParameters.codec_type),
  codecId: (p: Ptr): number => view(p).getInt32(L().AVCodecParameters.codec_id),
  codecTag: (p: Ptr): number => view(p).getUint32(L().AVCodecParameters.codec_tag),
  /** A copy of the extradata (codec private data), empty when there is none. */
  extradata(p: Ptr): Uint8Array {
    const v = view(p);
    const size = v.getInt32(L().AVCodecParameters.extradata_size);
    const data = v.getPointer(L().AVCodecParameters.extradata);
    if (data === null || size <= 0) return new Uint8Array(0);
    return new Uint8Array(Deno.UnsafePointerView.getArrayBuffer(data, size).slice(0));
  },
  format: (p: Ptr): number => view(p).getInt32(L().AVCodecParameters.format),
  bitRate: (p: Ptr): bigint => view(p).getBigInt64(L().AVCodecParameters.bit_rate),
  bitsPerRawSample: (p: Ptr): number => view(p).getInt32(L().AVCodecParameters.bits_per_raw_sample),
  profile: (p: Ptr): number => view(p).getInt32(L().AVCodecParameters.profile),
  level: (p: Ptr): number => view(p).getInt32(L().AVCodecParameters.level),
  width: (p: Ptr): number => view(p).getInt32(L().AVCodecParameters.width),
  height: (p: Ptr): number => view(p).getInt32(L().AVCodecParameters.height),
  sampleAspectRatio: (p: Ptr): Rational => rational(p, L().AVCodecParameters.sample_aspect_ratio),
  fieldOrder: (p: Ptr): number => view(p).getInt32(L().AVCodecParameters.field_order),
  colorRange: (p: Ptr): number => view(p).getInt32(L().AVCodecParameters.color_range),
  colorPrimaries: (p: Ptr): number => view(p).getInt32(L().AVCodecParameters.color_primaries),
  colorTrc: (p: Ptr): number => view(p).getInt32(L().AVCodecParameters.color_trc),
  colorSpace: (p: Ptr): number => view(p).getInt32(L().AVCodecParameters.color_space),
  chromaLocation: (p: Ptr): number => view(p).getInt32(L().AVCodecParameters.chroma_location),
  sampleRate: (p: Ptr): number => view(p).getInt32(L().AVCodecParameters.sample_rate),
  /**
   * Fills a fresh `AVCodecParameters` (from `avcodec_parameters_alloc`) for a video stream. `extradata` must be
   * memory from `av_malloc` with `AV_INPUT_BUFFER_PADDING_SIZE` zero bytes after it (the parameters own it and
   * `avcodec_parameters_free` frees it), or null.
   */
  setVideo(p: Ptr, v: CodecParamsInit, extradata: Deno.PointerValue, extradataSize: number): void {
    const l = L().AVCodecParameters;
    const dv = writable(p, 0, l.chroma_location + 4);
    dv.setInt32(l.codec_type, 0, true); // AVMEDIA_TYPE_VIDEO
    dv.setInt32(l.codec_id, v.codecId, true);
    dv.setUint32(l.codec_tag, v.codecTag >>> 0, true);
    dv.setBigUint64(l.extradata, BigInt(Deno.UnsafePointer.value(extradata)), true);
    dv.setInt32(l.extradata_size, extradataSize, true);
    dv.setInt32(l.format, v.format, true);
    dv.setInt32(l.bits_per_raw_sample, v.bitsPerRawSample, true);
    dv.setInt32(l.profile, v.profile, true);
    dv.setInt32(l.level, v.level, true);
    dv.setInt32(l.width, v.width, true);
    dv.setInt32(l.height, v.height, true);
    dv.setInt32(l.sample_aspect_ratio + L().AVRational.num, v.sampleAspectRatio[0], true);
    dv.setInt32(l.sample_aspect_ratio + L().AVRational.den, v.sampleAspectRatio[1], true);
    dv.setInt32(l.field_order, v.fieldOrder, true);
    dv.setInt32(l.color_range, v.colorRange, true);
    dv.setInt32(l.color_primaries, v.colorPrimaries, true);
    dv.setInt32(l.color_trc, v.colorTrc, true);
    dv.setInt32(l.color_space, v.colorSpace, true);
    dv.setInt32(l.chroma_location, v.chromaLocation, true);
  },
};

/** The video codec parameters {@link codecpar.setVideo} writes (a subset of `VideoPackets`' `CodecInfo`). */
export type CodecParamsInit = Pick<
  CodecInfo,
  | "codecId"
  | "codecTag"
  | "format"
  | "bitsPerRawSample"
  | "profile"
  | "level"
  | "width"
  | "height"
  | "sampleAspectRatio"
  | "fieldOrder"
  | "colorRange"
  | "colorPrimaries"
  | "colorTrc"
  | "colorSpace"
  | "chromaLocation"
>;

// ---------------------------------------------------------------- AVPacket

/** Fields of an `AVPacket`. */
export const packet = {
  pts: (p: Ptr): bigint | null => ts(p, L().AVPacket.pts),
  dts: (p: Ptr): bigint | null => ts(p, L().AVPacket.dts),
  duration: (p: Ptr): bigint => view(p).getBigInt64(L().AVPacket.duration),
  data: (p: Ptr): Deno.PointerValue => view(p).getPointer(L().AVPacket.data),
  size: (p: Ptr): number => view(p).getInt32(L().AVPacket.size),
  streamIndex: (p: Ptr): number => view(p).getInt32(L().AVPacket.stream_index),
  flags: (p: Ptr): number => view(p).getInt32(L().AVPacket.flags),
  /** Sets pts, dts, duration and flags of a packet before it is sent to a decoder or muxer. */
  setTiming(p: Ptr, pts: bigint | null, dts: bigint | null, duration: bigint, flags: number): void {
    const l = L().AVPacket;
    const dv = writable(p, 0, Math.max(l.pts, l.dts, l.duration, l.flags) + 8);
    dv.setBigInt64(l.pts, pts ?? AV_NOPTS_VALUE, true);
    dv.setBigInt64(l.dts, dts ?? AV_NOPTS_VALUE, true);
    dv.setBigInt64(l.duration, duration, true);
    dv.setInt32(l.flags, flags, true);
  },
  setStreamIndex(p: Ptr, index: number): void {
    writable(p, L().AVPacket.stream_index, 4).setInt32(0, index, true);
  },
};

/** `AV_PKT_FLAG_KEY`. */
export const AV_PKT_FLAG_KEY = 1;
/** `AV_PKT_FLAG_CORRUPT`. */
export const AV_PKT_FLAG_CORRUPT = 2;

// ---------------------------------------------------------------- AVFrame

/** Fields of an `AVFrame`. */
export const frame = {
  /** `data[plane]`. */
  data: (p: Ptr, plane: number): Deno.PointerValue => view(p).getPointer(L().AVFrame.data + plane * 8),
  /** `linesize[plane]`. */
  linesize: (p: Ptr, plane: number): number => view(p).getInt32(L().AVFrame.linesize + plane * 4),
  width: (p: Ptr): number => view(p).getInt32(L().AVFrame.width),
  height: (p: Ptr): number => view(p).getInt32(L().AVFrame.height),
  format: (p: Ptr): number => view(p).getInt32(L().AVFrame.format),
  /** Audio samples per channel. */
  nbSamples: (p: Ptr): number => view(p).getInt32(L().AVFrame.nb_samples),
  /** `extended_data`: the address of the array of plane pointers (one per channel when planar). */
  extendedData: (p: Ptr): Deno.PointerValue => view(p).getPointer(L().AVFrame.extended_data),
  /** `key_frame` before FFmpeg 6.1, `flags & AV_FRAME_FLAG_KEY` from 6.1 (the table says which). */
  keyFrame(p: Ptr): boolean {
    const l = L().AVFrame;
    const v = view(p);
    return l.key_frame !== undefined
      ? v.getInt32(l.key_frame) !== 0
      : (v.getInt32(l.flags) & AV_FRAME_FLAG_KEY) !== 0;
  },
  pictType: (p: Ptr): number => view(p).getInt32(L().AVFrame.pict_type),
  pts: (p: Ptr): bigint | null => ts(p, L().AVFrame.pts),
  bestEffortTimestamp: (p: Ptr): bigint | null => ts(p, L().AVFrame.best_effort_timestamp),
  /** `interlaced_frame` before FFmpeg 6.1, `flags & AV_FRAME_FLAG_INTERLACED` from 6.1. */
  interlaced(p: Ptr): boolean {
    const l = L().AVFrame;
    const v = view(p);
    return l.interlaced_frame !== undefined
      ? v.getInt32(l.interlaced_frame) !== 0
      : (v.getInt32(l.flags) & AV_FRAME_FLAG_INTERLACED) !== 0;
  },
  colorRange: (p: Ptr): number => view(p).getInt32(L().AVFrame.color_range),
  colorspace: (p: Ptr): number => view(p).getInt32(L().AVFrame.colorspace),
  decodeErrorFlags: (p: Ptr): number => view(p).getInt32(L().AVFrame.decode_error_flags),
  /** Address of the `data[8]` array (a `uint8_t *const[]` for `sws_scale`). */
  dataArray: (p: Ptr): Ptr => Deno.UnsafePointer.offset(p, L().AVFrame.data) as Ptr,
  /** Address of the `linesize[8]` array (a `const int[]` for `sws_scale`). */
  linesizeArray: (p: Ptr): Ptr => Deno.UnsafePointer.offset(p, L().AVFrame.linesize) as Ptr,
  /** Sets the fields an encoder needs before `av_frame_get_buffer`. */
  setVideoFormat(p: Ptr, width: number, height: number, format: number): void {
    const l = L().AVFrame;
    const dv = writable(p, 0, l.format + 4);
    dv.setInt32(l.width, width, true);
    dv.setInt32(l.height, height, true);
    dv.setInt32(l.format, format, true);
  },
  setPts(p: Ptr, pts: bigint): void {
    writable(p, L().AVFrame.pts, 8).setBigInt64(0, pts, true);
  },
};

// ---------------------------------------------------------------- AVCodecContext

/** Fields of an `AVCodecContext` that cannot be reached through `av_opt_*`. */
export const codecContext = {
  pixFmt: (p: Ptr): number => view(p).getInt32(L().AVCodecContext.pix_fmt),
  width: (p: Ptr): number => view(p).getInt32(L().AVCodecContext.width),
  height: (p: Ptr): number => view(p).getInt32(L().AVCodecContext.height),
  setPktTimebase: (p: Ptr, r: Rational): void => setRational(p, L().AVCodecContext.pkt_timebase, r),
  setTimeBase: (p: Ptr, r: Rational): void => setRational(p, L().AVCodecContext.time_base, r),
  setFramerate: (p: Ptr, r: Rational): void => setRational(p, L().AVCodecContext.framerate, r),
  setPixFmt(p: Ptr, fmt: number): void {
    writable(p, L().AVCodecContext.pix_fmt, 4).setInt32(0, fmt, true);
  },
  setSize(p: Ptr, width: number, height: number): void {
    writable(p, L().AVCodecContext.width, 4).setInt32(0, width, true);
    writable(p, L().AVCodecContext.height, 4).setInt32(0, height, true);
  },
};

// ---------------------------------------------------------------- AVChannelLayout

/**
 * Fields of an `AVChannelLayout` held in JavaScript memory (`buffer` of `$size` bytes). FFmpeg >= 5.1 only: the
 * callers ask `ffmpeg().channels.kind` first (4.x has no such struct).
 */
export const channelLayout = {
  /** A zeroed buffer the size of an `AVChannelLayout`. */
  alloc: (): Uint8Array<ArrayBuffer> => new Uint8Array(chLayout().$size),
  nbChannels: (b: Uint8Array): number =>
    new DataView(b.buffer, b.byteOffset, b.byteLength).getInt32(chLayout().nb_channels, true),
};

function chLayout(): NonNullable<FfmpegLayout["AVChannelLayout"]> {
  const l = L().AVChannelLayout;
  if (l === undefined) throw new Error(`FFmpeg ${L().release} has no AVChannelLayout`);
  return l;
}

// ---------------------------------------------------------------- AVBSFContext

/** Fields of an `AVBSFContext`. */
export const bsfContext = {
  parIn: (p: Ptr): Ptr => view(p).getPointer(L().AVBSFContext.par_in) as Ptr,
  parOut: (p: Ptr): Ptr => view(p).getPointer(L().AVBSFContext.par_out) as Ptr,
  setTimeBaseIn: (p: Ptr, r: Rational): void => setRational(p, L().AVBSFContext.time_base_in, r),
};

// ---------------------------------------------------------------- AVPixFmtDescriptor

/** `AV_PIX_FMT_FLAG_PAL`, `AV_PIX_FMT_FLAG_BITSTREAM`, `AV_PIX_FMT_FLAG_RGB`. */
const PIX_FMT_FLAG_PAL = 2, PIX_FMT_FLAG_BITSTREAM = 4, PIX_FMT_FLAG_RGB = 32;

/** Facts about a pixel format from `av_pix_fmt_desc_get`. */
export interface PixelFormatInfo {
  name: string;
  bitDepth: number;
  log2ChromaW: number;
  log2ChromaH: number;
  /** `AV_PIX_FMT_FLAG_*` (all defined bits fit in 32). */
  flags: number;
  /**
   * Per plane: bytes from one pixel to the next (of its first component) and whether the plane is chroma
   * subsampled by `log2Chroma*`; null for palette and bitstream formats, whose pixels are not whole bytes.
   */
  planes: { step: number; subsampled: boolean }[] | null;
}

/** Facts about a pixel format from `av_pix_fmt_desc_get`, or null when FFmpeg does not know it. */
export function pixelFormatInfo(fmt: number): PixelFormatInfo | null {
  const { avutil } = ffmpeg();
  const d = avutil.av_pix_fmt_desc_get(fmt);
  if (d === null) return null;
  const l = L();
  const v = view(d);
  const namePtr = v.getPointer(l.AVPixFmtDescriptor.name);
  const flags = Number(v.getBigUint64(l.AVPixFmtDescriptor.flags));
  const comp = (c: number, f: "plane" | "step" | "depth") =>
    v.getInt32(l.AVPixFmtDescriptor.comp + c * l.AVComponentDescriptor.$size + l.AVComponentDescriptor[f]);
  let planes: { step: number; subsampled: boolean }[] | null = null;
  if (!(flags & (PIX_FMT_FLAG_PAL | PIX_FMT_FLAG_BITSTREAM))) {
    planes = [];
    const n = v.getUint8(l.AVPixFmtDescriptor.nb_components);
    for (let c = 0; c < n; c++) {
      const plane = comp(c, "plane");
      planes[plane] ??= {
        step: comp(c, "step"),
        subsampled: (c === 1 || c === 2) && !(flags & PIX_FMT_FLAG_RGB),
      };
    }
  }
  return {
    name: namePtr === null ? "" : Deno.UnsafePointerView.getCString(namePtr),
    bitDepth: comp(0, "depth"),
    log2ChromaW: v.getUint8(l.AVPixFmtDescriptor.log2_chroma_w),
    log2ChromaH: v.getUint8(l.AVPixFmtDescriptor.log2_chroma_h),
    flags,
    planes,
  };
}
