/**
 * `encodePng` (`src/media/png.ts`) against an independent decoder, ffmpeg's own PNG decoder through the CLI (and
 * ffprobe for the size), and the bitmap font's drawing (`src/media/bitmap_font.ts`).
 */
import assert from "node:assert/strict";
import { inflateSync } from "node:zlib";
import { encodePng, type RgbImage, rgbImage } from "../../src/media/png.ts";
import { drawText, fitText, GLYPH_HEIGHT, GLYPH_WIDTH, textWidth } from "../../src/media/bitmap_font.ts";
import { InvalidArgumentError } from "../../src/errors.ts";
import { hasFfmpegCliSync } from "../helpers/media.ts";
import { decodePngCli } from "../helpers/decode_oracles.ts";
import { mulberry32 } from "../../src/dataset/random.ts";

/** Images that make each of PNG's filters win somewhere: noise, gradients, flat areas, sharp edges. */
function images(): RgbImage[] {
  const rand = mulberry32(7);
  const noise = rgbImage(37, 23, [0, 0, 0]);
  noise.data.forEach((_, i) => noise.data[i] = Math.floor(rand() * 256));
  const gradient = rgbImage(64, 48, [0, 0, 0]);
  for (let y = 0; y < 48; y++) {
    for (let x = 0; x < 64; x++) gradient.data.set([x * 4, y * 5, (x * y) & 255], (y * 64 + x) * 3);
  }
  const mixed = rgbImage(50, 40, [12, 200, 90]);
  for (let y = 10; y < 30; y++) mixed.data.fill(255, (y * 50 + 5) * 3, (y * 50 + 45) * 3);
  for (let y = 0; y < 40; y++) mixed.data[(y * 50 + (y % 50)) * 3] = rand() * 256;
  return [noise, gradient, mixed, rgbImage(1, 1, [1, 2, 3])];
}

Deno.test({
  name: "encodePng: ffmpeg's PNG decoder reads back every pixel, at the size written",
  ignore: !hasFfmpegCliSync(),
  async fn() {
    const filters = new Set<number>();
    for (const image of images()) {
      const png = encodePng(image);
      const decoded = await decodePngCli(png);
      assert.deepEqual([decoded.width, decoded.height], [image.width, image.height]);
      assert.deepEqual(decoded.rgb, image.data, `${image.width}×${image.height}`);
      const rows = inflateSync(png.subarray(41, png.length - 16)); // IDAT's data: after IHDR, before its CRC and IEND
      for (let y = 0; y < image.height; y++) filters.add(rows[y * (image.width * 3 + 1)]);
    }
    assert.deepEqual([...filters].sort(), [0, 1, 2, 3, 4], "every filter type was read back");
  },
});

Deno.test("encodePng: the signature, chunks in order, and a size that disagrees with the bytes refused", () => {
  const png = encodePng(images()[1]);
  assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  const types: string[] = [];
  for (let at = 8; at < png.length;) {
    const length = new DataView(png.buffer, png.byteOffset + at).getUint32(0);
    types.push(new TextDecoder().decode(png.subarray(at + 4, at + 8)));
    at += 12 + length;
  }
  assert.deepEqual(types, ["IHDR", "IDAT", "IEND"]);
  assert.throws(
    () => encodePng({ width: 2, height: 2, data: new Uint8Array(11) }),
    (e: unknown) => e instanceof InvalidArgumentError && /has 12 bytes, got 11/.test(e.message),
  );
  assert.throws(() => encodePng({ width: 0, height: 2, data: new Uint8Array(0) }), InvalidArgumentError);
});

Deno.test("drawText: glyphs inside their cells only, clipped at the image's edges; other characters as ?", () => {
  const color = [250, 0, 0] as const;
  const image = rgbImage(40, 20, [0, 0, 0]);
  assert.equal(drawText(image, 3, 4, "Ag|", color), 3 * GLYPH_WIDTH);
  const lit: [number, number][] = [];
  for (let y = 0; y < 20; y++) {
    for (let x = 0; x < 40; x++) if (image.data[(y * 40 + x) * 3] === 250) lit.push([x, y]);
  }
  assert.ok(lit.length > 20, "the characters are drawn");
  assert.ok(lit.every(([x, y]) => x >= 3 && x < 3 + 3 * GLYPH_WIDTH && y >= 4 && y < 4 + GLYPH_HEIGHT));
  assert.ok(lit.some(([, y]) => y >= 4 + 8), "the descender of g reaches below the baseline");
  // clipped: nothing thrown, nothing written outside
  const small = rgbImage(5, 5, [0, 0, 0]);
  drawText(small, -3, -4, "WWW", color);
  drawText(small, 3, 3, "WWW", color);
  assert.equal(small.data.length, 75);
  const a = rgbImage(6, 10, [0, 0, 0]), b = rgbImage(6, 10, [0, 0, 0]);
  drawText(a, 0, 0, "é", color);
  drawText(b, 0, 0, "?", color);
  assert.deepEqual(a.data, b.data);
  assert.equal(textWidth("abc"), 18);
  assert.equal(fitText("class_01/video_0003.mp4", 12, "end"), "..o_0003.mp4");
  assert.equal(fitText("0.123456", 5), "0.1..");
  assert.equal(fitText("short", 10), "short");
});
