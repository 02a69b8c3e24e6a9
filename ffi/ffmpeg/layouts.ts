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
  | "release-headers" // compiled against that release's own headers (not installed here); re-checkable by env var
  | "derived"; // reconstructed from another release's headers (see the table's comment): least certain

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
    /** `enum AVDiscard`: demuxers skip packets of streams set to `AVDISCARD_ALL`. */
    discard: number;
    /**
     * Stream side data (display matrix): deprecated from 6.1 in favour of `AVCodecParameters.coded_side_data`,
     * still present through 7.1, gone in 8.0.
     */
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
    /**
     * Deprecated from 6.1 (as are `interlaced_frame` and `top_field_first`) in favour of `flags &
     * AV_FRAME_FLAG_KEY / AV_FRAME_FLAG_INTERLACED / AV_FRAME_FLAG_TOP_FIELD_FIRST`; still filled through 7.1,
     * gone in 8.0.
     */
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
  AVPixFmtDescriptor: {
    name: number;
    nb_components: number;
    log2_chroma_w: number;
    log2_chroma_h: number;
    flags: number;
    comp: number;
  };
  AVComponentDescriptor: {
    $size: number;
    plane: number;
    step: number;
    offset: number;
    shift: number;
    depth: number;
  };
  AVRational: { $size: number; num: number; den: number };
  /** The public channel layout struct (FFmpeg >= 5.1): same layout in every release sluice supports. */
  AVChannelLayout: { $size: number; order: number; nb_channels: number };
  /** Only the leading fields sluice's custom I/O frees (`buffer` may be reallocated by FFmpeg). */
  AVIOContext: { buffer: number };
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
    discard: 52,
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
  AVChannelLayout: { $size: 24, order: 0, nb_channels: 4 },
  AVIOContext: { buffer: 8 },
  AVBSFContext: { par_in: 24, par_out: 32, time_base_in: 40, time_base_out: 48 },
};

/**
 * FFmpeg 6.0 (libavformat 60.3, libavcodec 60.3, libavutil 58.2, libswscale 7): the 5.1 table with what the 6.0
 * major bump moved. Not installed here and no 6.x -dev package is reachable, so this table was compiled from the
 * installed 5.1 headers with the bump applied: the version macros set to lavc 60 / lavf 60 / lavu 58 (so every
 * `FF_API_*` guard removed at that bump drops its field, e.g. `AVCodecContext.thread_safe_callbacks`),
 * `FF_API_OLD_CHANNEL_LAYOUT` kept until lavu 59 as 6.0 did, and `AVStream.codecpar` moved up behind `id` as the
 * lavf 60 bump did. Cross-checked with offsets measured against the 6.0/6.1 release headers (AVStream
 * index/codecpar/time_base 8/16/32, AVCodecContext pix_fmt/thread_count/pkt_timebase 136/636/716, AVFrame
 * best_effort_timestamp 344, AVCodecParameters format/width/height 28/56/60, AVFormatContext
 * start_time/duration 64/72): all agree.
 */
export const LAYOUT_6_0: FfmpegLayout = {
  ...LAYOUT_5_1,
  release: "6.0",
  provenance: "derived",
  AVStream: {
    index: 8,
    id: 12,
    codecpar: 16,
    time_base: 32,
    start_time: 40,
    duration: 48,
    nb_frames: 56,
    disposition: 64,
    sample_aspect_ratio: 72,
    avg_frame_rate: 88,
    r_frame_rate: 216,
    discard: 68,
    side_data: 200,
    nb_side_data: 208,
  },
  AVCodecContext: { ...LAYOUT_5_1.AVCodecContext, skip_frame: 684, framerate: 704, pkt_timebase: 716 },
};

