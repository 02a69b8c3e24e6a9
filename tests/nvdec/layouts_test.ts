import assert from "node:assert/strict";
import { NVCUVID_LAYOUTS } from "../../ffi/nvcuvid/layouts.ts";
import { CUDA_LAYOUTS } from "../../ffi/cuda/layouts.ts";
import { probeLayouts } from "./double/build.ts";

const tables: Record<string, Record<string, number>> = { ...NVCUVID_LAYOUTS, ...CUDA_LAYOUTS };

/** Every field of the TypeScript table has the offset the C compiler gives the double's own declaration. */
function mismatches(
  ts: Record<string, Record<string, number>>,
  c: Record<string, Record<string, number>>,
): string[] {
  const out: string[] = [];
  for (const [name, table] of Object.entries(ts)) {
    for (const [field, off] of Object.entries(table)) {
      if (c[name]?.[field] !== off) out.push(`${name}.${field}: ts ${off}, C ${c[name]?.[field]}`);
    }
  }
  return out;
}

Deno.test("nvdec layouts: sizes from the issue notes (LP64)", () => {
  assert.equal(NVCUVID_LAYOUTS.CUVIDPARSERPARAMS.size, 136);
  assert.equal(NVCUVID_LAYOUTS.CUVIDEOFORMAT.size, 64);
  assert.equal(NVCUVID_LAYOUTS.CUVIDDECODECREATEINFO.size, 176);
  assert.equal(NVCUVID_LAYOUTS.CUVIDPICPARAMS.size, 4280);
  assert.equal(CUDA_LAYOUTS.CUDA_MEMCPY2D.size, 128);
});

Deno.test("nvdec layouts: every offset and size agrees with the double's independent C declarations", () => {
  const c = probeLayouts();
  assert.deepEqual(mismatches(tables, c), []);
  for (const name of Object.keys(tables)) assert.ok(c[name], `the probe covers ${name}`);
});

Deno.test("nvdec layouts: a wrong struct size or a misplaced callback field is caught", () => {
  const c = probeLayouts();
  const swapped = {
    ...tables,
    CUVIDPARSERPARAMS: { ...tables.CUVIDPARSERPARAMS, pfnDecodePicture: 64, pfnDisplayPicture: 56 },
  };
  assert.equal(mismatches(swapped, c).length, 2);
  const short = { ...tables, CUVIDDECODECREATEINFO: { ...tables.CUVIDDECODECREATEINFO, size: 172 } };
  assert.deepEqual(mismatches(short, c), ["CUVIDDECODECREATEINFO.size: ts 172, C 176"]);
});
