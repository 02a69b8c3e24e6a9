/**
 * A small bitmap font for labels drawn into RGB images (`sluice preview`'s contact sheets): the printable ASCII
 * characters, 6 × 10 pixels each (5 wide plus a column of spacing; 2 rows below the baseline for descenders),
 * anything else drawn as `?`. The glyphs were rasterised once, without antialiasing, from DejaVu Sans Mono at
 * 10 px (DejaVu fonts: Bitstream Vera license, changes public domain) and are kept here as data: no font file
 * or text renderer is needed at run time.
 * @module
 */

import type { RgbImage } from "./png.ts";

/** Pixels a character advances the pen by. */
export const GLYPH_WIDTH = 6;
/** Pixel rows of a character (descenders included). */
export const GLYPH_HEIGHT = 10;

/**
 * Glyphs of the characters 32 (space) to 126 (`~`): per glyph ten rows, top to bottom, each two hex digits whose
 * bits 5..0 are the pixels left to right.
 */
const GLYPHS: readonly string[] = [
  "00000000000000000000",
  "00040404040400040000",
  "000a0a0a000000000000",
  "000a0a1f143e14140000", // space ! " #
  "00040f141c07051e0400",
  "0038283a0c1705070000",
  "000e080c1513120d0000",
  "00040404000000000000", // $ % & '
  "04080808080808080400",
  "08080404040404080800",
  "00150e0e150000000000",
  "000004041f0404000000", // ( ) * +
  "00000000000000080808",
  "00000000000e00000000",
  "00000000000000080000",
  "00010202040408081000", // , - . /
  "000e11111511110e0000",
  "001c04040404041f0000",
  "000e11010306081f0000",
  "000e11010e01110e0000", // 0 1 2 3
  "0002060a1a1f02020000",
  "001e101e0101011e0000",
  "000f18101e11110e0000",
  "001f0302020404080000", // 4 5 6 7
  "000e11110e11110e0000",
  "000e11110f01031e0000",
  "00000008000000080000",
  "00000008000000080808", // 8 9 : ;
  "0000010e100e01000000",
  "0000003e003e00000000",
  "0000100e010e10000000",
  "001e0204080800080000", // < = > ?
  "000e0917151515170806",
  "0004040a0a0e11110000",
  "001e11111e11111e0000",
  "000f19101010190f0000", // @ A B C
  "001e13111111131e0000",
  "001f10101f10101f0000",
  "001f10101f1010100000",
  "000e19101311190f0000", // D E F G
  "001111111f1111110000",
  "001f04040404041f0000",
  "000e02020202120c0000",
  "00111214181412110000", // H I J K
  "001010101010101f0000",
  "00111b1b151111110000",
  "00111919151313110000",
  "000e11111111110e0000", // L M N O
  "001e11111e1010100000",
  "000e11111111110e0300",
  "001e11111e1311100000",
  "000e11100e01110e0000", // P Q R S
  "001f0404040404040000",
  "001111111111110e0000",
  "0011110a0a0a04040000",
  "00212d2d1e1212120000", // T U V W
  "00110a0a040a0a110000",
  "00110a0a040404040000",
  "001f02020408081f0000",
  "0c080808080808080c00", // X Y Z [
  "00100808040402020100",
  "0c040404040404040c00",
  "00081422000000000000",
  "0000000000000000003f", // \\ ] ^ _
  "10080000000000000000",
  "0000001e010f111f0000",
  "1010101e1111111e0000",
  "0000000e1010100e0000", // ` a b c
  "0101010f1111110f0000",
  "0000000e111f100f0000",
  "0608081e080808080000",
  "0000000f1111110f010e", // d e f g
  "10101016191111110000",
  "0400000c0404041f0000",
  "0400001c040404040418",
  "10101012141c12110000", // h i j k
  "38080808080808060000",
  "0000001f151515150000",
  "00000016191111110000",
  "0000000e1111110e0000", // l m n o
  "0000001e1111111e1010",
  "0000000f1111110f0101",
  "0000000f090808080000",
  "0000000f100f011e0000", // p q r s
  "0008081e0808080e0000",
  "000000111111110f0000",
  "000000110a0a0a040000",
  "00000011150a0a0a0000", // t u v w
  "0000001b0a040a1b0000",
  "000000110a0a04040418",
  "0000001f0204081f0000",
  "06040404180404040600", // x y z {
  "04040404040404040404",
  "0c040404030404040c00",
  "000000001c0300000000", // | } ~
];

const QUESTION = GLYPHS["?".charCodeAt(0) - 32];

/** Pixels `text` takes across. */
export function textWidth(text: string): number {
  return text.length * GLYPH_WIDTH;
}

/**
 * `text` shortened to at most `max` characters: its start kept and `..` at its end, or with `keep: "end"` its
 * end kept and `..` at its start (for a path, whose file name is its end).
 */
export function fitText(text: string, max: number, keep: "start" | "end" = "start"): string {
  if (text.length <= max) return text;
  if (max <= 2) return text.slice(0, Math.max(0, max));
  return keep === "start" ? `${text.slice(0, max - 2)}..` : `..${text.slice(text.length - (max - 2))}`;
}

/**
 * Draws `text` into `image` with its top-left corner at (`x`, `y`), in `color`; pixels outside the image are
 * left out. Returns the width drawn.
 */
export function drawText(
  image: RgbImage,
  x: number,
  y: number,
  text: string,
  color: readonly [number, number, number],
): number {
  const { width, height, data } = image;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    const glyph = code >= 32 && code <= 126 ? GLYPHS[code - 32] : QUESTION;
    const gx = x + i * GLYPH_WIDTH;
    for (let row = 0; row < GLYPH_HEIGHT; row++) {
      const bits = parseInt(glyph.slice(2 * row, 2 * row + 2), 16), py = y + row;
      if (bits === 0 || py < 0 || py >= height) continue;
      for (let col = 0; col < GLYPH_WIDTH; col++) {
        const px = gx + col;
        if ((bits & (32 >> col)) === 0 || px < 0 || px >= width) continue;
        data.set(color, (py * width + px) * 3);
      }
    }
  }
  return textWidth(text);
}
