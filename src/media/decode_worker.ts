/**
 * A Worker module for a `WorkerPool` that decodes: each Worker keeps its own FFmpeg decoder and scaler between
 * calls. Results are plain objects whose buffers the pool moves to the caller (transferred, not copied).
 * Start a pool on it with {@link DECODE_WORKER}.
 * @module
 */
import { type DecodeOptions, decodeVideoSync, releaseDecoder } from "./decode.ts";
import type { VideoFrames } from "./frames.ts";
import { VideoPackets, type VideoPacketsInit } from "./packets.ts";
import { demuxVideoSync } from "./demux.ts";

/**
 * The URL of a Worker module for `new WorkerPool(DECODE_WORKER, { size })`. Its functions, for `pool.call`:
 * - `decode(packets, opts)`: `decodeVideo` of `VideoPackets` (transfer them: `packets.transferables()`);
 * - `decodeFile(path, opts)`: demux (the whole stream, or `opts.window`) and decode in one call;
 * - `release()`: frees the Worker's cached decoder (the pool calls it before terminating a Worker).
 */
export const DECODE_WORKER: string = import.meta.url;

/**
 * Decodes `packets` (a `VideoPackets` as `postMessage` delivers it) in this Worker; see `decodeVideo`.
 * @throws {MediaError} for packets the decoder cannot open or decode (with `onCorrupt: "error"`).
 * @throws {InvalidArgumentError} for options out of range.
 */
export function decode(packets: VideoPacketsInit, opts: DecodeOptions = {}): VideoFrames {
  return decodeVideoSync(VideoPackets.fromStructured(packets), opts);
}

/**
 * Demuxes and decodes a whole file (or one window of it) in this Worker: the two steps a caller without a
 * separate demux stage needs, with no packet transfer between them.
 * @throws {MediaError} for a file that cannot be read, demuxed or decoded, or a window outside the stream.
 * @throws {InvalidArgumentError} for options out of range.
 */
export function decodeFile(
  path: string,
  opts: DecodeOptions & { window?: [number, number]; streamIndex?: number } = {},
): VideoFrames {
  const [packets] = demuxVideoSync(path, { window: opts.window, streamIndex: opts.streamIndex });
  return decodeVideoSync(packets, opts);
}

/** Frees this Worker's cached decoder and scaler; the pool calls it before terminating the Worker. */
export function release(): void {
  releaseDecoder();
}
