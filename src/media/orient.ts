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
 * Destinations may hold `float32` samples (see {@link orientPlane}'s `norm`).
 */
export interface Plane<T extends Uint8Array | Float32Array = Uint8Array> {
  data: T;
  width: number;
  height: number;
  stride: number;
  bytesPerPixel: number;
  pixelStride?: number;
}

/**
 * Bytes to `float32` samples: sample `b` of a pixel with value `v` becomes `v · scale[b] + offset[b]` (see
 * {@link normalisation}).
 */
export interface Normalisation {
  scale: readonly number[];
  offset: readonly number[];
}

/**
 * The normalisation `(v / 255 − mean[c]) / std[c]` per channel, as `v · scale + offset` with
 * `scale = 1 / (255 · std)` and `offset = −mean / std` (computed in double precision, rounded once to float32).
 */
export function normalisation(
  mean: readonly [number, number, number],
  std: readonly [number, number, number],
): Normalisation {
  return { scale: std.map((s) => 1 / (255 * s)), offset: mean.map((m, c) => -m / std[c]) };
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
 * Where each pixel of an image coded `width`×`height`, turned counter-clockwise by `degrees` (then mirrored
 * left–right), comes from: destination pixel (x, y) is source pixel (sx0 + x·dxX + y·dxY, sy0 + x·dyX + y·dyY).
 * Returns `[sx0, sy0, dxX, dxY, dyX, dyY]` ({@link orientPlane} on the CPU, the clip kernel on the GPU).
 */
export function orientMap(
  width: number,
  height: number,
  degrees: number,
  mirror: boolean,
): [number, number, number, number, number, number] {
  const d = quarterTurns(degrees);
  const [w] = orientedSize(width, height, d);
  const W = width - 1, H = height - 1;
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
  return [sx0, sy0, dxX, dxY, dyX, dyY];
}

/**
 * Writes `src` turned counter-clockwise by `degrees` (then mirrored left–right when `mirror`) into `dst`, whose
 * size must be {@link orientedSize} of `src`'s. `src` and `dst` must not overlap. With `norm` (and a
 * `Float32Array` destination), sample `b` of a pixel with value `v` is written as
 * `v · norm.scale[b] + norm.offset[b]`: normalisation in the same pass.
 */
export function orientPlane<T extends Uint8Array | Float32Array>(
  src: Plane,
  dst: Plane<T>,
  degrees: number,
  mirror = false,
  norm?: Normalisation,
): void {
  const d = quarterTurns(degrees);
  const [w, h] = orientedSize(src.width, src.height, d);
  const bpp = src.bytesPerPixel;
  if (dst.width !== w || dst.height !== h || dst.bytesPerPixel !== bpp) {
    throw new InvalidArgumentError(
      `orient: destination is ${dst.width}x${dst.height}x${dst.bytesPerPixel}, needs ${w}x${h}x${bpp}`,
    );
  }
  if ((norm !== undefined) !== (dst.data instanceof Float32Array) || (norm && norm.scale.length < bpp)) {
    throw new InvalidArgumentError("orient: a float32 destination needs a normalisation for each sample");
  }
  const [sx0, sy0, dxX, dxY, dyX, dyY] = orientMap(src.width, src.height, d, mirror);
  const sp = src.pixelStride ?? bpp, dp = dst.pixelStride ?? bpp;
  const stepX = dxX * sp + dyX * src.stride; // source element step per destination pixel along a row
  const rowX = dxY * sp + dyY * src.stride; // source element step per destination row
  const origin = sx0 * sp + sy0 * src.stride;
  if (d === 0 && sp === bpp && dp === bpp && (bpp === 1 || bpp === 3)) {
    // No turn: whole rows, read forwards or backwards (about twice as fast as the general walk).
    if (norm !== undefined) {
      normRows(src.data, src.stride, dst.data as Float32Array, dst.stride, w, h, bpp, mirror, norm);
    } else copyRows(src.data, src.stride, dst.data as Uint8Array, dst.stride, w, h, bpp, mirror);
    return;
  }
  // One loop per destination type, so that each stays monomorphic (a loop storing into both Uint8Array and
  // Float32Array runs slower).
  for (let y = 0; y < h; y++) {
    const si = origin + y * rowX, di = y * dst.stride;
    if (norm !== undefined) normRow(src.data, si, stepX, dst.data as Float32Array, di, dp, w, bpp, norm);
    else copyRow(src.data, si, stepX, dst.data as Uint8Array, di, dp, w, bpp);
  }
}

function copyRows(
  s: Uint8Array,
  ss: number,
  o: Uint8Array,
  ds: number,
  w: number,
  h: number,
  bpp: number,
  mirror: boolean,
) {
  const rs = w * bpp;
  for (let y = 0; y < h; y++) {
    const si = y * ss, di = y * ds;
    if (!mirror || bpp === 1) {
      o.set(s.subarray(si, si + rs), di);
      if (mirror) o.subarray(di, di + rs).reverse();
      continue;
    }
    for (let x = 0, r = si + rs - 3; x < rs; x += 3, r -= 3) {
      o[di + x] = s[r];
      o[di + x + 1] = s[r + 1];
      o[di + x + 2] = s[r + 2];
    }
  }
}

function normRows(
  s: Uint8Array,
  ss: number,
  o: Float32Array,
  ds: number,
  w: number,
  h: number,
  bpp: number,
  mirror: boolean,
  norm: Normalisation,
) {
  const rs = w * bpp, step = mirror ? -bpp : bpp;
  const a0 = norm.scale[0], a1 = norm.scale[1] ?? 0, a2 = norm.scale[2] ?? 0;
  const b0 = norm.offset[0], b1 = norm.offset[1] ?? 0, b2 = norm.offset[2] ?? 0;
  for (let y = 0; y < h; y++) {
    const di = y * ds;
    let si = y * ss + (mirror ? rs - bpp : 0);
    if (bpp === 3) {
      for (let x = 0; x < rs; x += 3, si += step) {
        o[di + x] = s[si] * a0 + b0;
        o[di + x + 1] = s[si + 1] * a1 + b1;
        o[di + x + 2] = s[si + 2] * a2 + b2;
      }
    } else {
      for (let x = 0; x < rs; x++, si += step) o[di + x] = s[si] * a0 + b0;
    }
  }
}

function copyRow(
  s: Uint8Array,
  si: number,
  step: number,
  o: Uint8Array,
  di: number,
  dp: number,
  w: number,
  bpp: number,
) {
  if (bpp === 3) {
    for (let x = 0; x < w; x++, si += step, di += dp) {
      o[di] = s[si];
      o[di + 1] = s[si + 1];
      o[di + 2] = s[si + 2];
    }
  } else if (bpp === 1) {
    for (let x = 0; x < w; x++, si += step, di += dp) o[di] = s[si];
  } else {
    for (let x = 0; x < w; x++, si += step, di += dp) {
      for (let b = 0; b < bpp; b++) o[di + b] = s[si + b];
    }
  }
}

function normRow(
  s: Uint8Array,
  si: number,
  step: number,
  o: Float32Array,
  di: number,
  dp: number,
  w: number,
  bpp: number,
  norm: Normalisation,
) {
  // A multiply-add per sample: measured faster here than a 256-entry lookup table.
  const a0 = norm.scale[0], a1 = norm.scale[1] ?? 0, a2 = norm.scale[2] ?? 0;
  const b0 = norm.offset[0], b1 = norm.offset[1] ?? 0, b2 = norm.offset[2] ?? 0;
  if (bpp === 3) {
    for (let x = 0; x < w; x++, si += step, di += dp) {
      o[di] = s[si] * a0 + b0;
      o[di + 1] = s[si + 1] * a1 + b1;
      o[di + 2] = s[si + 2] * a2 + b2;
    }
  } else if (bpp === 1) {
    for (let x = 0; x < w; x++, si += step, di += dp) o[di] = s[si] * a0 + b0;
  } else {
    for (let x = 0; x < w; x++, si += step, di += dp) {
      for (let b = 0; b < bpp; b++) o[di + b] = s[si + b] * norm.scale[b] + norm.offset[b];
    }
  }
}
