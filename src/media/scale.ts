/**
 * `Scaler`: converts and resizes decoded `AVFrame`s with libswscale straight into a frame position of a caller's output
 * buffer (no intermediate frame). The colour handling follows the ffmpeg CLI's scale filter (FFmpeg 5.1
 * `vf_scale` with its defaults): the input matrix comes from the frame's `colorspace` (unknown → BT.601) and the
 * input range from the frame's `color_range` when set; so with the same flags the output is byte-identical to
 * `ffmpeg -i F -vf scale=W:H:flags=bilinear -pix_fmt rgb24`.
 * @module
 */
import { ffmpeg } from "./ffmpeg.ts";
import { ScaleContext } from "./av_objects.ts";
import { frame as avframe, pixelFormatInfo, type Ptr } from "./structs.ts";
import type { CropRect } from "./crop.ts";
import { MediaError } from "../errors.ts";
import type { PixelFormat, PlaneLayout } from "./frames.ts";

/** `SWS_FAST_BILINEAR`, `SWS_BILINEAR`, `SWS_BICUBIC`, `SWS_POINT`, `SWS_AREA`, `SWS_LANCZOS`. */
export const SWS_FLAGS = {
  fastBilinear: 1,
  bilinear: 2,
  bicubic: 4,
  point: 0x10,
  area: 0x20,
  lanczos: 0x200,
};

/** `AVCOL_RANGE_JPEG` (full range). */
const AVCOL_RANGE_JPEG = 2;
/** `AVCOL_SPC_BT470BG`, what `vf_scale` falls back to for an unknown matrix. */
const AVCOL_SPC_BT470BG = 5;

/** The FFmpeg pixel format written for each output format, and which output plane each FFmpeg plane is. */
const OUTPUT_FORMATS: Record<PixelFormat, { name: string; planeOrder: number[] }> = {
  "rgb24": { name: "rgb24", planeOrder: [0] },
  "bgr24": { name: "bgr24", planeOrder: [0] },
  "gray": { name: "gray", planeOrder: [0] },
  "yuv420p": { name: "yuv420p", planeOrder: [0, 1, 2] },
  // GBRP stores planes G, B, R; the output is R, G, B: FFmpeg plane 0 (G) goes to output plane 1, and so on.
  "rgb24-planar": { name: "gbrp", planeOrder: [1, 2, 0] },
};

const pixFmtIds = new Map<string, number>();

/** FFmpeg's `AVPixelFormat` number for a format name (cached). */
export function pixFmtId(name: string): number {
  let id = pixFmtIds.get(name);
  if (id === undefined) {
    id = ffmpeg().avutil.av_get_pix_fmt(new TextEncoder().encode(name + "\0"));
    pixFmtIds.set(name, id);
  }
  return id;
}

/** Where a scaled frame goes: format, size and plane layout (see `frames.ts`). */
export interface ScaleTarget {
  format: PixelFormat;
  width: number;
  height: number;
  planes: PlaneLayout[];
}

/** The matrix `vf_scale` uses for a frame colorspace (its `parse_yuv_type` with `in_color_matrix=auto`). */
function matrixFor(colorspace: number): number {
  return colorspace < 1 || colorspace > 10 || colorspace === 8 ? AVCOL_SPC_BT470BG : colorspace;
}

/**
 * One swscale context, rebuilt only when the source frame's size, format, matrix or range changes. Owns its
 * context; dispose it (`using`).
 */
export class Scaler {
  readonly flags: number;
  #ctx: ScaleContext | undefined;
  #key = "";
  readonly #dst = new BigUint64Array(4);
  readonly #src = new BigUint64Array(4);
  readonly #srcStride = new Int32Array(4);
  readonly #dstStride = new Int32Array(4);
  readonly #details = new Int32Array(12);

  constructor(flags: number = SWS_FLAGS.bilinear) {
    this.flags = flags;
  }

