import { deepStrictEqual as assertEquals, throws as assertThrows } from "node:assert/strict";
import { orientedSize, orientPlane, type Plane, quarterTurns } from "../../src/media/orient.ts";
import { InvalidArgumentError } from "../../src/errors.ts";

/** A 3×2 one-byte plane:  a b c / d e f  (letters as their char codes). */
function abc(): Plane {
  return { data: new TextEncoder().encode("abcdef"), width: 3, height: 2, stride: 3, bytesPerPixel: 1 };
}

function run(degrees: number, mirror = false): string {
  const src = abc();
  const [w, h] = orientedSize(src.width, src.height, degrees);
  const dst: Plane = { data: new Uint8Array(w * h), width: w, height: h, stride: w, bytesPerPixel: 1 };
  orientPlane(src, dst, degrees, mirror);
  const rows: string[] = [];
  for (let y = 0; y < h; y++) rows.push(new TextDecoder().decode(dst.data.subarray(y * w, (y + 1) * w)));
  return rows.join("/");
}

// Hand-computed: turning "abc/def" a quarter counter-clockwise puts the right column on top.
Deno.test("orientPlane: quarter turns and mirrors of a 3x2 plane (hand-computed)", () => {
  assertEquals(run(0), "abc/def");
  assertEquals(run(90), "cf/be/ad");
  assertEquals(run(180), "fed/cba");
  assertEquals(run(-90), "da/eb/fc");
  assertEquals(run(270), "da/eb/fc");
  assertEquals(run(0, true), "cba/fed");
  assertEquals(run(90, true), "fc/eb/da");
  assertEquals(run(-90, true), "ad/be/cf");
});

Deno.test("orientPlane: 3-byte pixels move whole, source stride is honoured", () => {
  // 2×1 RGB plane with 2 bytes of row padding: [1,2,3][4,5,6]..
  const src: Plane = {
    data: Uint8Array.of(1, 2, 3, 4, 5, 6, 99, 99),
    width: 2,
    height: 1,
    stride: 8,
    bytesPerPixel: 3,
  };
  const dst: Plane = { data: new Uint8Array(6), width: 1, height: 2, stride: 3, bytesPerPixel: 3 };
  orientPlane(src, dst, -90);
  assertEquals([...dst.data], [1, 2, 3, 4, 5, 6]);
  orientPlane(src, dst, 90);
  assertEquals([...dst.data], [4, 5, 6, 1, 2, 3]);
});

Deno.test("orient: angles that are not quarter turns and wrong destinations are errors", () => {
  assertEquals(quarterTurns(-270), 90);
  assertThrows(() => quarterTurns(45), InvalidArgumentError);
  const src = abc();
  const dst: Plane = { data: new Uint8Array(6), width: 3, height: 2, stride: 3, bytesPerPixel: 1 };
  assertThrows(() => orientPlane(src, dst, 90), InvalidArgumentError);
});
