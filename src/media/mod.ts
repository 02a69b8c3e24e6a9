/**
 * Media on the CPU, one call per step: {@link probe} what a file holds, {@link demuxVideo} the packets of its
 * video stream (whole, or cut to time windows, from one open of the file), {@link decodeVideo} them into frames
 * (resized, resampled to a frame rate, cropped, rotated, in the pixel layout asked for), with libavformat,
 * libavcodec and libswscale called through `Deno.dlopen`.
 *
 * Each call runs synchronous FFI on the calling thread: run it inside Workers for parallelism, e.g. a
 * `WorkerPool` (`@sluice/sluice/pipeline`) on {@link DECODE_WORKER}. {@link VideoPackets} move between Workers
 * without copies and between processes as bytes (`serialize()`). Times are absolute seconds (`pts × timeBase`,
 * ffprobe's `pts_time`); a window `[start, end)` holds the frames presented in it. Failures are `MediaError`s
 * naming the file, the operation and FFmpeg's message.
 *
 * @example Probe, demux a window, decode it to 8 RGB frames of 112×112
 * ```ts
 * import { decodeVideo, demuxVideo, frameAt, probe } from "@sluice/sluice/media";
 *
 * // Any video; one from the ffmpeg CLI: ffmpeg -f lavfi -i testsrc2=size=320x240:rate=25 -t 4 clip.mp4
 * const info = await probe("clip.mp4");
 * console.log(info.video?.codec, info.video?.width, info.video?.height, info.durationSec);
 *
 * const packets = await demuxVideo("clip.mp4", { window: [1, 2] });
 * const frames = await decodeVideo(packets, { width: 112, height: 112, numFrames: 8, sampling: { kind: "uniform" } });
 * console.log(frames.shape, frames.pts); // [8, 112, 112, 3], presentation times in [1, 2)
 * const first: Uint8Array = frameAt(frames, 0);
 * console.log(first.length);
 * ```
 *
 * @example Decode in Workers
 * ```ts
 * import { DECODE_WORKER, demuxVideo, type VideoFrames } from "@sluice/sluice/media";
 * import { WorkerPool } from "@sluice/sluice/pipeline";
 *
 * await using pool = new WorkerPool(DECODE_WORKER, { size: 2 });
 * const packets = await demuxVideo("clip.mp4");
 * // the packets' buffers move to the Worker (transferred, not copied); the frames move back
 * const frames = await pool.call<VideoFrames>("decode", [packets, { width: 112, height: 112 }], packets.transferables());
 * const whole = await pool.call<VideoFrames>("decodeFile", ["clip.mp4", { window: [0, 1], pixelFormat: "gray" }]);
 * console.log(frames.shape, whole.shape);
 * ```
 * @module
 */

export {
  type AudioStreamInfo,
  type MediaInfo,
  probe,
  type ProbeOptions,
  type StreamInfo,
  type VideoStreamInfo,
} from "./probe.ts";
export { type DemuxOptions, demuxVideo, type TimeWindow } from "./demux.ts";
export {
  type CodecInfo,
  inWindow,
  NOPTS,
  ptsToSeconds,
  VideoPackets,
  type VideoPacketsInit,
} from "./packets.ts";
export { PACKETS_FORMAT_VERSION } from "./packet_format.ts";
export type { MediaInput } from "./source.ts";
export { type DecodeOptions, decodeVideo, releaseDecoder } from "./decode.ts";
export type { SamplingOptions } from "./frame_select.ts";
export { audioSampleRange, type ClipAudio } from "./audio.ts";
export type { CropRect } from "./crop.ts";
export { frameAt, type PixelFormat, type PlaneLayout, type VideoFrames } from "./frames.ts";
export { DECODE_WORKER } from "./decode_worker.ts";
export { type FfmpegInfo, ffmpegInfo } from "./ffmpeg.ts";