  /**
   * Converts `frame` into `out` starting at byte `offset`, laid out as `target`; with `crop`, only that region
   * of the frame (its left and top rounded down to whole chroma samples, as FFmpeg's `crop` filter does) is
   * scaled, by pointing swscale at it: no copy. `source` names the input for error messages.
   */
  scaleInto(
    frame: Ptr,
    out: Uint8Array,
    offset: number,
    target: ScaleTarget,
    source: string,
    crop: CropRect | null = null,
  ): void {
    const w = crop?.width ?? avframe.width(frame), h = crop?.height ?? avframe.height(frame);
    const ctx = this.#context(frame, w, h, target, source);
    const base = BigInt(Deno.UnsafePointer.value(Deno.UnsafePointer.of(out))) + BigInt(offset);
    const order = OUTPUT_FORMATS[target.format].planeOrder;
    for (let i = 0; i < order.length; i++) {
      const plane = target.planes[order[i]];
      this.#dst[i] = base + BigInt(plane.offset);
      this.#dstStride[i] = plane.stride;
    }
    const [src, stride] = crop === null
      ? [avframe.dataArray(frame), avframe.linesizeArray(frame)]
      : this.#cropped(frame, crop, source);
    const rows = ffmpeg().swscale.sws_scale(
      ctx,
      src,
      stride,
      0,
      h,
      new Uint8Array(this.#dst.buffer),
      new Uint8Array(this.#dstStride.buffer),
    );
    if (rows <= 0) {
      throw new MediaError(source, "sws_scale", `swscale wrote no rows (returned ${rows})`, rows);
    }
  }

  /** Plane pointers and strides of the region `crop` of `frame`. */
  #cropped(frame: Ptr, crop: CropRect, source: string): [Ptr, Ptr] {
    const fmt = avframe.format(frame);
    const info = pixelFormatInfo(fmt);
    const fw = avframe.width(frame), fh = avframe.height(frame);
    if (info?.planes == null) {
      throw new MediaError(source, "crop", `pixel format ${info?.name ?? fmt} cannot be cropped in place`);
    }
    if (
      !(crop.left >= 0 && crop.top >= 0 && crop.width >= 1 && crop.height >= 1 &&
        crop.left + crop.width <= fw && crop.top + crop.height <= fh)
    ) {
      throw new MediaError(source, "crop", `crop ${JSON.stringify(crop)} is outside the ${fw}x${fh} frame`);
    }
    const x = crop.left & ~((1 << info.log2ChromaW) - 1), y = crop.top & ~((1 << info.log2ChromaH) - 1);
    const data = new Deno.UnsafePointerView(avframe.dataArray(frame));
    const lines = new Deno.UnsafePointerView(avframe.linesizeArray(frame));
    for (let p = 0; p < 4; p++) {
      const plane = info.planes[p];
      const ptr = data.getBigUint64(p * 8);
      const stride = lines.getInt32(p * 4);
      this.#srcStride[p] = stride;
      if (plane === undefined || ptr === 0n) {
        this.#src[p] = ptr;
        continue;
      }
      const col = plane.subsampled ? x >> info.log2ChromaW : x;
      const row = plane.subsampled ? y >> info.log2ChromaH : y;
      this.#src[p] = ptr + BigInt(row * stride + col * plane.step);
    }
    return [Deno.UnsafePointer.of(this.#src) as Ptr, Deno.UnsafePointer.of(this.#srcStride) as Ptr];
  }

  #context(frame: Ptr, w: number, h: number, target: ScaleTarget, source: string): Ptr {
    const fmt = avframe.format(frame);
    const cs = avframe.colorspace(frame), range = avframe.colorRange(frame);
    const key = `${w}x${h}/${fmt}/${cs}/${range}->${target.width}x${target.height}/${target.format}`;
    if (this.#ctx && key === this.#key) return this.#ctx.ptr;
    this.#ctx?.[Symbol.dispose]();
    this.#ctx = undefined;
    const { swscale } = ffmpeg();
    const dstFmt = pixFmtId(OUTPUT_FORMATS[target.format].name);
    const p = swscale.sws_getCachedContext(
      null,
      w,
      h,
      fmt,
      target.width,
      target.height,
      dstFmt,
      this.flags,
      null,
      null,
      null,
    );
    if (p === null) {
      throw new MediaError(
        source,
        "sws_getContext",
        `swscale cannot convert ${w}x${h} pixel format ${fmt} to ${target.width}x${target.height} ${target.format}`,
      );
    }
    this.#ctx = new ScaleContext(p);
    this.#key = key;
    this.#setColorspace(this.#ctx.ptr, cs, range);
    return this.#ctx.ptr;
  }

  /** What `vf_scale` does per frame: input matrix from the frame's colorspace, range from its color_range. */
  #setColorspace(ctx: Ptr, colorspace: number, range: number): void {
    const { swscale } = ffmpeg();
    const d = this.#details;
    const bytes = new Uint8Array(d.buffer);
    // Layout of #details: [0..1] inv_table ptr, [2..3] table ptr, then srcRange, dstRange, brightness, contrast, saturation.
    const field = (i: number) => bytes.subarray(i * 4, i * 4 + 8);
    const got = swscale.sws_getColorspaceDetails(
      ctx,
      field(0),
      field(4),
      field(2),
      field(5),
      field(6),
      field(7),
      field(8),
    );
    if (got < 0) return; // not a YUV/RGB conversion swscale applies a matrix to
    const ptrs = new BigUint64Array(d.buffer, 0, 2);
    const table = Deno.UnsafePointer.create(ptrs[1]);
    const inv = swscale.sws_getCoefficients(matrixFor(colorspace));
    const srcFull = range === AVCOL_RANGE_JPEG ? 1 : range === 0 ? d[4] : 0;
    // vf_scale with in_color_matrix=auto and no out_color_matrix uses the input matrix for the output too.
    swscale.sws_setColorspaceDetails(ctx, inv, srcFull, inv ?? table, d[5], d[6], d[7], d[8]);
  }

  /** Frees the swscale context. */
  [Symbol.dispose](): void {
    this.#ctx?.[Symbol.dispose]();
    this.#ctx = undefined;
    this.#key = "";
  }
}
