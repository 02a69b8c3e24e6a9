/**
 * `FrameWriter`: turns one decoded `AVFrame` into one output frame in a caller's buffer (`Uint8Array`, or
 * `Float32Array` for normalised output) at a given element offset: region, size, format, orientation, mirror and
 * sample type in as few passes as possible.
 *
 * - swscale does the region (pointed at inside the frame, no copy; see `Scaler.scaleInto`), the resize and the
 *   colour conversion, straight into the destination when nothing else is asked.
 * - Rotation (the display matrix), mirroring and `float32` normalisation are one more pass over the *small* output
 *   (`orient.ts`): the frame is scaled first, at its coded orientation (for a quarter turn, to the output size with
 *   width and height swapped), then turned into place, so a 1080p phone frame is rotated at 112×112, not at 1080p.
 *   Regions are chosen in displayed coordinates and mapped back to coded ones (`codedRect`).
 *
 * The geometry is fixed at the first frame (a stream keeps its size): `init` computes the region and the output
 * size from the frame's size.
 * @module
 */

import { InvalidArgumentError } from "../errors.ts";
import type { CropRect } from "./crop.ts";
import { frameLayout, type PixelFormat, type PlaneLayout } from "./frames.ts";
import { codedRect, type Normalisation, orientedSize, orientPlane, quarterTurns } from "./orient.ts";
import type { Scaler, ScaleTarget } from "./scale.ts";
import { frame as avframe, type Ptr } from "./structs.ts";

/** A buffer frames are written into, with the element offset of the first. */
export interface FrameDestination {
  data: Uint8Array | Float32Array;
  /** Element offset (bytes for a `Uint8Array`) of the first frame. */
  offset: number;
  /**
   * The frames go to GPU memory instead (NVDEC's pass only; `data` is then empty and unused): a batch slot's
   * clip place on a CUDA device.
   */
  device?: DeviceFrames;
}

/**
 * A clip's place in device memory: `address` on CUDA device `device`; `planesFirst`: the clip is laid out
 * `[3, T, H, W]` (its part of a `"BCTHW"` batch) instead of frame after frame.
 */
export interface DeviceFrames {
  device: number;
  address: bigint;
  planesFirst: boolean;
}

/**
 * Fills frames `filled .. numFrames - 1` of a host destination with copies of frame `filled - 1` (a clip's held
 * and padded frames); `frameSize`: one frame's elements. Both decoders' `repeatLastFrame` for host memory.
 */
export function repeatLastFrameOnHost(
  dest: FrameDestination,
  filled: number,
  numFrames: number,
  frameSize: number,
): void {
  const last = dest.offset + (filled - 1) * frameSize;
  for (let k = filled; k < numFrames; k++) {
    dest.data.copyWithin(dest.offset + k * frameSize, last, last + frameSize);
  }
}

/** What a {@link FrameWriter} produces. */
export interface WriterSpec {
  format: PixelFormat;
  /**
   * Output size, as displayed (after `rotation`). Give one of them to keep the aspect ratio of the region (the
   * other is rounded to the nearest integer, at least 1); neither for the region's own size.
   */
  width?: number;
  height?: number;
  /** Counter-clockwise degrees to turn the frames by (ffprobe's sign; 0 keeps coded orientation). */
  rotation: number;
  /** Mirror left–right (after turning). */
  mirror: boolean;
  /** The region of the displayed frame to keep, chosen from its size (null or absent: the whole frame). */
  region?: (width: number, height: number) => CropRect | null;
  /** swscale flags. */
  flags: number;
  /** `float32` output: how bytes become samples, per channel (R, G, B); null for bytes. `rgb24(-planar)` only. */
  norm: Normalisation | null;
}

/**
 * Bytes kept free after the last row swscale writes: its SIMD converters may write whole vector groups past the
 * end of a row (FFmpeg's own frames have this padding), which must not run off the end of a buffer.
 */
function tailSlack(width: number): number {
  return 4 * width + 256;
}

/** Writes decoded frames into a destination; see the module docs. Holds no native resource. */
export class FrameWriter {
  /** Output size and layout, set by {@link init}. */
  width = 0;
  height = 0;
  planes: PlaneLayout[] = [];
  /** Elements per output frame. */
  frameSize = 0;
  /** The region kept, in displayed coordinates (null: the whole frame), and the displayed frame size. */
  region: CropRect | null = null;
  displayed: [number, number] = [0, 0];
  readonly spec: WriterSpec;
  readonly #scaler: Scaler | null;
  readonly #turns: 0 | 90 | 180 | 270;
  #coded: CropRect | null = null;
  /** The scaled frame before turning (coded orientation), when a second pass is needed. */
  #pre: { target: ScaleTarget; data: Uint8Array } | null = null;
  #target: ScaleTarget | undefined;
  #tail: Uint8Array | undefined;

  /** `scaler` does the first pass of {@link write}; without one (NVDEC), only {@link place} is available. */
  constructor(spec: WriterSpec, scaler: Scaler | null) {
    if (spec.norm !== null && spec.format !== "rgb24" && spec.format !== "rgb24-planar") {
      throw new InvalidArgumentError(`float32 output needs rgb24 or rgb24-planar, not ${spec.format}`);
    }
    this.spec = spec;
    this.#scaler = scaler;
    this.#turns = quarterTurns(spec.rotation);
  }

  /** True once {@link init} ran. */
  get ready(): boolean {
    return this.#target !== undefined;
  }

