/**
 * The decoder seam of the clip pass, {@link ClipPassDecoder}, with the shapes a pass takes and gives: the decode
 * options it follows ({@link ResolvedOptions}), its outputs ({@link PassOutput}) and what it did for each
 * ({@link OutputRun}, {@link PassRun}). Types only, below both decoders.
 * @module
 */
import type { PixelFormat } from "./frames.ts";
import type { FrameSampling } from "./frame_select.ts";
import type { VideoPackets } from "./packets.ts";
import type { DeviceFrames, FrameDestination, FrameWriter } from "./frame_writer.ts";

/** The decode options a pass follows, checked and with their defaults (see `DecodeOptions` in `decode.ts`). */
export interface ResolvedOptions {
  pixelFormat: PixelFormat;
  sampling: FrameSampling;
  numFrames: number;
  threads: number;
  skipNonRef: boolean;
  skipUnshown: boolean;
  onCorrupt: "skip" | "error";
  flags: number;
}

/** One output of a pass: its own packets among the pass's, its window, and where its frames go. */
export interface PassOutput {
  /**
   * Its own packets `[from, to)` among the pass's: what the demuxer cuts for its window alone. They decide its
   * positions (the stream's extent, what the window can hold) exactly as when it is decoded alone; the frames of
   * the other packets are offered to its selector too, which keeps the same frames (earlier ones are before its
   * start keyframe, so before its window; later ones after its last position or its window).
   */
  range: readonly [number, number];
  /** Its window `[start, end)` seconds, or null for the whole stream. */
  window: readonly [number, number] | null;
  /** Region, size and format of its frames. */
  writer: FrameWriter;
  /** Where its frame `k` goes (`dest.offset + k·writer.frameSize`); null: a buffer grown as needed. */
  dest: FrameDestination | null;
}

/** What a pass did for one output. */
export interface OutputRun {
  /** The buffer holding its frames and the element offset of its frame 0. */
  data: Uint8Array | Float32Array;
  offset: number;
  /** Time of each of its frames (the grid time when resampling). */
  pts: Float64Array;
  /**
   * The presentation time of the frame each position shows (its own, not the grid's): what the delivery rule
   * checks (`src/loader/decode/clip_check.ts`).
   */
  frameTimes: Float64Array;
  /**
   * The index in the stream's presentation order of the frame each position shows (`frame_index.ts`); null when
   * the packets cannot tell.
   */
  frameIndex: Int32Array | null;
  /** Why this output failed (its frames are not valid; the pass's other outputs are unaffected). */
  error?: unknown;
}

/** What a pass did: per output, and the work of the pass as a whole. */
export interface PassRun {
  /** One entry per output, in the order given. */
  outputs: OutputRun[];
  /** Frames the decoder produced (over both attempts when a skipping pass had to start over). */
  decodedFrames: number;
  /** Frames left undecoded because no output shows them. */
  skippedFrames: number;
  /** Packets the decoder rejected, and the first rejection's message. */
  failedPackets: number;
  firstFailure: string;
}

/**
 * A decoder as the loader's clip pass (`src/loader/decode/clip_pass.ts`) sees it, after torchcodec's `DeviceInterface`:
 * one decode pass over a run of packets for several outputs, and the few things the generic pass asks of a
 * device. Output `k` of a pass gets exactly the frames it gets when decoded alone from its own packets; a failure
 * that concerns one output is its {@link OutputRun.error}; a failure of the decoder throws. The CPU implements
 * it in `decode_pass.ts` (`cpuPassDecoder`), NVDEC in `src/nvdec/pass_decoder.ts`; the loader picks one per
 * clip by its spec (`src/loader/decode/devices.ts`).
 */
export interface ClipPassDecoder {
  /** Which decoder this is. */
  readonly kind: "cpu" | "nvdec";
  /** Decodes `p` for `outputs` (one {@link OutputRun} each, in order). */
  decode(p: VideoPackets, o: ResolvedOptions, outputs: readonly PassOutput[]): PassRun;
  /** Whether it can write a clip into device memory (a destination with {@link FrameDestination.device}). */
  acceptsDevice(dest: DeviceFrames): boolean;
  /**
   * Fills frames `filled .. numFrames - 1` of `dest` with copies of frame `filled - 1` (a clip's held and padded
   * frames), in host or (where {@link acceptsDevice}) device memory; `frameSize`: one frame's elements.
   */
  repeatLastFrame(dest: FrameDestination, filled: number, numFrames: number, frameSize: number): void;
  /** Frees this thread's cached decoder (the CPU's: and its scaler); a decode Worker calls it before it ends. */
  release(): void;
}
