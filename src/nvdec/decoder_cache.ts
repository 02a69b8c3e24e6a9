/**
 * This thread's NVDEC decoder (`cuvidCreateDecoder`), kept between decodes: creating one costs ~300 ms, so a
 * stream that fits the cached decoder (same device, codec, chroma format and bit depth; coded size and surface count
 * within its limits) reconfigures it instead (`cuvidReconfigureDecoder`): every field that changes the output
 * (coded size, display area, target size) is sent again on every reuse, so a video with the coded size of the
 * last one but another display area is not cropped as the last one was (torchcodec #1704).
 * {@link releaseDecoderNvdec} destroys it; a failed decode does too (its state is unknown).
 * @module
 */
import { OutParam } from "../../ffi/out_param.ts";
import { CUVIDDECODECREATEINFO, CUVIDRECONFIGUREDECODERINFO } from "../../ffi/nvcuvid/layouts.ts";
import { CUDA_VIDEO_SURFACE } from "../../ffi/nvcuvid/symbols.ts";
import { checkCu, type DeviceContext, nvcuvid, releaseContext, withContext } from "./driver.ts";
import { StructBuffer } from "./struct_buffer.ts";

/** What the parser's sequence callback reports of a stream (`CUVIDEOFORMAT`), as the decoder needs it. */
export interface StreamFormat {
  codec: number;
  codedWidth: number;
  codedHeight: number;
  display: DisplayArea;
  minSurfaces: number;
  bitDepth: number;
  chroma: number;
  fullRange: boolean;
  matrixCoefficients: number;
}

/** A region of the coded frame, in pixels: the decoder crops to it. */
export interface DisplayArea {
  left: number;
  top: number;
  right: number;
  bottom: number;
}

interface CachedDecoder {
  handle: Deno.PointerObject;
  dc: DeviceContext;
  codec: number;
  chroma: number;
  bitDepth: number;
  maxWidth: number;
  maxHeight: number;
  surfaces: number;
}

let cached: CachedDecoder | undefined;
/** Decoders this thread created, and reuses of its cached one (each a `cuvidReconfigureDecoder`). */
const counts = { created: 0, reconfigured: 0 };

/** How often this thread's cache created a decoder and how often it reconfigured the cached one, so far. */
export function decoderCacheStats(): { created: number; reconfigured: number } {
  return { ...counts };
}

/** The handle of this thread's decoder, or null before a sequence header configured one. */
export function cachedDecoder(): Deno.PointerObject | null {
  return cached?.handle ?? null;
}

/** Destroys this thread's cached decoder, if any, and drops its context reference. */
export function releaseDecoderNvdec(): void {
  const c = cached;
  if (!c) return;
  cached = undefined;
  try {
    withContext(c.dc, () => checkCu(nvcuvid().cuvidDestroyDecoder(c.handle), "", "cuvidDestroyDecoder"));
  } finally {
    releaseContext(c.dc);
  }
}

/**
 * Makes this thread's decoder decode `f` into `outWidth`×`outHeight` frames of `area`: reconfigures the cached
 * one when it fits, else creates one (the old one destroyed). Returns the decode-surface count for the parser.
 */
export function configureDecoder(
  dc: DeviceContext,
  f: StreamFormat,
  area: DisplayArea,
  outWidth: number,
  outHeight: number,
  source: string,
): number {
  const surfaces = Math.min(32, Math.max(f.minSurfaces, 1) + 4);
  const c = cached;
  if (
    c && c.dc === dc && c.codec === f.codec && c.chroma === f.chroma && c.bitDepth === f.bitDepth &&
    f.codedWidth <= c.maxWidth &&
    f.codedHeight <= c.maxHeight && surfaces <= c.surfaces
  ) {
    const r = new StructBuffer(CUVIDRECONFIGUREDECODERINFO)
      .u32("ulWidth", f.codedWidth).u32("ulHeight", f.codedHeight)
      .u32("ulTargetWidth", outWidth).u32("ulTargetHeight", outHeight)
      .u32("ulNumDecodeSurfaces", c.surfaces)
      .i16("displayLeft", area.left).i16("displayTop", area.top).i16("displayRight", area.right).i16(
        "displayBottom",
        area.bottom,
      );
    checkCu(nvcuvid().cuvidReconfigureDecoder(c.handle, r.bytes), source, "cuvidReconfigureDecoder");
    counts.reconfigured++;
    return c.surfaces;
  }
  releaseDecoderNvdec();
  const ci = new StructBuffer(CUVIDDECODECREATEINFO)
    .u64("ulWidth", f.codedWidth).u64("ulHeight", f.codedHeight).u64("ulNumDecodeSurfaces", surfaces)
    .i32("CodecType", f.codec).i32("ChromaFormat", f.chroma).u64("bitDepthMinus8", f.bitDepth - 8)
    .u64("ulMaxWidth", f.codedWidth).u64("ulMaxHeight", f.codedHeight)
    .i16("displayLeft", area.left).i16("displayTop", area.top).i16("displayRight", area.right).i16(
      "displayBottom",
      area.bottom,
    )
    .i32("OutputFormat", CUDA_VIDEO_SURFACE.NV12).i32("DeinterlaceMode", 0)
    .u64("ulTargetWidth", outWidth).u64("ulTargetHeight", outHeight).u64("ulNumOutputSurfaces", 2);
  const h = new OutParam();
  checkCu(nvcuvid().cuvidCreateDecoder(h.bytes, ci.bytes), source, "cuvidCreateDecoder");
  counts.created++;
  dc.refs++; // the cached decoder holds its own context reference
  cached = {
    handle: h.pointer as Deno.PointerObject,
    dc,
    codec: f.codec,
    chroma: f.chroma,
    bitDepth: f.bitDepth,
    maxWidth: f.codedWidth,
    maxHeight: f.codedHeight,
    surfaces,
  };
  return surfaces;
}