  /** Fixes the geometry for frames of `codedWidth`×`codedHeight` (as decoded). */
  init(codedWidth: number, codedHeight: number): void {
    const s = this.spec;
    const [dw, dh] = orientedSize(codedWidth, codedHeight, this.#turns);
    this.displayed = [dw, dh];
    this.region = s.region?.(dw, dh) ?? null;
    const rw = this.region?.width ?? dw, rh = this.region?.height ?? dh;
    let { width, height } = s;
    if (width === undefined && height === undefined) [width, height] = [rw, rh];
    else if (width === undefined) width = Math.max(1, Math.round((height! * rw) / rh));
    else if (height === undefined) height = Math.max(1, Math.round((width * rh) / rw));
    this.width = width;
    this.height = height!;
    const { planes, frameSize } = frameLayout(s.format, this.width, this.height);
    this.planes = planes;
    this.frameSize = frameSize;
    this.#target = { format: s.format, width: this.width, height: this.height, planes };
    const r = this.region;
    this.#coded = r === null ? null : (() => {
      const [left, top, w, h] = codedRect(
        [r.left, r.top, r.width, r.height],
        codedWidth,
        codedHeight,
        this.#turns,
      );
      return { left, top, width: w, height: h };
    })();
    if (this.#turns !== 0 || s.mirror || s.norm !== null) {
      const [pw, ph] = orientedSize(this.width, this.height, this.#turns);
      const pre = frameLayout(s.format, pw, ph);
      this.#pre = {
        target: { format: s.format, width: pw, height: ph, planes: pre.planes },
        data: new Uint8Array(pre.frameSize + tailSlack(pw)),
      };
    }
  }

  /** Writes frame `f` (an `AVFrame`) as the output frame at element `offset` of `dest`. */
  write(f: Ptr, dest: Uint8Array | Float32Array, offset: number, source: string): void {
    if (this.#target === undefined) this.init(avframe.width(f), avframe.height(f));
    if (this.#scaler === null) throw new InvalidArgumentError("FrameWriter.write needs a scaler");
    const pre = this.#pre;
    if (pre !== null) {
      this.#scaler!.scaleInto(f, pre.data, 0, pre.target, source, this.#coded);
      this.place(pre.data, pre.target.planes, dest, offset);
      return;
    }
    if (!(dest instanceof Uint8Array)) {
      throw new InvalidArgumentError(`${source}: a Float32Array destination needs float32 output (norm)`);
    }
    if (offset + this.frameSize + tailSlack(this.width) <= dest.length) {
      this.#scaler!.scaleInto(f, dest, offset, this.#target!, source, this.#coded);
      return;
    }
    // Too close to the end of the buffer for swscale's overrun: through a scratch frame.
    this.#tail ??= new Uint8Array(this.frameSize + tailSlack(this.width));
    this.#scaler!.scaleInto(f, this.#tail, 0, this.#target!, source, this.#coded);
    dest.set(this.#tail.subarray(0, this.frameSize), offset);
  }

  /** The region in coded coordinates (null: the whole frame), set by {@link init}. */
  get codedRegion(): CropRect | null {
    return this.#coded;
  }

  /** The output size before turning (what a scaler working at coded orientation produces). */
  get codedSize(): [number, number] {
    return orientedSize(this.width, this.height, this.#turns);
  }

  /**
   * Second pass: turns, mirrors and converts a frame already scaled to {@link codedSize}, laid out as `from`
   * (this writer's format, or planar RGB for a packed RGB writer), into `dest` at element `offset` in this
   * writer's layout. Used after swscale here and after the copy from the GPU on the NVDEC path.
   */
  place(src: Uint8Array, from: PlaneLayout[], dest: Uint8Array | Float32Array, offset: number): void {
    const norm = this.spec.norm;
    const to = this.planes;
    const channel = (c: number) =>
      norm === null ? undefined : { scale: [norm.scale[c]], offset: [norm.offset[c]] };
    if (from.length === to.length) {
      const bpp = from[0].stride / from[0].width;
      for (let p = 0; p < from.length; p++) {
        const a = from[p], b = to[p];
        orientPlane(
          {
            data: src.subarray(a.offset),
            width: a.width,
            height: a.height,
            stride: a.stride,
            bytesPerPixel: bpp,
          },
          {
            data: dest.subarray(offset + b.offset),
            width: b.width,
            height: b.height,
            stride: b.stride,
            bytesPerPixel: bpp,
          },
          this.#turns,
          this.spec.mirror,
          from.length === 1 ? norm ?? undefined : channel(p),
        );
      }
      return;
    }
    if (from.length !== 3 || this.spec.format !== "rgb24") {
      throw new InvalidArgumentError(
        `FrameWriter.place: cannot write ${from.length} planes as ${this.spec.format}`,
      );
    }
    // Planar RGB into packed RGB: each plane into its channel of the interleaved pixels.
    const b = to[0];
    for (let c = 0; c < 3; c++) {
      const a = from[c];
      orientPlane(
        {
          data: src.subarray(a.offset),
          width: a.width,
          height: a.height,
          stride: a.stride,
          bytesPerPixel: 1,
        },
        {
          data: dest.subarray(offset + b.offset + c),
          width: b.width,
          height: b.height,
          stride: b.stride,
          bytesPerPixel: 1,
          pixelStride: 3,
        },
        this.#turns,
        this.spec.mirror,
        channel(c),
      );
    }
  }
}
