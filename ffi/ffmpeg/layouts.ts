/**
 * Struct field offsets (bytes, x86-64 / aarch64 LP64) for the FFmpeg structs sluice reads or writes, one table
 * per FFmpeg release. The table in use is picked from the loaded libraries' versions (see
 * `ffi/ffmpeg/library.ts`); `src/media/structs.ts` is the only reader.
 *
 * Every table was compiled: the offsetof program of `tests/ffi/offsetof.ts` (which prints `offsetof(Struct,
 * field)` for every entry, `$size` as `sizeof(Struct)`, `<field>$bytes` as the field's own size) was built
 * against that release's own installed public headers. `tests/ffi/layouts_test.ts` repeats the check against
 * the system's -dev headers, against the include dir of each FFmpeg build `scripts/ffmpeg/test_releases.sh`
 * makes (4.3, 7.1, 8.1: CI), and against any header dir named by `SLUICE_FFMPEG_HEADERS_<release>`.
 *
 * A table lists a field only where sluice should read it. Where FFmpeg moved a meaning to another place, the
 * older field is left out of the releases that have the newer one, and the accessors follow the table:
 * - key frame and interlacing: `AVFrame.key_frame` / `interlaced_frame` before 6.1, `AVFrame.flags` bits
 *   (`AV_FRAME_FLAG_KEY` / `_INTERLACED`) from 6.1 (the old fields are deprecated there and gone in 8.0);
 * - the display matrix: `AVStream.side_data` before 6.1, `AVCodecParameters.coded_side_data` from 6.1 (the
 *   stream's copy is deprecated there and gone in 8.0);
 * - channel layouts: `AVChannelLayout` from 5.1; 4.x has the `channel_layout` mask and `channels` count,
 *   which sluice reads through `av_opt_get_int` (no offsets: see `ffi/ffmpeg/symbols.ts`);
 * - `AVPacketSideData.size` is an `int` in 4.x and a `size_t` from 5.0 (`size$bytes`).
 * @module
 */

/**
 * Whether a release is run in CI: `"run-in-ci"` tables are checked against the headers of a real build of
 * that release and the media, loader, audio and frame-index tests run on that build (4.3 and 7.1, 8.1 from
 * Debian's sources, and the system's 5.1); `"headers-only"` tables were compiled against the release's own
 * headers here, but no build of it runs in CI (Debian ships no source of those releases).
 */
export type LayoutProvenance = "run-in-ci" | "headers-only";

