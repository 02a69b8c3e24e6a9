/**
 * What a video's packets are, as plain data: the codec parameters that travel with them ({@link CodecInfo}) and
 * the fields of a `VideoPackets` ({@link VideoPacketsInit}, what its constructor takes and `postMessage` keeps).
 * Types only, below `packets.ts`, its wire format (`packet_format.ts`) and the struct accessors (`structs.ts`),
 * which all need them; `packets.ts` re-exports them.
 * @module
 */

/**
 * Codec parameters that travel with the packets, as FFmpeg's demuxer reported them (`AVCodecParameters`). They
 * are checked against what demuxers produce before they reach a decoder (`codec_params.ts`).
 */
export interface CodecInfo {
  /** FFmpeg codec name, e.g. "h264", "hevc", "vp9" (`avcodec_get_name` of `codecId`). */
  codec: string;
  /** FFmpeg `AVCodecID` (stable across FFmpeg 5.1–7.x); a video codec id. */
  codecId: number;
  /** `AVCodecParameters.codec_tag` (a fourcc, or 0). */
  codecTag: number;
  /** `profile`: codec-specific, -99 when unknown. */
  profile: number;
  /** `level`: codec-specific, -99 when unknown. */
  level: number;
  /** Coded width in pixels (0 when unknown). */
  width: number;
  /** Coded height in pixels (0 when unknown). */
  height: number;
  /** FFmpeg `AVPixelFormat` of the decoded frames (as the container reports it; -1 when unknown). */
  format: number;
  /** Bits per sample of the decoded frames (0 when unknown); at most the pixel format's depth. */
  bitsPerRawSample: number;
  /** `AVFieldOrder` (0 unknown, 1 progressive, 2–5 interlaced orders). */
  fieldOrder: number;
  /** `AVColorRange` (0 unspecified, 1 limited/MPEG, 2 full/JPEG). */
  colorRange: number;
  /** `AVColorPrimaries`. */
  colorPrimaries: number;
  /** `AVColorTransferCharacteristic`. */
  colorTrc: number;
  /** `AVColorSpace` (the YUV matrix). */
  colorSpace: number;
  /** `AVChromaLocation`. */
  chromaLocation: number;
  /** Sample (pixel) aspect ratio `[num, den]`; `[0, 1]` when unknown. */
  sampleAspectRatio: [number, number];
  /** Codec private data (avcC/hvcC/...); empty when none. */
  extradata: Uint8Array;
}

/** The fields of a {@link VideoPackets}, as passed to its constructor and as they survive `postMessage`. */
export interface VideoPacketsInit extends CodecInfo {
  /** Where the packets came from (path, URL or a description of in-memory bytes), for error messages. */
  source: string;
  /** Index of the video stream in its container. */
  streamIndex: number;
  /** The stream's time base `[num, den]`: timestamps are in units of `num / den` seconds. */
  timeBase: [number, number];
  /** Frames per second of the stream (average), 0 when unknown. */
  frameRate: number;
  /** Display rotation in degrees, counter-clockwise as ffprobe reports it (0, 90, 180, -90). */
  rotation: number;
  /** Stream start time in seconds (0 when unknown). */
  startTimeSec: number;
  /** The window `[start, end)` in seconds the packets were cut for, or null for the whole stream. */
  window: [number, number] | null;
  /**
   * Until when the last frame these packets present stays on screen, seconds: the time of the stream's next
   * frame when the stream goes on past the window's end, else the end of the stream (see `demux.ts`). Absent
   * (packets built by hand): the latest `pts + duration` among the packets.
   */
  endSec?: number;
  /**
   * The index, in the stream's presentation order, of the earliest-presented frame among these packets (0 for a
   * whole stream): with the packets' own order, the stream-wide `frameIndex` of each frame (`frame_index.ts`).
   * Absent when it is not known exactly (packets built by hand, a container whose timestamps cannot tell).
   */
  firstFrameIndex?: number;
  /** Packet table: one entry per packet, in decode order. Timestamps in `timeBase` units; NOPTS = INT64_MIN. */
  pts: BigInt64Array;
  /** Decode timestamps (NOPTS when unknown). */
  dts: BigInt64Array;
  /** Durations in `timeBase` units (0 when unknown). */
  duration: BigInt64Array;
  /** `AV_PKT_FLAG_*`: key (1), corrupt (2), discard (4), disposable (16). */
  flags: Uint32Array;
  /** Byte offset of each packet in `data`. */
  offsets: Uint32Array;
  /** Byte size of each packet. */
  sizes: Uint32Array;
  /** All packet payloads, back to back. */
  data: Uint8Array;
}
