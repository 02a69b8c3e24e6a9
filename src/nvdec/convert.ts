/**
 * The GPU kernels of `kernels/nv12_to_rgb.cu`, loaded from the PTX embedded in `kernels/nv12_to_rgb_ptx.ts` with
 * `cuModuleLoadData` (the driver JITs it), once per context and thread: NV12 → planar RGB/BGR
 * ({@link launchNv12ToRgb}), and planar RGB frames → a clip's frames in their final place, turned, mirrored, laid
 * out and optionally normalised to `float32` ({@link launchPlaceClip}), so nothing per pixel runs on the CPU.
 * @module
 */
import { OutParam } from "../../ffi/out_param.ts";
import { cstr } from "../../ffi/cstring.ts";
import { NV12_TO_RGB_ENTRY, NV12_TO_RGB_PTX, RGB_PLANAR_TO_CLIP_ENTRY } from "./kernels/nv12_to_rgb_ptx.ts";
import { checkCu, cuda, type DeviceContext, withContext } from "./driver.ts";
import type { CudaFrames } from "./cuda_buffer.ts";
import { InvalidArgumentError } from "../errors.ts";
import { type Normalisation, orientMap } from "../media/orient.ts";

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

/**
 * Parameters of one clip placement: `frames` planar RGB frames of `srcWidth`×`srcHeight` (coded orientation,
 * packed one after another at `src`) become `width`×`height` output frames (after turning) at `dst`, channel `c`
 * of pixel (x, y) of frame t at element `t·strides.t + c·strides.c + y·strides.y + x·strides.x`.
 */
export interface PlaceClip {
  src: bigint;
  srcWidth: number;
  srcHeight: number;
  frames: number;
  dst: bigint;
  width: number;
  height: number;
  /** Element strides of the destination (elements are bytes, or floats with `norm`). */
  strides: { x: number; y: number; c: number; t: number };
  /** Counter-clockwise degrees (a multiple of 90) and the mirror after turning, as `FrameWriter` does them. */
  rotation: number;
  mirror: boolean;
  /** `float32` output: `v · scale[c] + offset[c]`; null for bytes. */
  norm: Normalisation | null;
}

type KernelArg = ["u64", bigint | number] | ["u32" | "i32" | "f32", number];

/** The module's `CUfunction`s in `dc` (loads the module on first use; `dc` must be current). */
const functions = new WeakMap<DeviceContext, Map<string, Deno.PointerObject>>();
const BLOCK_X = 32;
const BLOCK_Y = 8;

function kernel(dc: DeviceContext, entry: string): Deno.PointerObject {
  let known = functions.get(dc);
  const f = known?.get(entry);
  if (f) return f;
  const cu = cuda();
  if (known === undefined) {
    const mod = new OutParam();
    checkCu(cu.cuModuleLoadData(mod.bytes, cstr(NV12_TO_RGB_PTX)), "NV12 to RGB kernel", "cuModuleLoadData");
    const module = mod.pointer;
    known = new Map([["", module as Deno.PointerObject]]);
    functions.set(dc, known);
    dc.cleanups.push(() => {
      functions.delete(dc);
      cu.cuModuleUnload(module);
    });
  }
  const fn = new OutParam();
  checkCu(cu.cuModuleGetFunction(fn.bytes, known.get("")!, cstr(entry)), entry, "cuModuleGetFunction");
  known.set(entry, fn.pointer as Deno.PointerObject);
  return fn.pointer as Deno.PointerObject;
}

/**
 * Packs a kernel's arguments as `cuLaunchKernel` wants them: an array of pointers, one per parameter, each to a
 * value of the parameter's exact type.
 */
export function packKernelParams(
  args: readonly KernelArg[],
): { pointers: BigUint64Array<ArrayBuffer>; values: ArrayBuffer } {
  const values = new ArrayBuffer(args.length * 8);
  const dv = new DataView(values);
  args.forEach(([type, v], i) => {
    if (type === "u64") dv.setBigUint64(i * 8, BigInt(v), true);
    else if (type === "u32") dv.setUint32(i * 8, Number(v), true);
    else if (type === "f32") dv.setFloat32(i * 8, Number(v), true);
    else dv.setInt32(i * 8, Number(v), true);
  });
  const base = BigInt(Deno.UnsafePointer.value(Deno.UnsafePointer.of(values)));
  const pointers = new BigUint64Array(args.length);
  for (let i = 0; i < args.length; i++) pointers[i] = base + BigInt(i * 8);
  return { pointers, values };
}

