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
import type { CodecInfo, VideoPacketsInit } from "./packet_info.ts";

export type { CodecInfo, VideoPacketsInit };

/** FFmpeg's "no timestamp" (`AV_NOPTS_VALUE`, INT64_MIN) as stored in the packet table. */
export const NOPTS: bigint = -0x8000000000000000n;

/**
 * Seconds of a timestamp in `timeBase` units, computed as ffprobe computes `pts_time` (`t * (num / den)`).
 * @param t a timestamp (a packet table's entry, or a number of ticks)
 * @param timeBase the stream's time base `[num, den]`
 * @returns the time in seconds on the stream's timeline (no start time subtracted)
 * @example
 * ```ts
 * import { ptsToSeconds } from "@sluice/sluice/media";
 * ptsToSeconds(3003n, [1, 30000]); // 0.1001
 * ```
 */
export function ptsToSeconds(t: bigint | number, timeBase: readonly [number, number]): number {
  return Number(t) * (timeBase[0] / timeBase[1]);
}

/**
 * Whether a time lies in a window `[start, end)`; every time lies in a null window (the whole stream).
 * @param window `[start, end)` in seconds, or null for the whole stream
 * @param seconds a presentation time in seconds
 * @returns true when `start <= seconds < end`, or the window is null
 */
export function inWindow(window: readonly [number, number] | null, seconds: number): boolean {
  return window === null || (seconds >= window[0] && seconds < window[1]);
}

/** The compressed packets of one video stream or window. See the module docs and {@link VideoPacketsInit}. */
export class VideoPackets implements VideoPacketsInit {
  /** See {@link VideoPacketsInit.source}. */
  source!: string;
  /** See {@link VideoPacketsInit.streamIndex}. */
  streamIndex!: number;
  /** See {@link CodecInfo.codec}. */
  codec!: string;
  /** See {@link CodecInfo.codecId}. */
  codecId!: number;
  /** See {@link CodecInfo.codecTag}. */
  codecTag!: number;
  /** See {@link CodecInfo.profile}. */
  profile!: number;
  /** See {@link CodecInfo.level}. */
  level!: number;
  /** See {@link CodecInfo.width}. */
  width!: number;
  /** See {@link CodecInfo.height}. */
  height!: number;
  /** See {@link CodecInfo.format}. */
  format!: number;
  /** See {@link CodecInfo.bitsPerRawSample}. */
  bitsPerRawSample!: number;
  /** See {@link CodecInfo.fieldOrder}. */
  fieldOrder!: number;
  /** See {@link CodecInfo.colorRange}. */
  colorRange!: number;
  /** See {@link CodecInfo.colorPrimaries}. */
  colorPrimaries!: number;
  /** See {@link CodecInfo.colorTrc}. */
  colorTrc!: number;
  /** See {@link CodecInfo.colorSpace}. */
  colorSpace!: number;
  /** See {@link CodecInfo.chromaLocation}. */
  chromaLocation!: number;
  /** See {@link CodecInfo.sampleAspectRatio}. */
  sampleAspectRatio!: [number, number];
  /** See {@link CodecInfo.extradata}. */
  extradata!: Uint8Array;
  /** See {@link VideoPacketsInit.timeBase}. */
  timeBase!: [number, number];
  /** See {@link VideoPacketsInit.frameRate}. */
  frameRate!: number;
  /** See {@link VideoPacketsInit.rotation}. */
  rotation!: number;
  /** See {@link VideoPacketsInit.startTimeSec}. */
  startTimeSec!: number;
  /** See {@link VideoPacketsInit.window}. */
  window!: [number, number] | null;
  /** See {@link VideoPacketsInit.endSec}. */
  endSec?: number;
  /** See {@link VideoPacketsInit.firstFrameIndex}. */
  firstFrameIndex?: number;
  /** See {@link VideoPacketsInit.pts}. */
  pts!: BigInt64Array;
  /** See {@link VideoPacketsInit.dts}. */
  dts!: BigInt64Array;
  /** See {@link VideoPacketsInit.duration}. */
  duration!: BigInt64Array;
  /** See {@link VideoPacketsInit.flags}. */
  flags!: Uint32Array;
  /** See {@link VideoPacketsInit.offsets}. */
  offsets!: Uint32Array;
  /** See {@link VideoPacketsInit.sizes}. */
  sizes!: Uint32Array;
  /** See {@link VideoPacketsInit.data}. */
  data!: Uint8Array;

  /**
   * Wraps the fields as they are (no copy, no check); see {@link VideoPackets.deserialize} for untrusted
   * bytes.
   * @param init the packet table, payload and codec parameters
   */
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

  /**
   * The payload of one packet.
   * @param i the packet's index, in decode order
   * @returns a view of its bytes in `data` (no copy)
   */
  packet(i: number): Uint8Array {
    return this.data.subarray(this.offsets[i], this.offsets[i] + this.sizes[i]);
  }

  /**
   * The presentation time of one packet.
   * @param i the packet's index, in decode order
   * @returns its pts in seconds (its dts when it has no pts), or null when it has neither
   */
  ptsSeconds(i: number): number | null {
    const t = this.pts[i] !== NOPTS ? this.pts[i] : this.dts[i];
    return t === NOPTS ? null : ptsToSeconds(t, this.timeBase);
  }

  /**
   * Whether a frame presented at a time belongs to these packets' window.
   * @param seconds a presentation time in seconds
   * @returns true when it lies in `window` (always, for a whole stream)
   */
  inWindow(seconds: number): boolean {
    return inWindow(this.window, seconds);
  }

  /**
   * The versioned binary form, for another process (layout in `src/media/packet_format.ts`).
   * @returns one buffer holding the table, the codec parameters and a copy of the payload
   */
  serialize(): Uint8Array<ArrayBuffer> {
    return encodePackets(this);
  }

  /**
   * Parses {@link serialize}'s output, checking every field before it can reach a decoder (never reads out of
   * bounds).
   * @param bytes untrusted bytes, e.g. from another process
   * @returns the packets, viewing `bytes`
   * @throws {ProtocolError} on anything malformed: a wrong version, a truncated table, offsets past the
   *   payload, codec parameters no demuxer produces
   */
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

  /**
   * Rebuilds a `VideoPackets` from the plain object `postMessage` delivers (class identity is lost in
   * transit).
   * @param obj the fields as a Worker received them (or a `VideoPackets`, returned as it is)
   * @returns a `VideoPackets` over the same buffers (no copy)
   */
  static fromStructured(obj: VideoPacketsInit): VideoPackets {
    return obj instanceof VideoPackets ? obj : new VideoPackets(obj);
  }
}
