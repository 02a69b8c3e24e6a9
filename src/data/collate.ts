/**
 * `collate`: joins decoded clips into one batch: one `Uint8Array` shaped `[B, T, H, W, 3]` (layout `"BTHWC"`,
 * from packed `rgb24` clips) or `[B, 3, T, H, W]` (layout `"BCTHW"`, from `rgb24-planar` clips, whose frames are
 * `[3, H, W]` each and are regrouped plane by plane), plus the labels as an `Int32Array` and per-clip metadata.
 * A clip with fewer than `T` frames (the video ended inside the window) is padded by repeating its last frame;
 * `padded` in its metadata says how many frames were added. A batch is `Disposable` (see {@link Batch}).
 * @module
 */

import { InvalidArgumentError } from "../errors.ts";
import { releaseBuffers } from "../pipeline/transfer.ts";

/** Memory layout of a batch. */
export type BatchLayout = "BTHWC" | "BCTHW";

/** What one clip of a batch is. */
export interface ClipMeta {
  /** Video path or URL. */
  path: string;
  /** Index of the video in the dataset. */
  video: number;
  /** Class index. */
  label: number;
  /** The window the sampler asked for, seconds. */
  start: number;
  end: number;
  /** Presentation time of each of the clip's frames, seconds (padding repeats the last). */
  pts: number[];
  /** Frames added by repeating the last one. */
  padded: number;
}

/** One decoded clip, as the decode stage hands it to `collate`. */
export interface DecodedClip {
  meta: Omit<ClipMeta, "pts" | "padded">;
  /** `frames × frameSize` samples: packed RGB (`[T, H, W, 3]`) or planar RGB (`[T, 3, H, W]`). */
  data: Uint8Array | Float32Array;
  /** Presentation time of each frame, seconds. */
  pts: Float64Array | number[];
  width: number;
  height: number;
}

/**
 * A batch of clips. Disposable: `for await (using batch of loader)` (or `batch[Symbol.dispose]()`) frees its
 * pixels and labels as soon as the step is done instead of at V8's next garbage collection, which keeps the
 * loader's memory flat at its working set. After that, `data` and `labels` read as empty. Batches that are
 * kept (e.g. by `cacheLoader`) must simply not be disposed.
 */
export interface Batch extends Disposable {
  /** Pixels; see {@link BatchLayout} and `shape`. */
  data: Uint8Array;
  /** `[B, T, H, W, 3]` or `[B, 3, T, H, W]`. */
  shape: number[];
  layout: BatchLayout;
  /** `labels[b]` is the class of clip `b`. */
  labels: Int32Array;
  clips: ClipMeta[];
}

/** Collates clips into a batch of `numFrames` frames per clip; see the module docs. */
export function collate(clips: readonly DecodedClip[], numFrames: number, layout: BatchLayout): Batch {
  if (clips.length === 0) throw new InvalidArgumentError("collate: no clips");
  const { width: W, height: H } = clips[0];
  const T = numFrames, B = clips.length, frameSize = W * H * 3, plane = W * H;
  const data = new Uint8Array(B * T * frameSize);
  const labels = new Int32Array(B);
  const metas: ClipMeta[] = [];
  for (const [b, c] of clips.entries()) {
    if (c.width !== W || c.height !== H) {
      throw new InvalidArgumentError(
        `collate: clip ${c.meta.path} is ${c.width}x${c.height}, batch is ${W}x${H}`,
      );
    }
    const have = Math.floor(c.data.length / frameSize);
    if (have === 0) {
      throw new InvalidArgumentError(
        `collate: clip ${c.meta.path} [${c.meta.start}, ${c.meta.end}) has no frames`,
      );
    }
    const pts: number[] = [];
    for (let t = 0; t < T; t++) {
      const src = Math.min(t, have - 1);
      pts.push(c.pts[src]);
      const frame = c.data.subarray(src * frameSize, (src + 1) * frameSize);
      if (layout === "BTHWC") {
        data.set(frame, (b * T + t) * frameSize);
      } else {
        for (let ch = 0; ch < 3; ch++) {
          data.set(frame.subarray(ch * plane, (ch + 1) * plane), ((b * 3 + ch) * T + t) * plane);
        }
      }
    }
    labels[b] = c.meta.label;
    metas.push({ ...c.meta, pts, padded: Math.max(0, T - have) });
  }
  const shape = layout === "BTHWC" ? [B, T, H, W, 3] : [B, 3, T, H, W];
  return {
    data,
    shape,
    layout,
    labels,
    clips: metas,
    [Symbol.dispose]() {
      releaseBuffers([this.data, this.labels]);
    },
  };
}
