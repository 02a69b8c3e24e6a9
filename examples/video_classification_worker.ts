/**
 * Worker module for examples/video_classification.ts: its demux and decode stages run these functions in
 * `WorkerPool`s (one call per clip; the item moves to the Worker and the result moves back, not copied).
 * @module
 */
import {
  decodeVideo,
  demuxVideo,
  type MediaInput,
  releaseDecoder,
  type VideoFrames,
  type VideoPackets,
} from "@sluice/sluice/media";
import { transferable, type Transferring } from "@sluice/sluice/pipeline";

/** One planned clip: where its video is (a path, or the bytes of a fetched URL), its window and label. */
export interface ClipTask {
  /** The video. */
  src: MediaInput;
  /** The clip's time window `[start, end)`, seconds. */
  window: [number, number];
  /** The video's class. */
  label: number;
  /** Frames per clip. */
  numFrames: number;
  /** Output width and height. */
  size: number;
}

/** A clip task with its packets cut. */
export interface DemuxedClip extends ClipTask {
  /** The packets of `window` (from the keyframe before it). */
  packets: VideoPackets;
}

/** A decoded clip. */
export interface ClipFrames {
  /** The frames, `[T, H, W, 3]`. */
  frames: VideoFrames;
  /** The video's class. */
  label: number;
  /** Where it came from, for messages. */
  source: string;
}

/** Cuts the clip's packets out of its video. */
export async function demuxClip(task: ClipTask): Promise<Transferring<DemuxedClip>> {
  const packets = await demuxVideo(task.src, { window: task.window });
  // A class instance is not scanned for buffers: list them (the packets' payload moves to the decode Worker).
  return transferable({ ...task, src: "", packets }, packets.transferables());
}

/** Decodes `numFrames` consecutive frames from the window's start, resized to `size`×`size` RGB. */
export async function decodeClip(item: DemuxedClip): Promise<ClipFrames> {
  const frames = await decodeVideo(item.packets, {
    width: item.size,
    height: item.size,
    numFrames: item.numFrames,
  });
  return { frames, label: item.label, source: frames.source };
}

/** Frees this Worker's cached decoder; the pool calls it before terminating the Worker. */
export function release(): void {
  releaseDecoder();
}
