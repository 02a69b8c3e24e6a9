/**
 * Turning decoded pixels the way a player shows them: rotation by a multiple of 90° and a horizontal mirror,
 * in one pass over one plane of interleaved samples (RGB24 with 3 bytes a pixel, a single Y/U/V plane with 1).
 *
 * Angles follow `VideoPackets.rotation` (ffprobe's sign): the displayed image is the coded image turned
 * counter-clockwise by `rotation` degrees, so a phone clip reported as `-90` is turned 90° clockwise, as
 * `ffmpeg`'s autorotate does. A quarter turn swaps width and height.
 * @module
 */

import { InvalidArgumentError } from "../errors.ts";

/**
 * A plane of `width`×`height` pixels, `bytesPerPixel` interleaved samples each, rows `stride` elements apart and
 * pixels `pixelStride` elements apart (default `bytesPerPixel`: a larger one reads or writes one channel of a
 * packed image, e.g. plane G of RGB24 is `{ data: rgb.subarray(1), bytesPerPixel: 1, pixelStride: 3 }`).
 * Destinations may hold `float32` samples (see {@link orientPlane}'s `lut`).
 */
export interface Plane<T extends Uint8Array | Float32Array = Uint8Array> {
  data: T;
  width: number;
  height: number;
  stride: number;
  bytesPerPixel: number;
  pixelStride?: number;
}

/** A multiple of 90° normalised to 0, 90, 180 or 270 (counter-clockwise); anything else is an error. */
export function quarterTurns(degrees: number): 0 | 90 | 180 | 270 {
  const d = ((Math.round(degrees) % 360) + 360) % 360;
  if (d % 90 !== 0 || Math.abs(degrees - Math.round(degrees)) > 1e-6) {
    throw new InvalidArgumentError(`orient: rotation must be a multiple of 90 degrees, got ${degrees}`);
  }
  return d as 0 | 90 | 180 | 270;
}

/** Width and height after turning a `width`×`height` image by `degrees`. */
export function orientedSize(width: number, height: number, degrees: number): [number, number] {
  const d = quarterTurns(degrees);
  return d === 90 || d === 270 ? [height, width] : [width, height];
}

/**
 * The coded-image rectangle `[x, y, width, height]` whose pixels {@link orientPlane} turns (and mirrors) into the
 * rectangle `rect` of the oriented image, for an image coded `width`×`height`.
 */
export function codedRect(
  rect: readonly [number, number, number, number],
  width: number,
  height: number,
  degrees: number,
  mirror = false,
): [number, number, number, number] {
  const d = quarterTurns(degrees);
  const [ow] = orientedSize(width, height, d);
  let [x, y, w, h] = rect;
  if (mirror) x = ow - x - w;
  if (d === 90) return [width - y - h, x, h, w];
  if (d === 180) return [width - x - w, height - y - h, w, h];
  if (d === 270) return [y, height - x - w, h, w];
  return [x, y, w, h];
}

/**
 * Writes `src` turned counter-clockwise by `degrees` (then mirrored left–right when `mirror`) into `dst`, whose
 * size must be {@link orientedSize} of `src`'s. `src` and `dst` must not overlap. With `lut` (and a `Float32Array`
 * destination), sample `b` of a pixel with value `v` is written as `lut[b·256 + v]`: normalisation in the same
 * pass.
 */
export function orientPlane<T extends Uint8Array | Float32Array>(
  src: Plane,
  dst: Plane<T>,
  degrees: number,
  mirror = false,
  lut?: Float32Array,
): void {
  const d = quarterTurns(degrees);
  const [w, h] = orientedSize(src.width, src.height, d);
  const bpp = src.bytesPerPixel;
  if (dst.width !== w || dst.height !== h || dst.bytesPerPixel !== bpp) {
    throw new InvalidArgumentError(
      `orient: destination is ${dst.width}x${dst.height}x${dst.bytesPerPixel}, needs ${w}x${h}x${bpp}`,
    );
  }
  if ((lut !== undefined) !== (dst.data instanceof Float32Array) || (lut && lut.length < 256 * bpp)) {
    throw new InvalidArgumentError(
      "orient: a float32 destination needs a lookup table of 256 values a sample",
    );
  }
  // For each destination pixel (x, y), the source pixel is sx0 + x·dxX + y·dxY, sy0 + x·dyX + y·dyY.
  const W = src.width - 1, H = src.height - 1;
  let sx0 = 0, sy0 = 0, dxX = 1, dxY = 0, dyX = 0, dyY = 1;
  if (d === 90) [sx0, sy0, dxX, dxY, dyX, dyY] = [W, 0, 0, -1, 1, 0];
  else if (d === 180) [sx0, sy0, dxX, dxY, dyX, dyY] = [W, H, -1, 0, 0, -1];
  else if (d === 270) [sx0, sy0, dxX, dxY, dyX, dyY] = [0, H, 0, 1, -1, 0];
  if (mirror) {
    // Mirroring the output: destination x reads what x' = w-1-x would have read.
    sx0 += (w - 1) * dxX;
    sy0 += (w - 1) * dyX;
    dxX = -dxX;
    dyX = -dyX;
  }
  const s = src.data, o = dst.data, ss = src.stride;
  const sp = src.pixelStride ?? bpp, dp = dst.pixelStride ?? bpp;
  const stepX = dxX * sp + dyX * ss; // source element step per destination pixel along a row
  for (let y = 0; y < h; y++) {
    let si = (sx0 + y * dxY) * sp + (sy0 + y * dyY) * ss;
    let di = y * dst.stride;
    if (lut !== undefined) {
      if (bpp === 1) {
        for (let x = 0; x < w; x++, si += stepX, di += dp) o[di] = lut[s[si]];
      } else {
        for (let x = 0; x < w; x++, si += stepX, di += dp) {
          for (let b = 0; b < bpp; b++) o[di + b] = lut[(b << 8) + s[si + b]];
        }
      }
    } else if (bpp === 3) {
      for (let x = 0; x < w; x++, si += stepX, di += dp) {
        o[di] = s[si];
        o[di + 1] = s[si + 1];
        o[di + 2] = s[si + 2];
      }
    } else if (bpp === 1) {
      for (let x = 0; x < w; x++, si += stepX, di += dp) o[di] = s[si];
    } else {
      for (let x = 0; x < w; x++, si += stepX, di += dp) {
        for (let b = 0; b < bpp; b++) o[di + b] = s[si + b];
      }
    }
  }
}