function launch(
  dc: DeviceContext,
  entry: string,
  args: readonly KernelArg[],
  grid: [number, number, number],
  stream: Deno.PointerValue,
): void {
  const f = kernel(dc, entry);
  const { pointers, values } = packKernelParams(args);
  checkCu(
    cuda().cuLaunchKernel(
      f,
      Math.ceil(grid[0] / BLOCK_X),
      Math.ceil(grid[1] / BLOCK_Y),
      grid[2],
      BLOCK_X,
      BLOCK_Y,
      1,
      0,
      stream,
      new Uint8Array(pointers.buffer),
      null,
    ),
    entry,
    "cuLaunchKernel",
  );
  void values; // kept alive until here: the driver reads the values during the call
}

/** Launches the conversion on `stream` (null: the default stream). `dc` must be current. */
export function launchNv12ToRgb(dc: DeviceContext, c: Nv12ToRgb, stream: Deno.PointerValue = null): void {
  launch(
    dc,
    NV12_TO_RGB_ENTRY,
    [
      ["u64", c.luma],
      ["u64", c.chroma],
      ["u32", c.srcPitch],
      ["u64", c.dst],
      ["u32", c.width],
      ["u64", c.width * c.height],
      ["u32", c.width],
      ["u32", c.height],
      ["i32", c.matrix === "bt709" ? 1 : 0],
      ["i32", (c.fullRange ? 1 : 0) | (c.bgr ? 2 : 0)],
    ],
    [c.width, c.height, 1],
    stream,
  );
}

/** Launches a clip placement (every frame at once) on `stream`. `dc` must be current. */
export function launchPlaceClip(dc: DeviceContext, c: PlaceClip, stream: Deno.PointerValue = null): void {
  const map = orientMap(c.srcWidth, c.srcHeight, c.rotation, c.mirror);
  const plane = c.srcWidth * c.srcHeight;
  const norm = c.norm ?? { scale: [1, 1, 1], offset: [0, 0, 0] };
  launch(
    dc,
    RGB_PLANAR_TO_CLIP_ENTRY,
    [
      ["u64", c.src],
      ["u32", c.srcWidth],
      ["u64", plane],
      ["u64", 3 * plane],
      ["u64", c.dst],
      ["u32", c.width],
      ["u32", c.height],
      ["u64", c.strides.x],
      ["u64", c.strides.y],
      ["u64", c.strides.c],
      ["u64", c.strides.t],
      ...map.map((v): KernelArg => ["i32", v]),
      ["i32", c.norm === null ? 0 : 1],
      ...norm.scale.map((v): KernelArg => ["f32", v]),
      ...norm.offset.map((v): KernelArg => ["f32", v]),
    ],
    [c.width, c.height, c.frames],
    stream,
  );
}

/**
 * Places planar RGB `frames` (as decoded, coded orientation) at device address `dst` with {@link launchPlaceClip}
 * and waits for the kernel (the caller reads or hands on the memory next).
 */
export function placeFrames(
  frames: CudaFrames,
  dst: bigint,
  o: Omit<PlaceClip, "src" | "srcWidth" | "srcHeight" | "frames" | "dst">,
): void {
  if (frames.pixelFormat !== "rgb24-planar") {
    throw new InvalidArgumentError(`placeFrames: frames must be rgb24-planar, not ${frames.pixelFormat}`);
  }
  if (frames.pts.length === 0) return;
  withContext(frames.context, () => {
    launchPlaceClip(frames.context, {
      ...o,
      src: frames.devicePtr,
      srcWidth: frames.width,
      srcHeight: frames.height,
      frames: frames.pts.length,
      dst,
    });
    checkCu(cuda().cuStreamSynchronize(null), "clip placement", "cuStreamSynchronize");
  });
}
