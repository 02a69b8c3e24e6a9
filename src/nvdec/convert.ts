/**
 * NV12 → planar RGB/BGR on the GPU: the kernel of `kernels/nv12_to_rgb.cu`, loaded from the PTX embedded in
 * `kernels/nv12_to_rgb_ptx.ts` with `cuModuleLoadData` (the driver JITs it), once per context and thread.
 * @module
 */
import { OutSlot } from "../../ffi/out_slot.ts";
import { cstr } from "../../ffi/cstring.ts";
import { NV12_TO_RGB_ENTRY, NV12_TO_RGB_PTX } from "./kernels/nv12_to_rgb_ptx.ts";
import { checkCu, cuda, type DeviceContext } from "./driver.ts";

/** Colour matrix of the conversion. */
export type ColorMatrix = "bt601" | "bt709";

/** Parameters of one conversion. */
export interface Nv12ToRgb {
  luma: bigint;
  chroma: bigint;
  srcPitch: number;
  dst: bigint;
  width: number;
  height: number;
  matrix: ColorMatrix;
  fullRange: boolean;
  bgr: boolean;
}

const functions = new WeakMap<DeviceContext, Deno.PointerObject>();
const BLOCK_X = 32;
const BLOCK_Y = 8;

/** The kernel's `CUfunction` in `dc` (loads the module on first use; `dc` must be current). */
function kernel(dc: DeviceContext): Deno.PointerObject {
  const known = functions.get(dc);
  if (known) return known;
  const cu = cuda();
  const mod = new OutSlot();
  checkCu(cu.cuModuleLoadData(mod.bytes, cstr(NV12_TO_RGB_PTX)), "NV12 to RGB kernel", "cuModuleLoadData");
  const module = mod.pointer;
  dc.cleanups.push(() => {
    functions.delete(dc);
    cu.cuModuleUnload(module);
  });
  const fn = new OutSlot();
  checkCu(
    cu.cuModuleGetFunction(fn.bytes, module, cstr(NV12_TO_RGB_ENTRY)),
    NV12_TO_RGB_ENTRY,
    "cuModuleGetFunction",
  );
  const f = fn.pointer as Deno.PointerObject;
  functions.set(dc, f);
  return f;
}

/**
 * Packs the kernel's arguments as `cuLaunchKernel` wants them: an array of pointers, one per parameter, each to
 * a value of the parameter's exact type (u64, u64, u32, u64, u32, u64, u32, u32, s32, s32).
 */
export function packKernelParams(
  c: Nv12ToRgb,
): { pointers: BigUint64Array<ArrayBuffer>; values: ArrayBuffer } {
  const values = new ArrayBuffer(10 * 8);
  const dv = new DataView(values);
  const planeStride = BigInt(c.width * c.height);
  const args: [string, number | bigint][] = [
    ["u64", c.luma],
    ["u64", c.chroma],
    ["u32", c.srcPitch],
    ["u64", c.dst],
    ["u32", c.width],
    ["u64", planeStride],
    ["u32", c.width],
    ["u32", c.height],
    ["i32", c.matrix === "bt709" ? 1 : 0],
    ["i32", (c.fullRange ? 1 : 0) | (c.bgr ? 2 : 0)],
  ];
  args.forEach(([type, v], i) => {
    if (type === "u64") dv.setBigUint64(i * 8, BigInt(v), true);
    else if (type === "u32") dv.setUint32(i * 8, Number(v), true);
    else dv.setInt32(i * 8, Number(v), true);
  });
  const base = BigInt(Deno.UnsafePointer.value(Deno.UnsafePointer.of(values)));
  const pointers = new BigUint64Array(10);
  for (let i = 0; i < 10; i++) pointers[i] = base + BigInt(i * 8);
  return { pointers, values };
}

/** Launches the conversion on `stream` (null: the default stream). `dc` must be current. */
export function launchNv12ToRgb(dc: DeviceContext, c: Nv12ToRgb, stream: Deno.PointerValue = null): void {
  const f = kernel(dc);
  const { pointers, values } = packKernelParams(c);
  const gx = Math.ceil(c.width / BLOCK_X);
  const gy = Math.ceil(c.height / BLOCK_Y);
  checkCu(
    cuda().cuLaunchKernel(
      f,
      gx,
      gy,
      1,
      BLOCK_X,
      BLOCK_Y,
      1,
      0,
      stream,
      new Uint8Array(pointers.buffer),
      null,
    ),
    NV12_TO_RGB_ENTRY,
    "cuLaunchKernel",
  );
  void values; // kept alive until here: the driver reads the values during the call
}
