/**
 * Worker functions of the video loader, run in `WorkerPool`s: `demuxClips` cuts one video into the packets of its
 * clips (one open of the file for all of them), `decodeClip` decodes one clip's packets into resized RGB frames,
 * `decodeClipNvdec` does the same on an NVIDIA GPU (NVDEC) and copies the frames to host memory.
 * Both are thin adapters over `src/media/demux.ts` and `src/media/decode.ts` that carry each clip's metadata
 * along, and return their buffers as transferables so nothing is copied on the way back.
 * @module
 */

import { decodeVideoSync, releaseDecoder } from "../media/decode.ts";
import { type NativeObjectCounts, nativeObjectCounts } from "../media/av_objects.ts";
import { decodeVideoNvdecSync, releaseNvdecDecoder } from "../nvdec/decoder.ts";
import { demuxVideoSync } from "../media/demux.ts";
import { VideoPackets, type VideoPacketsInit } from "../media/packets.ts";
import { releaseBuffers, transferable, type Transferring } from "../pipeline/transfer.ts";
import type { ClipBase, DecodedClip } from "./collate.ts";
import type { ClipSpec } from "./clip_spec.ts";

export type { ClipBase };

/** One video with the clips to cut from it, after fetching. */
export interface VideoTask {
  epoch: number;
  video: number;
  path: string;
  /** Each clip's metadata, window (`start`, `end`) included, as the loader planned it. */
  clips: ClipBase[];
  /** The bytes (URLs, after fetching) or the local path itself. */
  src?: Uint8Array | string;
  /** What each clip becomes (travels with each clip). */
  spec: ClipSpec;
}

/** The packets of one clip. */
export interface ClipPackets {
  meta: ClipBase;
  packets: VideoPacketsInit;
  spec: ClipSpec;
}

/** Demuxes every clip window of one video; see the module docs. */
export function demuxClips(task: VideoTask): Transferring<ClipPackets[]> {
  const src = task.src ?? task.path;
  const windows = task.clips.map((c): [number, number] => [c.start, c.end]);
  const results = demuxVideoSync(src, { windows });
  const out = results.map((packets, i): ClipPackets => ({ meta: task.clips[i], packets, spec: task.spec }));
  return transferable(out, results.flatMap((p) => p.transferables()));
}

/** Decodes one clip to `numFrames` RGB frames of `width`×`height`; see the module docs. */
export function decodeClip(item: ClipPackets): Transferring<DecodedClip> {
  const opts = decodeOptions(item.spec);
  const frames = decodeVideoSync(VideoPackets.fromStructured(item.packets), {
    width: opts.width,
    height: opts.height,
    pixelFormat: opts.planar ? "rgb24-planar" : "rgb24",
    frameRate: opts.frameRate,
    numFrames: opts.numFrames,
  });
  // The packets came here by transfer and are spent: free them now rather than at this Worker's next GC.
  releaseBuffers(item.packets);
  const clip: DecodedClip = {
    meta: item.meta,
    data: frames.data,
    pts: frames.pts,
    width: frames.width,
    height: frames.height,
  };
  return transferable(clip, [frames.data.buffer as ArrayBuffer, frames.pts.buffer as ArrayBuffer]);
}

/**
 * Decodes one clip with NVDEC (`src/nvdec`), resized on the GPU, then copies it to host memory as planar
 * `[T, 3, H, W]` (or packed `[T, H, W, 3]`) RGB. With `frameRate`, frames are picked per output slot the way
 * the CPU decoder resamples (the latest frame whose time rounds to a slot at or before it); without, the first
 * `numFrames` frames of the window are kept.
 */
export async function decodeClipNvdec(item: ClipPackets): Promise<Transferring<DecodedClip>> {
  const opts = decodeOptions(item.spec);
  using frames = decodeVideoNvdecSync(VideoPackets.fromStructured(item.packets), {
    width: opts.width,
    height: opts.height,
    pixelFormat: "rgb-planar",
  });
  const host = await frames.toHost();
  const picks = pickFrames(frames.pts, item.meta.start, item.meta.end, opts.numFrames, opts.frameRate);
  const plane = opts.width * opts.height, frameSize = 3 * plane;
  const data = new Uint8Array(picks.length * frameSize);
  const pts = new Float64Array(picks.length);
  for (const [k, [src, t]] of picks.entries()) {
    pts[k] = t;
    const frame = host.subarray(src * frameSize, (src + 1) * frameSize);
    if (opts.planar) {
      data.set(frame, k * frameSize);
      continue;
    }
    const out = data.subarray(k * frameSize, (k + 1) * frameSize);
    for (let i = 0; i < plane; i++) {
      out[i * 3] = frame[i];
      out[i * 3 + 1] = frame[plane + i];
      out[i * 3 + 2] = frame[2 * plane + i];
    }
  }
  const clip: DecodedClip = { meta: item.meta, data, pts, width: opts.width, height: opts.height };
  return transferable(clip, [data.buffer, pts.buffer]);
}

/** The parts of a spec these decoders follow so far. */
function decodeOptions(spec: ClipSpec) {
  const frameRate = spec.sampling.kind === "rate" ? spec.sampling.frameRate : undefined;
  return {
    numFrames: spec.numFrames,
    width: spec.width,
    height: spec.height,
    planar: spec.planar,
    frameRate,
  };
}

/** `[source frame index, output pts]` for each output frame; see {@link decodeClipNvdec}. */
export function pickFrames(
  pts: Float64Array,
  start: number,
  end: number,
  numFrames: number,
  frameRate?: number,
): [number, number][] {
  const inWindow: number[] = [];
  for (let i = 0; i < pts.length; i++) if (pts[i] >= start - 1e-9 && pts[i] < end) inWindow.push(i);
  inWindow.sort((a, b) => pts[a] - pts[b]);
  if (frameRate === undefined) return inWindow.slice(0, numFrames).map((i) => [i, pts[i]]);
  const out: [number, number][] = [];
  let j = 0;
  for (let k = 0; k < numFrames && start + k / frameRate < end && inWindow.length > 0; k++) {
    while (j + 1 < inWindow.length && Math.round((pts[inWindow[j + 1]] - start) * frameRate) <= k) j++;
    out.push([inWindow[j], start + k / frameRate]);
  }
  return out;
}

/** What {@link memoryReport} returns: this Worker's V8 heap and external memory, and its FFmpeg objects. */
export interface WorkerMemory {
  heapTotal: number;
  heapUsed: number;
  external: number;
  native: NativeObjectCounts;
}

/**
 * This Worker's memory (`Deno.memoryUsage()` without the process-wide RSS) and live FFmpeg objects; with `gc`
 * (and `--v8-flags=--expose-gc`), after a full garbage collection of this Worker's heap.
 */
export function memoryReport(gc = false): WorkerMemory {
  if (gc) (globalThis as { gc?: () => void }).gc?.();
  const { heapTotal, heapUsed, external } = Deno.memoryUsage();
  return { heapTotal, heapUsed, external, native: nativeObjectCounts() };
}

/** Frees this Worker's cached CPU decoder and scaler and its NVDEC decoder; the pool calls it before terminating. */
export function release(): void {
  try {
    releaseDecoder();
  } finally {
    releaseNvdecDecoder();
  }
}
