/**
 * Struct field offsets (bytes, x86-64 / aarch64 LP64) for the FFmpeg structs sluice reads or writes, one table
 * per FFmpeg release whose public struct layout differs. The table in use is picked from the loaded
 * libraries' versions (see `ffi/ffmpeg/library.ts`); `src/media/structs.ts` is the only reader.
 *
 * Field names are the C member names: `tests/ffi/layouts_test.ts` compiles a C program that prints
 * `offsetof(Struct, field)` for every entry of the table matching the installed headers and fails on any
 * mismatch. `$size` is `sizeof(Struct)`, kept only for structs that sluice walks as arrays.
 * @module
 */

/** How a layout table was established. */
export type LayoutProvenance =
  | "compiled" // checked by the offsetof test against installed headers on the development machines
  | "release-headers"; // written from the release's public headers; the offsetof test checks it where installed

/** Offsets of every field sluice touches. Optional fields do not exist in every release. */
export interface FfmpegLayout {
  /** FFmpeg release, e.g. "5.1". */
  release: string;
  provenance: LayoutProvenance;
  AVFormatContext: {
    iformat: number;
    pb: number;
    nb_streams: number;
    streams: number;
    start_time: number;
    duration: number;
    bit_rate: number;
    flags: number;
    probesize: number;
    max_analyze_duration: number;
  };
  AVInputFormat: { name: number; long_name: number };
  AVStream: {
    index: number;
    id: number;
    codecpar: number;
    time_base: number;
    start_time: number;
    duration: number;
    nb_frames: number;
    disposition: number;
    sample_aspect_ratio: number;
    avg_frame_rate: number;
    r_frame_rate: number;
    /** Stream side data (display matrix): FFmpeg 5.1 and 6.x; moved to codecpar in 6.1, removed in 7.0. */
    side_data?: number;
    nb_side_data?: number;
  };
  AVCodecParameters: {
    codec_type: number;
    codec_id: number;
    codec_tag: number;
    extradata: number;
    extradata_size: number;
    format: number;
    bit_rate: number;
    bits_per_raw_sample: number;
    profile: number;
    level: number;
    width: number;
    height: number;
    sample_aspect_ratio: number;
    field_order: number;
    color_range: number;
    color_primaries: number;
    color_trc: number;
    color_space: number;
    chroma_location: number;
    sample_rate: number;
    /** FFmpeg >= 6.1. */
    coded_side_data?: number;
    nb_coded_side_data?: number;
  };
  AVPacket: {
    buf: number;
    pts: number;
    dts: number;
    data: number;
    size: number;
    stream_index: number;
    flags: number;
    side_data: number;
    side_data_elems: number;
    duration: number;
    pos: number;
    time_base: number;
  };
  AVPacketSideData: { $size: number; data: number; size: number; type: number };
  AVFrame: {
    data: number;
    linesize: number;
    extended_data: number;
    width: number;
    height: number;
    nb_samples: number;
    format: number;
    key_frame: number;
    pict_type: number;
    sample_aspect_ratio: number;
    pts: number;
    pkt_dts: number;
    time_base: number;
    quality: number;
    repeat_pict: number;
    interlaced_frame: number;
    top_field_first: number;
    flags: number;
    color_range: number;
    color_primaries: number;
    color_trc: number;
    colorspace: number;
    chroma_location: number;
    best_effort_timestamp: number;
    decode_error_flags: number;
  };
  AVCodecContext: {
    codec_type: number;
    codec_id: number;
    time_base: number;
    width: number;
    height: number;
    pix_fmt: number;
    thread_count: number;
    thread_type: number;
    skip_frame: number;
    framerate: number;
    pkt_timebase: number;
  };
  AVPixFmtDescriptor: { name: number; nb_components: number; log2_chroma_w: number; log2_chroma_h: number; flags: number; comp: number };
  AVComponentDescriptor: { $size: number; plane: number; step: number; offset: number; shift: number; depth: number };
  AVRational: { $size: number; num: number; den: number };
  AVBSFContext: { par_in: number; par_out: number; time_base_in: number; time_base_out: number };
}

/** FFmpeg 5.1 (libavformat 59, libavcodec 59, libavutil 57, libswscale 6): Debian bookworm's. */
export const LAYOUT_5_1: FfmpegLayout = {
  release: "5.1",
  provenance: "compiled",
  AVFormatContext: {
    iformat: 8,
    pb: 32,
    nb_streams: 44,
    streams: 48,
    start_time: 64,
    duration: 72,
    bit_rate: 80,
    flags: 96,
    probesize: 104,
    max_analyze_duration: 112,
  },
  AVInputFormat: { name: 0, long_name: 8 },
  AVStream: {
    index: 0,
    id: 4,
    codecpar: 208,
    time_base: 16,
    start_time: 24,
    duration: 32,
    nb_frames: 40,
    disposition: 48,
    sample_aspect_ratio: 56,
    avg_frame_rate: 72,
    r_frame_rate: 200,
    side_data: 184,
    nb_side_data: 192,
  },
  AVCodecParameters: {
    codec_type: 0,
    codec_id: 4,
    codec_tag: 8,
    extradata: 16,
    extradata_size: 24,
    format: 28,
    bit_rate: 32,
    bits_per_raw_sample: 44,
    profile: 48,
    level: 52,
    width: 56,
    height: 60,
    sample_aspect_ratio: 64,
    field_order: 72,
    color_range: 76,
    color_primaries: 80,
    color_trc: 84,
    color_space: 88,
    chroma_location: 92,
    sample_rate: 116,
  },
  AVPacket: {
    buf: 0,
    pts: 8,
    dts: 16,
    data: 24,
    size: 32,
    stream_index: 36,
    flags: 40,
    side_data: 48,
    side_data_elems: 56,
    duration: 64,
    pos: 72,
    time_base: 96,
  },
  AVPacketSideData: { $size: 24, data: 0, size: 8, type: 16 },
  AVFrame: {
    data: 0,
    linesize: 64,
    extended_data: 96,
    width: 104,
    height: 108,
    nb_samples: 112,
    format: 116,
    key_frame: 120,
    pict_type: 124,
    sample_aspect_ratio: 128,
    pts: 136,
    pkt_dts: 144,
    time_base: 152,
    quality: 168,
    repeat_pict: 184,
    interlaced_frame: 188,
    top_field_first: 192,
    flags: 316,
    color_range: 320,
    color_primaries: 324,
    color_trc: 328,
    colorspace: 332,
    chroma_location: 336,
    best_effort_timestamp: 344,
    decode_error_flags: 376,
  },
  AVCodecContext: {
    codec_type: 12,
    codec_id: 24,
    time_base: 100,
    width: 116,
    height: 120,
    pix_fmt: 136,
    thread_count: 636,
    thread_type: 640,
    skip_frame: 692,
    framerate: 712,
    pkt_timebase: 724,
  },
  AVPixFmtDescriptor: { name: 0, nb_components: 8, log2_chroma_w: 9, log2_chroma_h: 10, flags: 16, comp: 24 },
  AVComponentDescriptor: { $size: 20, plane: 0, step: 4, offset: 8, shift: 12, depth: 16 },
  AVRational: { $size: 8, num: 0, den: 4 },
  AVBSFContext: { par_in: 24, par_out: 32, time_base_in: 40, time_base_out: 48 },
};

/** Every layout table, oldest first. */
export const LAYOUTS: readonly FfmpegLayout[] = [LAYOUT_5_1];