/**
 * FFmpeg 6.1 (libavformat 60.16, libavcodec 60.31, libavutil 58.29, libswscale 7.5). Same sonames as 6.0 and
 * FFmpeg only appends to public structs within a major, so every 6.0 offset holds; 6.1 adds
 * `AVCodecParameters.coded_side_data` / `nb_coded_side_data` (lavc 60.30), appended after `ch_layout` (144, 24
 * bytes) and `framerate` (168): 176 / 184 by hand from the 6.1 `codec_par.h` member order, checked by compiling
 * the same appended members onto the simulated 6.0 header.
 */
export const LAYOUT_6_1: FfmpegLayout = {
  ...LAYOUT_6_0,
  release: "6.1",
  AVCodecParameters: { ...LAYOUT_6_0.AVCodecParameters, coded_side_data: 176, nb_coded_side_data: 184 },
};

/**
 * FFmpeg 7.1 (libavformat 61.7, libavcodec 61.19, libavutil 59.39, libswscale 8.3): the 6.1 table with what the
 * 7.0 bump moved. Compiled with the offsetof program against Debian 13's libav*-dev 7:7.1.5 headers (set
 * `SLUICE_FFMPEG_HEADERS_7_1` to re-check; every field of the table is checked, inherited or not). The 7.0 bump
 * moved `AVCodecParameters.coded_side_data` up behind `extradata_size` (format 28 → 44),
 * `AVCodecContext.framerate` / `pkt_timebase` up behind `time_base`; `AVFormatContext` gained stream groups and
 * moved its chapters up (start_time 64 → 96); AVFrame lost `coded_picture_number`, `display_picture_number`,
 * `reordered_opaque`, `channel_layout` and `pkt_duration`. The other structs sluice reads did not move.
 */
export const LAYOUT_7_1: FfmpegLayout = {
  ...LAYOUT_6_1,
  release: "7.1",
  provenance: "release-headers",
  AVFormatContext: {
    ...LAYOUT_6_1.AVFormatContext,
    start_time: 96,
    duration: 104,
    bit_rate: 112,
    flags: 128,
    probesize: 136,
    max_analyze_duration: 144,
  },
  AVCodecParameters: {
    ...LAYOUT_6_1.AVCodecParameters,
    format: 44,
    bit_rate: 48,
    bits_per_raw_sample: 60,
    profile: 64,
    level: 68,
    width: 72,
    height: 76,
    sample_aspect_ratio: 80,
    field_order: 96,
    color_range: 100,
    color_primaries: 104,
    color_trc: 108,
    color_space: 112,
    chroma_location: 116,
    sample_rate: 152,
    coded_side_data: 32,
    nb_coded_side_data: 40,
  },
  AVFrame: {
    ...LAYOUT_6_1.AVFrame,
    quality: 160,
    repeat_pict: 176,
    interlaced_frame: 180,
    top_field_first: 184,
    flags: 292,
    color_range: 296,
    color_primaries: 300,
    color_trc: 304,
    colorspace: 308,
    chroma_location: 312,
    best_effort_timestamp: 320,
    decode_error_flags: 344,
  },
  AVCodecContext: {
    ...LAYOUT_6_1.AVCodecContext,
    time_base: 84,
    pix_fmt: 140,
    thread_count: 656,
    thread_type: 660,
    skip_frame: 708,
    framerate: 100,
    pkt_timebase: 92,
  },
};

/**
 * FFmpeg 7.0 (libavformat 61.1, libavcodec 61.3, libavutil 59.8, libswscale 8.1): the 7.1 table. Both share the
 * sonames (lavc 61, lavf 61, lavu 59) and FFmpeg only appends to public structs within a major, and every field
 * listed here predates 7.0 (none was added between lavc 61.3 and 61.19), so the offsets are those compiled from
 * the 7.1 headers.
 */
export const LAYOUT_7_0: FfmpegLayout = { ...LAYOUT_7_1, release: "7.0", provenance: "derived" };

/** Every layout table, oldest first. */
export const LAYOUTS: readonly FfmpegLayout[] = [LAYOUT_5_1, LAYOUT_6_0, LAYOUT_6_1, LAYOUT_7_0, LAYOUT_7_1];
