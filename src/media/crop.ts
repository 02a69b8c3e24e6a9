/**
 * Which region of a frame becomes a clip's pixels, per resize mode, in the frame as displayed (after rotation):
 * pure geometry shared by the CPU and NVDEC paths, so both crop the same pixels for the same seed.
 *
 * Regions start on even columns and rows and have even sizes unless they span the whole frame: whole 4:2:0 chroma
 * samples, so the CPU path can point swscale into the frame (as FFmpeg's `crop` filter does) and NVDEC can take
 * the region as its display area, with the very same rectangle.
 * @module
 */

import { InvalidArgumentError } from "../errors.ts";

/** A region of a frame in pixels. */
export interface CropRect {
  /** First column, pixels from the left edge. */
  left: number;
  /** First row, pixels from the top edge. */
  top: number;
  /** Columns. */
  width: number;
  /** Rows. */
  height: number;
}

/**
 * How a frame becomes `width`×`height`:
 * - `"stretch"`: the whole frame scaled to the output size (aspect ratio not kept);
 * - `"short-side"`: scaled so that it covers the output with its aspect kept (its shorter side, relative to the
 *   output's, fits), then the centre `width`×`height` kept; computed as the matching region of the source, scaled
 *   once;
 * - `"random-crop"`: as `"short-side"`, the region placed at random (uniform over the valid offsets);
 * - `"random-resized-crop"`: torchvision's `RandomResizedCrop`: a region covering `scale` of the frame's area with
 *   aspect ratio (width / height) in `ratio` (log-uniform), 10 tries, then a centre crop; scaled to the output.
 */
export type ResizeMode = "stretch" | "short-side" | "random-crop" | "random-resized-crop";

/** What decides a region. */
export interface RegionRequest {
  /** Output size. */
  width: number;
  height: number;
  resize: ResizeMode;
  /** `"random-resized-crop"`: area fraction range. */
  scale: readonly [number, number];
  /** `"random-resized-crop"`: aspect ratio range. */
  ratio: readonly [number, number];
}

const even = (x: number) => x & ~1;

/** Even size `n` (at least 2), or `full` itself when `n` is the whole extent. */
function evenSize(n: number, full: number): number {
  return n >= full ? full : Math.max(Math.min(2, full), even(n));
}

/** A region of `size` placed at `at` (clamped, rounded down to even). */
function place(at: number, size: number, full: number): number {
  return Math.max(0, Math.min(even(at), even(full - size)));
}

/**
 * The region of a `frameWidth`×`frameHeight` frame (as displayed) that `req` turns into the output, or null for
 * the whole frame. `random` (floats in `[0, 1)`) is drawn from only by the random modes, in a fixed order.
 */
export function resizeRegion(
  frameWidth: number,
  frameHeight: number,
  req: RegionRequest,
  random: () => number,
): CropRect | null {
  const fw = frameWidth, fh = frameHeight;
  const region = (w: number, h: number, x: number, y: number): CropRect | null => {
    const width = evenSize(w, fw), height = evenSize(h, fh);
    if (width === fw && height === fh) return null;
    return { left: place(x, width, fw), top: place(y, height, fh), width, height };
  };
  switch (req.resize) {
    case "stretch":
      return null;
    case "short-side":
    case "random-crop": {
      const f = Math.max(req.width / fw, req.height / fh);
      const w = Math.min(fw, Math.round(req.width / f)), h = Math.min(fh, Math.round(req.height / f));
      if (req.resize === "short-side") {
        return region(w, h, Math.round((fw - w) / 2), Math.round((fh - h) / 2));
      }
      const x = Math.floor(random() * (fw - w + 1)), y = Math.floor(random() * (fh - h + 1));
      return region(w, h, x, y);
    }
    case "random-resized-crop": {
      const area = fw * fh;
      const [r0, r1] = [Math.log(req.ratio[0]), Math.log(req.ratio[1])];
      for (let i = 0; i < 10; i++) {
        const target = area * (req.scale[0] + random() * (req.scale[1] - req.scale[0]));
        const aspect = Math.exp(r0 + random() * (r1 - r0));
        const w = Math.round(Math.sqrt(target * aspect)), h = Math.round(Math.sqrt(target / aspect));
        if (w > 0 && w <= fw && h > 0 && h <= fh) {
          const y = Math.floor(random() * (fh - h + 1)), x = Math.floor(random() * (fw - w + 1));
          return region(w, h, x, y);
        }
      }
      const inRatio = fw / fh;
      let w = fw, h = fh;
      if (inRatio < req.ratio[0]) h = Math.round(w / req.ratio[0]);
      else if (inRatio > req.ratio[1]) w = Math.round(h * req.ratio[1]);
      return region(w, h, Math.floor((fw - w) / 2), Math.floor((fh - h) / 2));
    }
    default:
      throw new InvalidArgumentError(`unknown resize mode "${(req as { resize: string }).resize}"`);
  }
}