/** Offsets of every field sluice touches. Optional fields are those a release lacks or sluice reads elsewhere. */
export interface FfmpegLayout {
  /** FFmpeg release, e.g. "5.1". */
  release: string;
  provenance: LayoutProvenance;
  /** Where the headers the table was compiled against came from, and their libavcodec version. */
  headers: string;
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
  AVInputFormat: { name: number };
  /** A decoder: its implementation's name (`libdav1d`, `h264`). */
  AVCodec: { name: number };
  AVStream: {
    index: number;
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
    /** Stream side data (the display matrix): read before 6.1 only. */
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
    /** FFmpeg >= 6.1: the display matrix lives here. */
    coded_side_data?: number;
    nb_coded_side_data?: number;
  };
  AVPacket: {
    pts: number;
    dts: number;
    data: number;
    size: number;
    stream_index: number;
    flags: number;
    duration: number;
  };
  AVPacketSideData: {
    $size: number;
    data: number;
    size: number;
    /** Width of `size`: 4 (`int`, 4.x) or 8 (`size_t`, from 5.0). */
    size$bytes: number;
    type: number;
  };
  AVFrame: {
    data: number;
    linesize: number;
    extended_data: number;
    width: number;
    height: number;
    nb_samples: number;
    format: number;
    /** Before 6.1 only; from 6.1 `flags & AV_FRAME_FLAG_KEY`. */
    key_frame?: number;
    pict_type: number;
    pts: number;
    /** Before 6.1 only; from 6.1 `flags & AV_FRAME_FLAG_INTERLACED`. */
    interlaced_frame?: number;
    flags: number;
    color_range: number;
    colorspace: number;
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
  AVComponentDescriptor: { $size: number; plane: number; step: number; depth: number };
  AVRational: { $size: number; num: number; den: number };
  /** The public channel layout struct (FFmpeg >= 5.1; absent from 4.x). */
  AVChannelLayout?: { $size: number; order: number; nb_channels: number };
  /** Only the leading fields sluice's custom I/O frees (`buffer` may be reallocated by FFmpeg). */
  AVIOContext: { buffer: number };
  AVBSFContext: { par_in: number; par_out: number; time_base_in: number };
  /**
   * Whether a single-threaded HEVC decoder that was sent packets with `skip_frame = nonref` decodes as a fresh
   * one after `avcodec_flush_buffers`. True where the tests showed it (4.3, 5.1); 7.1 and 8.1 decode one frame in
   * forty then, so sluice opens a new decoder; releases not run here are treated as 7.1.
   */
  reuseHevcAfterSkip: boolean;
  /**
   * The YUV matrix this release's ffmpeg CLI gives a gray output when it converts YUV to gray: `"input"` up to 7.1
   * (`vf_scale` uses the input's matrix for its output: luma is kept), `"unspecified"` from 8.0 (libswscale 9
   * gives a gray frame no matrix, so the default BT.601 one: BT.709 or BT.2020 luma is re-derived through RGB,
   * up to 4 levels off on a BT.2020 clip). sluice's scaler tells libswscale the same, to give the CLI's pixels.
   */
  grayMatrix: "input" | "unspecified";
  /** `enum AVCodecID` values sluice names: AV1's moved at the 5.0 bump (32797 → 226) and the 7.0 one (225). */
  AVCodecID: Record<CodecIdName, number>;
}

/** The codecs whose ids sluice needs (`sluice doctor`'s decoder list, the tests' skips). */
export type CodecIdName =
  | "AV_CODEC_ID_H264"
  | "AV_CODEC_ID_HEVC"
  | "AV_CODEC_ID_VP9"
  | "AV_CODEC_ID_AV1"
  | "AV_CODEC_ID_VP8"
  | "AV_CODEC_ID_MPEG4"
  | "AV_CODEC_ID_MPEG2VIDEO"
  | "AV_CODEC_ID_MJPEG"
  | "AV_CODEC_ID_PRORES"
  | "AV_CODEC_ID_PNG"
  | "AV_CODEC_ID_AAC"
  | "AV_CODEC_ID_MP3"
  | "AV_CODEC_ID_OPUS"
  | "AV_CODEC_ID_AC3";

/** Codec ids of 5.1 and 6.x; the other releases differ in AV1's only (compiled against each one's headers). */
const CODEC_IDS: Record<CodecIdName, number> = {
  AV_CODEC_ID_H264: 27,
  AV_CODEC_ID_HEVC: 173,
  AV_CODEC_ID_VP9: 167,
  AV_CODEC_ID_AV1: 226,
  AV_CODEC_ID_VP8: 139,
  AV_CODEC_ID_MPEG4: 12,
  AV_CODEC_ID_MPEG2VIDEO: 2,
  AV_CODEC_ID_MJPEG: 7,
  AV_CODEC_ID_PRORES: 147,
  AV_CODEC_ID_PNG: 61,
  AV_CODEC_ID_AAC: 86018,
  AV_CODEC_ID_MP3: 86017,
  AV_CODEC_ID_OPUS: 86076,
  AV_CODEC_ID_AC3: 86019,
};

/** Where the release headers of the tables not built here came from. */
const RELEASE_HEADERS =
  "the installed public headers of the FFmpeg release build vendored by the FFmpeg.AutoGen " +
  "repository at its update for that release";

/**
 * FFmpeg 4.4 (libavformat 58.76, libavcodec 58.134, libavutil 56.70, libswscale 5.9, libswresample 3.9): Ubuntu
 * 22.04's, the base of most CUDA and PyTorch images. Before the 5.0 bump: `AVFormatContext` still holds
 * `filename[1024]` (start_time 64 → 1088), `AVStream` the deprecated `codec` (codecpar 208), `AVFrame` the
 * deprecated `pkt_pts` (pts 136 but interlaced_frame 252), `AVComponentDescriptor` the `*_minus1` fields (32
 * bytes). No `AVChannelLayout`, no `AVPacket.time_base`.
 */
export const LAYOUT_4_4: FfmpegLayout = {
  release: "4.4",
  provenance: "headers-only",
  headers: `libavcodec 58.134.100: ${RELEASE_HEADERS}`,
  reuseHevcAfterSkip: false,
  grayMatrix: "input",
  AVFormatContext: {
    iformat: 8,
    pb: 32,
    nb_streams: 44,
    streams: 48,
    start_time: 1088,
    duration: 1096,
    bit_rate: 1104,
    flags: 1120,
    probesize: 1128,
    max_analyze_duration: 1136,
  },
  AVInputFormat: { name: 0 },
  AVCodec: { name: 0 },
  AVStream: {
    index: 0,
    codecpar: 208,
    time_base: 24,
    start_time: 32,
    duration: 40,
    nb_frames: 48,
    disposition: 56,
    sample_aspect_ratio: 64,
    avg_frame_rate: 80,
    r_frame_rate: 192,
    discard: 60,
    side_data: 176,
    nb_side_data: 184,
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
  AVPacket: { pts: 8, dts: 16, data: 24, size: 32, stream_index: 36, flags: 40, duration: 64 },
  AVPacketSideData: { $size: 16, data: 0, size: 8, size$bytes: 4, type: 12 },
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
    pts: 136,
    interlaced_frame: 252,
    flags: 380,
    color_range: 384,
    colorspace: 396,
    best_effort_timestamp: 408,
    decode_error_flags: 440,
  },
  AVCodecContext: {
    codec_type: 12,
    codec_id: 24,
    time_base: 100,
    width: 116,
    height: 120,
    pix_fmt: 136,
    thread_count: 784,
    thread_type: 788,
    skip_frame: 836,
    framerate: 872,
    pkt_timebase: 884,
  },
  AVPixFmtDescriptor: { name: 0, nb_components: 8, log2_chroma_w: 9, log2_chroma_h: 10, flags: 16, comp: 24 },
  AVComponentDescriptor: { $size: 32, plane: 0, step: 4, depth: 16 },
  AVRational: { $size: 8, num: 0, den: 4 },
  AVIOContext: { buffer: 8 },
  AVBSFContext: { par_in: 32, par_out: 40, time_base_in: 48 },
  AVCodecID: { ...CODEC_IDS, AV_CODEC_ID_AV1: 32797 },
};

/**
 * FFmpeg 4.3 (libavformat 58.45, libavcodec 58.91, libavutil 56.51, libswscale 5.7, libswresample 3.7): Debian
 * 11's. Compiled against its own headers (Debian's 4.3.7 source, the build CI runs, and the 4.3 release's):
 * every offset sluice reads equals 4.4's.
 */
export const LAYOUT_4_3: FfmpegLayout = {
  ...LAYOUT_4_4,
  release: "4.3",
  provenance: "run-in-ci",
  reuseHevcAfterSkip: true,
  headers: "libavcodec 58.91.100: Debian 11's ffmpeg 4.3.7 source (scripts/ffmpeg/build.sh 4.3)",
};

/** FFmpeg 5.1 (libavformat 59.27, libavcodec 59.37, libavutil 57.28, libswscale 6.7): Debian 12's. */
export const LAYOUT_5_1: FfmpegLayout = {
  release: "5.1",
  provenance: "run-in-ci",
  headers: "libavcodec 59.37.100: Debian 12's libavcodec-dev (the system's)",
  reuseHevcAfterSkip: true,
  grayMatrix: "input",
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
  AVInputFormat: { name: 0 },
  AVCodec: { name: 0 },
  AVStream: {
    index: 0,
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
  AVPacket: { pts: 8, dts: 16, data: 24, size: 32, stream_index: 36, flags: 40, duration: 64 },
  AVPacketSideData: { $size: 24, data: 0, size: 8, size$bytes: 8, type: 16 },
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
    pts: 136,
    interlaced_frame: 188,
    flags: 316,
    color_range: 320,
    colorspace: 332,
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
  AVComponentDescriptor: { $size: 20, plane: 0, step: 4, depth: 16 },
  AVRational: { $size: 8, num: 0, den: 4 },
  AVChannelLayout: { $size: 24, order: 0, nb_channels: 4 },
  AVIOContext: { buffer: 8 },
  AVBSFContext: { par_in: 24, par_out: 32, time_base_in: 40 },
  AVCodecID: CODEC_IDS,
};

/**
 * FFmpeg 6.0 (libavformat 60.3, libavcodec 60.3, libavutil 58.2, libswscale 7.1): the 6.0 bump moved
 * `AVStream.codecpar` up behind `index` and dropped `AVCodecContext.thread_safe_callbacks`.
 */
export const LAYOUT_6_0: FfmpegLayout = {
  release: "6.0",
  provenance: "headers-only",
  headers: `libavcodec 60.3.100: ${RELEASE_HEADERS}`,
  reuseHevcAfterSkip: false,
  grayMatrix: "input",
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
  AVInputFormat: { name: 0 },
  AVCodec: { name: 0 },
  AVStream: {
    index: 8,
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
  AVPacket: { pts: 8, dts: 16, data: 24, size: 32, stream_index: 36, flags: 40, duration: 64 },
  AVPacketSideData: { $size: 24, data: 0, size: 8, size$bytes: 8, type: 16 },
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
    pts: 136,
    interlaced_frame: 188,
    flags: 316,
    color_range: 320,
    colorspace: 332,
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
    skip_frame: 684,
    framerate: 704,
    pkt_timebase: 716,
  },
  AVPixFmtDescriptor: { name: 0, nb_components: 8, log2_chroma_w: 9, log2_chroma_h: 10, flags: 16, comp: 24 },
  AVComponentDescriptor: { $size: 20, plane: 0, step: 4, depth: 16 },
  AVRational: { $size: 8, num: 0, den: 4 },
  AVChannelLayout: { $size: 24, order: 0, nb_channels: 4 },
  AVIOContext: { buffer: 8 },
  AVBSFContext: { par_in: 24, par_out: 32, time_base_in: 40 },
  AVCodecID: CODEC_IDS,
};

/**
 * FFmpeg 6.1 (libavformat 60.16, libavcodec 60.31, libavutil 58.29, libswscale 7.5): Ubuntu 24.04's. Same
 * offsets as 6.0, plus `AVCodecParameters.coded_side_data` (appended); from here key frames and interlacing are
 * read from `AVFrame.flags` and the display matrix from `coded_side_data` (see the module docs).
 */
export const LAYOUT_6_1: FfmpegLayout = {
  release: "6.1",
  provenance: "headers-only",
  headers: `libavcodec 60.31.102: ${RELEASE_HEADERS}`,
  reuseHevcAfterSkip: false,
  grayMatrix: "input",
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
  AVInputFormat: { name: 0 },
  AVCodec: { name: 0 },
  AVStream: {
    index: 8,
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
    coded_side_data: 176,
    nb_coded_side_data: 184,
  },
  AVPacket: { pts: 8, dts: 16, data: 24, size: 32, stream_index: 36, flags: 40, duration: 64 },
  AVPacketSideData: { $size: 24, data: 0, size: 8, size$bytes: 8, type: 16 },
  AVFrame: {
    data: 0,
    linesize: 64,
    extended_data: 96,
    width: 104,
    height: 108,
    nb_samples: 112,
    format: 116,
    pict_type: 124,
    pts: 136,
    flags: 316,
    color_range: 320,
    colorspace: 332,
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
    skip_frame: 684,
    framerate: 704,
    pkt_timebase: 716,
  },
  AVPixFmtDescriptor: { name: 0, nb_components: 8, log2_chroma_w: 9, log2_chroma_h: 10, flags: 16, comp: 24 },
  AVComponentDescriptor: { $size: 20, plane: 0, step: 4, depth: 16 },
  AVRational: { $size: 8, num: 0, den: 4 },
  AVChannelLayout: { $size: 24, order: 0, nb_channels: 4 },
  AVIOContext: { buffer: 8 },
  AVBSFContext: { par_in: 24, par_out: 32, time_base_in: 40 },
  AVCodecID: CODEC_IDS,
};

/**
 * FFmpeg 7.1 (libavformat 61.7, libavcodec 61.19, libavutil 59.39, libswscale 8.3): Debian 13's. The 7.0 bump
 * moved `AVCodecParameters.coded_side_data` up behind `extradata_size`, `AVCodecContext.framerate` /
 * `pkt_timebase` up behind `time_base`; `AVFormatContext` gained stream groups (start_time 64 → 96); AVFrame
 * lost five deprecated fields.
 */
export const LAYOUT_7_1: FfmpegLayout = {
  release: "7.1",
  provenance: "run-in-ci",
  headers:
    "libavcodec 61.19.101: Debian 13's ffmpeg 7.1.5 source (scripts/ffmpeg/build.sh 7.1), and the 7.1.1 release's",
  reuseHevcAfterSkip: false,
  grayMatrix: "input",
  AVFormatContext: {
    iformat: 8,
    pb: 32,
    nb_streams: 44,
    streams: 48,
    start_time: 96,
    duration: 104,
    bit_rate: 112,
    flags: 128,
    probesize: 136,
    max_analyze_duration: 144,
  },
  AVInputFormat: { name: 0 },
  AVCodec: { name: 0 },
  AVStream: {
    index: 8,
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
  },
  AVCodecParameters: {
    codec_type: 0,
    codec_id: 4,
    codec_tag: 8,
    extradata: 16,
    extradata_size: 24,
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
  AVPacket: { pts: 8, dts: 16, data: 24, size: 32, stream_index: 36, flags: 40, duration: 64 },
  AVPacketSideData: { $size: 24, data: 0, size: 8, size$bytes: 8, type: 16 },
  AVFrame: {
    data: 0,
    linesize: 64,
    extended_data: 96,
    width: 104,
    height: 108,
    nb_samples: 112,
    format: 116,
    pict_type: 124,
    pts: 136,
    flags: 292,
    color_range: 296,
    colorspace: 308,
    best_effort_timestamp: 320,
    decode_error_flags: 344,
  },
  AVCodecContext: {
    codec_type: 12,
    codec_id: 24,
    time_base: 84,
    width: 116,
    height: 120,
    pix_fmt: 140,
    thread_count: 656,
    thread_type: 660,
    skip_frame: 708,
    framerate: 100,
    pkt_timebase: 92,
  },
  AVPixFmtDescriptor: { name: 0, nb_components: 8, log2_chroma_w: 9, log2_chroma_h: 10, flags: 16, comp: 24 },
  AVComponentDescriptor: { $size: 20, plane: 0, step: 4, depth: 16 },
  AVRational: { $size: 8, num: 0, den: 4 },
  AVChannelLayout: { $size: 24, order: 0, nb_channels: 4 },
  AVIOContext: { buffer: 8 },
  AVBSFContext: { par_in: 24, par_out: 32, time_base_in: 40 },
  AVCodecID: { ...CODEC_IDS, AV_CODEC_ID_AV1: 225 },
};

/**
 * FFmpeg 7.0 (libavformat 61.1, libavcodec 61.3, libavutil 59.8, libswscale 8.1): compiled against its own
 * headers, every offset sluice reads equals 7.1's.
 */
export const LAYOUT_7_0: FfmpegLayout = {
  ...LAYOUT_7_1,
  release: "7.0",
  provenance: "headers-only",
  headers: `libavcodec 61.3.100: ${RELEASE_HEADERS}`,
};

/**
 * FFmpeg 8.1 (libavformat 62.12, libavcodec 62.28, libavutil 60.26, libswscale 9.5, libswresample 6.3): Debian
 * sid's. The 8.0 bump removed `AVFrame.key_frame`, `interlaced_frame` and `top_field_first` (pict_type 124 →
 * 120, flags 292 → 276), `AVStream.side_data` (r_frame_rate 216 → 204) and four `AVCodecContext` fields before
 * `width` (112). FFmpeg 8.0 (libavcodec 62.11) is not covered: none of its headers were at hand.
 */
export const LAYOUT_8_1: FfmpegLayout = {
  release: "8.1",
  provenance: "run-in-ci",
  headers: "libavcodec 62.28.102: Debian sid's ffmpeg 8.1.2 source (scripts/ffmpeg/build.sh 8.1)",
  reuseHevcAfterSkip: false,
  grayMatrix: "unspecified",
  AVFormatContext: {
    iformat: 8,
    pb: 32,
    nb_streams: 44,
    streams: 48,
    start_time: 96,
    duration: 104,
    bit_rate: 112,
    flags: 128,
    probesize: 136,
    max_analyze_duration: 144,
  },
  AVInputFormat: { name: 0 },
  AVCodec: { name: 0 },
  AVStream: {
    index: 8,
    codecpar: 16,
    time_base: 32,
    start_time: 40,
    duration: 48,
    nb_frames: 56,
    disposition: 64,
    sample_aspect_ratio: 72,
    avg_frame_rate: 88,
    r_frame_rate: 204,
    discard: 68,
  },
  AVCodecParameters: {
    codec_type: 0,
    codec_id: 4,
    codec_tag: 8,
    extradata: 16,
    extradata_size: 24,
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
  AVPacket: { pts: 8, dts: 16, data: 24, size: 32, stream_index: 36, flags: 40, duration: 64 },
  AVPacketSideData: { $size: 24, data: 0, size: 8, size$bytes: 8, type: 16 },
  AVFrame: {
    data: 0,
    linesize: 64,
    extended_data: 96,
    width: 104,
    height: 108,
    nb_samples: 112,
    format: 116,
    pict_type: 120,
    pts: 136,
    flags: 276,
    color_range: 280,
    colorspace: 292,
    best_effort_timestamp: 304,
    decode_error_flags: 320,
  },
  AVCodecContext: {
    codec_type: 12,
    codec_id: 24,
    time_base: 84,
    width: 112,
    height: 116,
    pix_fmt: 136,
    thread_count: 656,
    thread_type: 660,
    skip_frame: 708,
    framerate: 100,
    pkt_timebase: 92,
  },
  AVPixFmtDescriptor: { name: 0, nb_components: 8, log2_chroma_w: 9, log2_chroma_h: 10, flags: 16, comp: 24 },
  AVComponentDescriptor: { $size: 20, plane: 0, step: 4, depth: 16 },
  AVRational: { $size: 8, num: 0, den: 4 },
  AVChannelLayout: { $size: 24, order: 0, nb_channels: 4 },
  AVIOContext: { buffer: 8 },
  AVBSFContext: { par_in: 24, par_out: 32, time_base_in: 40 },
  AVCodecID: { ...CODEC_IDS, AV_CODEC_ID_AV1: 225 },
};

/** Every layout table, oldest first. */
export const LAYOUTS: readonly FfmpegLayout[] = [
  LAYOUT_4_3,
  LAYOUT_4_4,
  LAYOUT_5_1,
  LAYOUT_6_0,
  LAYOUT_6_1,
  LAYOUT_7_0,
  LAYOUT_7_1,
  LAYOUT_8_1,
];

/** `AVFrame.flags` bits (FFmpeg >= 6.1 sets them; sluice reads them where the table has no `key_frame`). */
export const AV_FRAME_FLAG_KEY = 1 << 1;
/** See {@link AV_FRAME_FLAG_KEY}. */
export const AV_FRAME_FLAG_INTERLACED = 1 << 3;
