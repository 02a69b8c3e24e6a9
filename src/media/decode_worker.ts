/**
 * Decode functions for a `WorkerPool` (`new WorkerPool(import.meta.resolve("./decode_worker.ts"))`): each Worker
 * keeps its own FFmpeg, decoder and scaler between calls. Results carry their buffers as transferables (the
 * pool's convention in `src/pipeline/transfer.ts`), so frames move to the caller without a copy.
 *
 * ```ts
 * const pool = new WorkerPool(import.meta.resolve("sluice/src/media/decode_worker.ts"), { size: 2 });
 * const frames = await pool.call<VideoFrames>("decode", [packets, { width: 112, height: 112 }], packets.transferables());
 * ```
 * @module
 */
import { type DecodeOptions, decodeVideoSync, releaseDecoder } from "./decode.ts";
import { transferables, type VideoFrames } from "./frames.ts";
import { VideoPackets, type VideoPacketsInit } from "./packets.ts";
import { demuxVideoSync } from "./demux.ts";
import { transferable, type Transferring } from "../pipeline/transfer.ts";

/** Decodes `packets` (a `VideoPackets` as `postMessage` delivers it) in this Worker; see `decodeVideo`. */
export function decode(packets: VideoPacketsInit, opts: DecodeOptions = {}): Transferring<VideoFrames> {
  const frames = decodeVideoSync(VideoPackets.fromStructured(packets), opts);
  return transferable(frames, transferables(frames));
}

/**
 * Demuxes and decodes a whole file (or one window of it) in this Worker: the two steps a caller without a
 * separate demux stage needs, with no packet transfer between them.
 */
export function decodeFile(
  path: string,
  opts: DecodeOptions & { window?: [number, number]; streamIndex?: number } = {},
): Transferring<VideoFrames> {
  const [packets] = demuxVideoSync(path, { window: opts.window, streamIndex: opts.streamIndex });
  const frames = decodeVideoSync(packets, opts);
  return transferable(frames, transferables(frames));
}

/** Frees this Worker's cached decoder and scaler; the pool calls it before terminating the Worker. */
export function release(): void {
  releaseDecoder();
}
