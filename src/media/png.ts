/**
 * `encodePng`: an 8-bit RGB image as a PNG file (ISO/IEC 15948: signature, IHDR, one IDAT, IEND), for images
 * sluice draws itself (`sluice preview`'s contact sheets). Each row is filtered with whichever of PNG's five
 * filters leaves the smallest sum of absolute differences (the usual heuristic) and the rows are deflated with
 * `node:zlib`, which also gives the chunks' CRC-32: no image library, no FFmpeg context for a still image.
 * @module
 */

import { crc32, deflateSync } from "node:zlib";
import { InvalidArgumentError } from "../errors.ts";

/** An RGB image: `height` rows of `width` pixels, 3 bytes each (R, G, B), rows packed. */
export interface RgbImage {
  /** Pixels per row. */
  width: number;
  /** Rows. */
  height: number;
  /** `width × height × 3` bytes. */
  data: Uint8Array;
}

/** A blank image of `width × height`, every pixel `color`. */
export function rgbImage(width: number, height: number, color: readonly [number, number, number]): RgbImage {
  const data = new Uint8Array(width * height * 3);
  for (let i = 0; i < data.length; i += 3) data.set(color, i);
  return { width, height, data };
}

const SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

/** The PNG file of `image`. Throws `InvalidArgumentError` when its size and its bytes disagree. */
export function encodePng(image: RgbImage): Uint8Array {
  const { width, height, data } = image;
  if (!(Number.isInteger(width) && Number.isInteger(height) && width > 0 && height > 0)) {
    throw new InvalidArgumentError(`png: the image must be at least 1×1 pixels, got ${width}×${height}`);
  }
  if (data.length !== width * height * 3) {
    throw new InvalidArgumentError(
      `png: a ${width}×${height} RGB image has ${width * height * 3} bytes, got ${data.length}`,
    );
  }
  const header = new Uint8Array(13);
  const v = new DataView(header.buffer);
  v.setUint32(0, width);
  v.setUint32(4, height);
  header.set([8, 2, 0, 0, 0], 8); // 8 bits per sample, truecolour, deflate, adaptive filtering, no interlace
  const chunks = [
    chunk("IHDR", header),
    chunk("IDAT", deflateSync(filtered(image))),
    chunk("IEND", new Uint8Array()),
  ];
  const out = new Uint8Array(SIGNATURE.length + chunks.reduce((n, c) => n + c.length, 0));
  out.set(SIGNATURE);
  let at = SIGNATURE.length;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/** A chunk: length, type, data, CRC-32 of type and data. */
function chunk(type: string, data: Uint8Array): Uint8Array {
  const out = new Uint8Array(12 + data.length);
  const v = new DataView(out.buffer);
  v.setUint32(0, data.length);
  out.set(new TextEncoder().encode(type), 4);
  out.set(data, 8);
  v.setUint32(8 + data.length, crc32(out.subarray(4, 8 + data.length)));
  return out;
}

/** The rows, each led by its filter type and filtered with it (3 bytes per pixel). */
function filtered({ width, height, data }: RgbImage): Uint8Array {
  const stride = width * 3;
  const out = new Uint8Array(height * (stride + 1));
  const candidates = Array.from({ length: 5 }, () => new Uint8Array(stride));
  const zero = new Uint8Array(stride);
  for (let y = 0; y < height; y++) {
    const row = data.subarray(y * stride, (y + 1) * stride);
    const up = y > 0 ? data.subarray((y - 1) * stride, y * stride) : zero;
    let best = 0, bestCost = Infinity;
    for (let f = 0; f < 5; f++) {
      const c = candidates[f];
      let cost = 0;
      for (let i = 0; i < stride; i++) {
        const a = i >= 3 ? row[i - 3] : 0, b = up[i], d = i >= 3 ? up[i - 3] : 0;
        const predicted = f === 0 ? 0 : f === 1 ? a : f === 2 ? b : f === 3 ? (a + b) >> 1 : paeth(a, b, d);
        const r = (row[i] - predicted) & 0xff;
        c[i] = r;
        cost += r < 128 ? r : 256 - r;
      }
      if (cost < bestCost) [best, bestCost] = [f, cost];
    }
    out[y * (stride + 1)] = best;
    out.set(candidates[best], y * (stride + 1) + 1);
  }
  return out;
}

/** PNG's Paeth predictor: of left, up and up-left, the one nearest to left + up − up-left. */
function paeth(a: number, b: number, c: number): number {
  const p = a + b - c, pa = Math.abs(p - a), pb = Math.abs(p - b), pc = Math.abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}
