/**
 * `VideoPackets`: the compressed packets of one video stream (or of one time window of it), copied out of
 * FFmpeg into a single payload buffer plus a small packet table, with the codec parameters needed to decode
 * them anywhere: in another Worker (transfer), or in another process (`serialize()`).
 *
 * Time convention (shared by demux and decode): a timestamp `t` in `timeBase` units is at
 * {@link ptsToSeconds}`(t, timeBase)` = `t * num / den` seconds: the absolute time ffprobe prints as `pts_time`
 * (no subtraction of the stream's start time). A window `[start, end)` holds the frames whose presentation time
 * `s` satisfies `start <= s < end` ({@link inWindow}).
 * @module
 */
import { decodePackets, encodePackets } from "./packet_format.ts";

/** FFmpeg's "no timestamp" (`AV_NOPTS_VALUE`, INT64_MIN) as stored in the packet table. */
export const NOPTS = -0x8000000000000000n;

/** Seconds of a timestamp in `timeBase` units, computed as ffprobe computes `pts_time` (`t * (num / den)`). */
export function ptsToSeconds(t: bigint | number, timeBase: readonly [number, number]): number {
  return Number(t) * (timeBase[0] / timeBase[1]);
}

/** True when `seconds` lies in the window `[start, end)`; every time lies in a null window (the whole stream). */
export function inWindow(window: readonly [number, number] | null, seconds: number): boolean {
  return window === null || (seconds >= window[0] && seconds < window[1]);
}

/** Codec parameters that travel with the packets. */
export interface CodecInfo {
  /** FFmpeg codec name, e.g. "h264", "hevc", "vp9". */
  codec: string;
  /** FFmpeg `AVCodecID` (stable across FFmpeg 5.1–7.x). */
  codecId: number;
  /** `AVCodecParameters.codec_tag`. */
  codecTag: number;
  profile: number;
  level: number;
  /** Coded width and height. */
  width: number;
  height: number;
  /** FFmpeg `AVPixelFormat` of the decoded frames (as the container reports it; -1 when unknown). */
  format: number;
  bitsPerRawSample: number;
  fieldOrder: number;
  colorRange: number;
  colorPrimaries: number;
  colorTrc: number;
  colorSpace: number;
  chromaLocation: number;
  sampleAspectRatio: [number, number];
  /** Codec private data (avcC/hvcC/...); empty when none. */
  extradata: Uint8Array;
}

/** The fields of a {@link VideoPackets}, as passed to its constructor and as they survive `postMessage`. */
export interface VideoPacketsInit extends CodecInfo {
  /** Where the packets came from (path, URL or a description of in-memory bytes), for error messages. */
  source: string;
  streamIndex: number;
  timeBase: [number, number];
  /** Frames per second of the stream (average), 0 when unknown. */
  frameRate: number;
  /** Display rotation in degrees, counter-clockwise as ffprobe reports it (0, 90, 180, -90). */
  rotation: number;
  /** Stream start time in seconds (0 when unknown). */
  startTimeSec: number;
  /** The window `[start, end)` in seconds the packets were cut for, or null for the whole stream. */
  window: [number, number] | null;
  /** Packet table: one entry per packet, in decode order. Timestamps in `timeBase` units; NOPTS = INT64_MIN. */
  pts: BigInt64Array;
  dts: BigInt64Array;
  duration: BigInt64Array;
  /** `AV_PKT_FLAG_*`. */
  flags: Uint32Array;
  /** Byte offset and size of each packet in `data`. */
  offsets: Uint32Array;
  sizes: Uint32Array;
  /** All packet payloads, back to back. */
  data: Uint8Array;
}

/** The compressed packets of one video stream or window. See the module docs. */
export class VideoPackets implements VideoPacketsInit {
  source!: string;
  streamIndex!: number;
  codec!: string;
  codecId!: number;
  codecTag!: number;
  profile!: number;
  level!: number;
  width!: number;
  height!: number;
  format!: number;
  bitsPerRawSample!: number;
  fieldOrder!: number;
  colorRange!: number;
  colorPrimaries!: number;
  colorTrc!: number;
  colorSpace!: number;
  chromaLocation!: number;
  sampleAspectRatio!: [number, number];
  extradata!: Uint8Array;
  timeBase!: [number, number];
  frameRate!: number;
  rotation!: number;
  startTimeSec!: number;
  window!: [number, number] | null;
  pts!: BigInt64Array;
  dts!: BigInt64Array;
  duration!: BigInt64Array;
  flags!: Uint32Array;
  offsets!: Uint32Array;
  sizes!: Uint32Array;
  data!: Uint8Array;

  constructor(init: VideoPacketsInit) {
    Object.assign(this, init);
  }

  /** Number of packets. */
  get numPackets(): number {
    return this.sizes.length;
  }

  /** Indices of keyframe packets. */
  get keyframeIndices(): number[] {
    const out: number[] = [];
    for (let i = 0; i < this.flags.length; i++) if (this.flags[i] & 1) out.push(i);
    return out;
  }

  /** The payload of packet `i` (a view, no copy). */
  packet(i: number): Uint8Array {
    return this.data.subarray(this.offsets[i], this.offsets[i] + this.sizes[i]);
  }

  /** Presentation time of packet `i` in seconds (its dts when it has no pts), or null when it has neither. */
  ptsSeconds(i: number): number | null {
    const t = this.pts[i] !== NOPTS ? this.pts[i] : this.dts[i];
    return t === NOPTS ? null : ptsToSeconds(t, this.timeBase);
  }

  /** True when a frame presented at `seconds` belongs to this object's window (always, for a whole stream). */
  inWindow(seconds: number): boolean {
    return inWindow(this.window, seconds);
  }

  /** The versioned binary form (layout in `src/media/packet_format.ts`); one copy of the payload. */
  serialize(): Uint8Array<ArrayBuffer> {
    return encodePackets(this);
  }

  /** Parses {@link serialize}'s output; throws `ProtocolError` on anything malformed (never reads out of bounds). */
  static deserialize(bytes: Uint8Array): VideoPackets {
    return new VideoPackets(decodePackets(bytes));
  }

  /** The buffers to list as transferables when posting this object to a Worker (moves, no copies). */
  transferables(): ArrayBuffer[] {
    const buffers = [
      this.pts,
      this.dts,
      this.duration,
      this.flags,
      this.offsets,
      this.sizes,
      this.data,
      this.extradata,
    ]
      .map((a) => a.buffer as ArrayBuffer);
    return [...new Set(buffers)];
  }

  /** Rebuilds a VideoPackets from the plain object `postMessage` delivers (class identity is lost in transit). */
  static fromStructured(obj: VideoPacketsInit): VideoPackets {
    return obj instanceof VideoPackets ? obj : new VideoPackets(obj);
  }
}
