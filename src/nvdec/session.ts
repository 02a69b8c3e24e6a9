/**
 * One NVDEC decode of one run of packets: {@link NvdecSession} holds what the parser's three callbacks
 * (`Deno.UnsafeCallback`s run synchronously inside `cuvidParseVideoData`) need and do. The sequence callback
 * checks the stream (8-bit 4:2:0 within `cuvidGetDecoderCaps`'s limits, an even output size), picks the colour
 * matrix and configures this thread's decoder (`decoder_cache.ts`: hardware resize to the target size, crop to
 * the display area); the decode callback decodes a picture unless it is a non-reference one whose frame fills no
 * position (`ShownFrames`); the display callback hands the frame to the output's `PositionFiller` (the CPU's bookkeeping,
 * `src/media/position_filler.ts`), which says what to write where. The session is that filler's `FrameTarget`: a
 * surface is mapped only when a frame fills a position or is kept back for later positions (converted once into a
 * scratch frame, copied into each). An exception in a callback would be swallowed by the C side: it is stored
 * (`error`), the callback returns 0, and the caller rethrows it after the parse returns.
 * @module
 */
import { OutParam } from "../../ffi/out_param.ts";
import {
  CUVIDEOFORMAT,
  CUVIDPARSERDISPINFO,
  CUVIDPICPARAMS,
  CUVIDPROCPARAMS,
} from "../../ffi/nvcuvid/layouts.ts";
import { CUDA_VIDEO_CHROMA } from "../../ffi/nvcuvid/symbols.ts";
import { CUDA_MEMCPY2D } from "../../ffi/cuda/layouts.ts";
import { CU_MEMORYTYPE } from "../../ffi/cuda/symbols.ts";
import { InvalidArgumentError, NvdecUnsupportedError } from "../errors.ts";
import { NOPTS, ptsToSeconds, type VideoPackets } from "../media/packets.ts";
import { framesInWindow, type PositionPlan, ShownFrames, StartOver } from "../media/frame_select.ts";
import { type FrameTarget, PositionFiller } from "../media/position_filler.ts";
import type { CropRect } from "../media/crop.ts";
import { checkCu, cuda, type DeviceContext, NVDEC_SETTINGS, workStream } from "../cuda/driver.ts";
import { nvcuvid } from "./nvcuvid.ts";
import { timeStep } from "./step_times.ts";
import { CudaBuffer, type NvdecPixelFormat, threadScratch } from "../cuda/cuda_buffer.ts";
import { type ColorMatrix, launchNv12ToRgb } from "./convert.ts";
import { StructBuffer, StructView } from "../cuda/struct_buffer.ts";
import {
  cachedDecoder,
  configureDecoder,
  decoderCaps,
  type DisplayArea,
  type StreamFormat,
} from "./decoder_cache.ts";

/** What a session makes of the frames: size, region, layout, destination (`NvdecOptions`' fields). */
export interface SessionOutput {
  width?: number;
  height?: number;
  crop?: CropRect;
  pixelFormat?: NvdecPixelFormat;
  batch?: CudaBuffer;
}

/** A displayed picture, mapped (`cuvidMapVideoFrame64`) the first time its pixels are wanted. */
class DisplayedPicture {
  #ptr = 0n;
  #pitch = 0;
  #mapped = false;
  constructor(
    readonly info: StructView<typeof CUVIDPARSERDISPINFO>,
    readonly decoder: Deno.PointerObject,
    readonly source: string,
    readonly stream: Deno.PointerValue,
  ) {}

  /** The mapped surface: its device address and pitch. */
  surface(): { ptr: bigint; pitch: number } {
    if (!this.#mapped) {
      const vpp = new StructBuffer(CUVIDPROCPARAMS)
        .i32("progressive_frame", this.info.i32("progressive_frame"))
        .i32("top_field_first", this.info.i32("top_field_first"))
        .ptr("output_stream", this.stream);
      const dptr = new OutParam();
      const pitch = new Uint32Array(1);
      const rc = timeStep("map (waits for the picture)", () =>
        nvcuvid().cuvidMapVideoFrame64(
          this.decoder,
          this.info.i32("picture_index"),
          dptr.bytes,
          new Uint8Array(pitch.buffer),
          vpp.bytes,
        ));
      checkCu(rc, this.source, "cuvidMapVideoFrame64");
      this.#ptr = dptr.u64[0];
      this.#pitch = pitch[0];
      this.#mapped = true;
    }
    return { ptr: this.#ptr, pitch: this.#pitch };
  }

  /** Unmaps it, if it was mapped. */
  unmap(): void {
    if (!this.#mapped) return;
    this.#mapped = false;
    const rc = timeStep("unmap", () => nvcuvid().cuvidUnmapVideoFrame64(this.decoder, this.#ptr));
    checkCu(rc, this.source, "cuvidUnmapVideoFrame64");
  }
}

/** Copies `rows` rows of `width` bytes within device memory, on the thread's stream (`dc` current). */
function copy2d(
  dc: DeviceContext,
  src: bigint,
  srcPitch: number,
  dst: bigint,
  width: number,
  rows: number,
): void {
  const c = new StructBuffer(CUDA_MEMCPY2D)
    .u32("srcMemoryType", CU_MEMORYTYPE.DEVICE).u64("srcDevice", src).u64("srcPitch", srcPitch)
    .u32("dstMemoryType", CU_MEMORYTYPE.DEVICE).u64("dstDevice", dst).u64("dstPitch", width)
    .u64("WidthInBytes", width).u64("Height", rows);
  checkCu(cuda().cuMemcpy2DAsync_v2(c.bytes, workStream(dc)), "NV12 surface to output", "cuMemcpy2DAsync_v2");
}

/** The stream's format, as the parser reports it to the sequence callback (`CUVIDEOFORMAT`). */
function readStreamFormat(fmtPtr: Deno.PointerValue): StreamFormat {
  const v = new StructView(CUVIDEOFORMAT, fmtPtr as Deno.PointerObject);
  return {
    codec: v.i32("codec"),
    codedWidth: v.u32("coded_width"),
    codedHeight: v.u32("coded_height"),
    display: {
      left: v.i32("displayLeft"),
      top: v.i32("displayTop"),
      right: v.i32("displayRight"),
      bottom: v.i32("displayBottom"),
    },
    minSurfaces: v.u8("min_num_decode_surfaces"),
    bitDepth: 8 + v.u8("bit_depth_luma_minus8"),
    chroma: v.i32("chroma_format"),
    fullRange: ((v.u8("videoSignalFlags") >> 3) & 1) === 1,
    matrixCoefficients: v.u8("matrix_coefficients"),
  };
}

/**
 * Whether sluice's NVDEC path can decode the stream of `p` on `dc`'s GPU: 8-bit 4:2:0, within the decoder's
 * limits (`cuvidGetDecoderCaps`); throws NvdecUnsupportedError naming the limit otherwise.
 */
function checkSupported(f: StreamFormat, p: VideoPackets, dc: DeviceContext): void {
  const src = p.source;
  if (f.bitDepth !== 8) {
    throw new NvdecUnsupportedError(
      `${src}: ${f.bitDepth}-bit video is not supported by sluice's NVDEC path (P016 output is not implemented); use the CPU decoder`,
      `bit depth ${f.bitDepth}`,
    );
  }
  if (f.chroma !== CUDA_VIDEO_CHROMA.YUV420) {
    throw new NvdecUnsupportedError(
      `${src}: NVDEC path supports 4:2:0 chroma only (chroma format ${f.chroma})`,
      "chroma 4:2:0",
    );
  }
  const caps = decoderCaps(f, dc.device, src);
  const limit = (what: string, msg: string) =>
    new NvdecUnsupportedError(`${src}: the GPU's decoder ${msg}`, what);
  if (!caps.getU8("bIsSupported")) {
    throw limit(`codec ${p.codec}`, `does not support ${p.codec} 4:2:0 8-bit`);
  }
  const maxW = caps.getU32("nMaxWidth"), maxH = caps.getU32("nMaxHeight");
  if (f.codedWidth > maxW) {
    throw limit(
      `max coded width ${maxW}`,
      `supports coded width up to ${maxW}, stream has ${f.codedWidth}`,
    );
  }
  if (f.codedHeight > maxH) {
    throw limit(
      `max coded height ${maxH}`,
      `supports coded height up to ${maxH}, stream has ${f.codedHeight}`,
    );
  }
  const mbs = (f.codedWidth / 16) * (f.codedHeight / 16), maxMbs = caps.getU32("nMaxMBCount");
  if (mbs > maxMbs) {
    throw limit(`max macroblocks ${maxMbs}`, `supports ${maxMbs} macroblocks, stream has ${mbs}`);
  }
  const minW = caps.getU16("nMinWidth"), minH = caps.getU16("nMinHeight");
  if (f.codedWidth < minW || f.codedHeight < minH) {
    throw limit(
      `min size ${minW}x${minH}`,
      `needs at least ${minW}x${minH}, stream is ${f.codedWidth}x${f.codedHeight}`,
    );
  }
}

/** One decode's state; see the module docs. */
export class NvdecSession implements FrameTarget<DisplayedPicture> {
  error: unknown;
  format: StreamFormat | undefined;
  outWidth = 0;
  outHeight = 0;
  matrix: ColorMatrix = "bt601";
  fullRange = false;
  buffer: CudaBuffer | undefined;
  owned = false;
  readonly filler: PositionFiller<DisplayedPicture>;
  /** Frames the parser displayed. */
  displayed = 0;
  /** Pictures sent to `cuvidDecodePicture`, and pictures left undecoded (their frames fill no position). */
  decodedPictures = 0;
  skippedPictures = 0;
  /** Grid sampling: the frame kept back for later positions (converted once, copied into each); a view of the
   * thread's scratch (disposing it frees nothing) unless `SLUICE_NVDEC_REUSE=off`. */
  #scratch: CudaBuffer | undefined;
  readonly #p: VideoPackets;
  readonly #o: SessionOutput;
  readonly #fmt: NvdecPixelFormat;
  readonly #dc: DeviceContext;
  /** Which frames fill a position (null when the packets' timestamps cannot tell). */
  readonly #shown: ShownFrames | null;
  /** Skip non-reference pictures that fill no position. */
  readonly #skip: boolean;
  /** Decode callbacks so far (picture `k` is packet `k`), and each surface's expected timestamp. */
  #pictures = 0;
  readonly #picturePts = new Map<number, bigint>();
  readonly #skipped = new Set<number>();

  /**
   * @param leaveOut leave out what no position shows: convert a frame kept back only when it will fill a position, and
   *   (with `skip`, H.264/HEVC) do not decode the non-reference pictures no position shows
   */
  constructor(
    p: VideoPackets,
    plan: PositionPlan,
    o: SessionOutput,
    dc: DeviceContext,
    mode: { leaveOut: boolean; skip: boolean },
  ) {
    this.#p = p;
    this.#o = o;
    this.#fmt = o.pixelFormat ?? "rgb24-planar";
    this.#dc = dc;
    const shown = mode.leaveOut ? ShownFrames.of(p, [plan]) : null;
    this.#shown = shown;
    this.#skip = mode.skip && shown !== null && (p.codec === "h264" || p.codec === "hevc");
    this.filler = new PositionFiller(plan, this, shown === null ? null : (pts) => !shown.unshown(pts));
  }

  get frameSize(): number {
    const px = this.outWidth * this.outHeight;
    return this.#fmt === "nv12" ? (px * 3) / 2 : 3 * px;
  }

  /** `pfnSequenceCallback`: returns the decode-surface count, 0 on error. */
  sequence(fmtPtr: Deno.PointerValue): number {
    return this.#guard(() => {
      const f = readStreamFormat(fmtPtr);
      checkSupported(f, this.#p, this.#dc);
      this.format = f;
      this.#chooseColor(f);
      const area = this.#displayArea(f);
      this.outWidth = this.#o.width ?? area.right - area.left;
      this.outHeight = this.#o.height ?? area.bottom - area.top;
      if (this.outWidth % 2 || this.outHeight % 2) {
        throw new NvdecUnsupportedError(
          `${this.#p.source}: NVDEC output size ${this.outWidth}x${this.outHeight} must be even; pass even width/height`,
          "even output size",
        );
      }
      this.#allocateOutput();
      return timeStep(
        "decoder configure",
        () => configureDecoder(this.#dc, f, area, this.outWidth, this.outHeight, this.#p.source),
      );
    });
  }

  /** `pfnDecodePicture`: decodes the picture, unless it is a non-reference one whose frame fills no position. */
  decode(pic: Deno.PointerValue): number {
    return this.#guard(() => {
      const handle = cachedDecoder();
      if (handle === null) {
        throw new InvalidArgumentError(
          `${this.#p.source}: NVDEC parser sent a picture before any sequence header`,
        );
      }
      if (this.#skip) {
        const v = new StructView(CUVIDPICPARAMS, pic as Deno.PointerObject);
        const k = this.#pictures++;
        if (v.i32("field_pic_flag") !== 0 || k >= this.#p.numPackets) {
          throw new StartOver(`picture ${k} is not packet ${k}'s frame`);
        }
        const idx = v.i32("CurrPicIdx"), pts = this.#p.pts[k];
        this.#picturePts.set(idx, pts);
        if (v.i32("ref_pic_flag") === 0 && this.#shown!.unshown(pts)) {
          this.#skipped.add(idx);
          return 1;
        }
      }
      const rc = timeStep("cuvidDecodePicture", () => nvcuvid().cuvidDecodePicture(handle, pic));
      checkCu(rc, this.#p.source, "cuvidDecodePicture");
      this.decodedPictures++;
      return 1;
    });
  }

  /**
   * `pfnDisplayPicture`: the frame goes to the position filler (a picture left undecoded, by its time only), which
   * maps and converts it only when it fills positions or is kept back for later ones.
   */
  display(infoPtr: Deno.PointerValue): number {
    return this.#guard(() => {
      if (infoPtr === null) return 1;
      const info = new StructView(CUVIDPARSERDISPINFO, infoPtr);
      const ts = info.i64("timestamp");
      const idx = info.i32("picture_index");
      const t = ts === NOPTS ? NaN : ptsToSeconds(ts, this.#p.timeBase);
      if (this.#skip) {
        if (this.#picturePts.get(idx) !== ts) throw new StartOver(`picture ${idx} shows at pts ${ts}`);
        if (this.#skipped.delete(idx)) {
          this.skippedPictures++;
          this.filler.offerSkipped(t);
          return 1;
        }
      }
      this.displayed++;
      const pic = new DisplayedPicture(info, cachedDecoder()!, this.#p.source, workStream(this.#dc));
      try {
        this.filler.offer(pic, t, ts);
      } finally {
        pic.unmap();
      }
      return 1;
    });
  }

  /** End of stream: the frame kept back fills the positions left. */
  finish(): void {
    this.filler.finish();
  }

  /** Frees the scratch frame. */
  releaseScratch(): void {
    this.filler.release();
    this.#scratch?.[Symbol.dispose]();
    this.#scratch = undefined;
  }

  // ---------------------------------------------------------------------------------------- FrameTarget

  /** Converts the picture into position `first`, copies it into the next `count - 1`. */
  write(pic: DisplayedPicture, first: number, count: number): void {
    const s = pic.surface();
    this.#writeFrame(s.ptr, s.pitch, this.#framePtr(first));
    for (let k = 1; k < count; k++) this.#copyFrame(this.#framePtr(first), this.#framePtr(first + k));
  }

  /** Converts the picture into the scratch frame. */
  keep(pic: DisplayedPicture): void {
    const s = pic.surface();
    this.#writeFrame(s.ptr, s.pitch, this.#scratchPtr());
  }

  /** Copies the scratch frame into positions `[first, first + count)`. */
  writeKept(first: number, count: number): void {
    for (let k = 0; k < count; k++) this.#copyFrame(this.#scratchPtr(), this.#framePtr(first + k));
  }

  /** Nothing to free: the scratch frame is reused until {@link releaseScratch}. */
  drop(): void {}

  /** Device address of output position `position`, checked against the buffer. */
  #framePtr(position: number): bigint {
    if ((position + 1) * this.frameSize > this.buffer!.byteLength) {
      throw new InvalidArgumentError(
        `${this.#p.source}: decodeVideoNvdec: output buffer holds only ${position} frames`,
      );
    }
    return this.buffer!.devicePtr + BigInt(position * this.frameSize);
  }

  #scratchPtr(): bigint {
    // the thread's (kept between decodes, see `threadScratch`), else one of its own
    this.#scratch ??= threadScratch("kept", this.frameSize, this.#dc.device, NVDEC_SETTINGS.reuse) ??
      CudaBuffer.alloc(this.frameSize, this.#dc.device);
    return this.#scratch.devicePtr;
  }

  #copyFrame(src: bigint, dst: bigint): void {
    copy2d(this.#dc, src, this.outWidth, dst, this.outWidth, this.frameSize / this.outWidth);
  }

  #writeFrame(src: bigint, pitch: number, dst: bigint): void {
    const w = this.outWidth;
    const h = this.outHeight;
    const chroma = src + BigInt(pitch * ((h + 1) & ~1));
    if (this.#fmt === "nv12") {
      copy2d(this.#dc, src, pitch, dst, w, h);
      copy2d(this.#dc, chroma, pitch, dst + BigInt(w * h), w, h / 2);
      return;
    }
    timeStep("convert kernel", () =>
      launchNv12ToRgb(this.#dc, {
        luma: src,
        chroma,
        srcPitch: pitch,
        dst,
        width: w,
        height: h,
        matrix: this.matrix,
        fullRange: this.fullRange,
        bgr: this.#fmt === "bgr24-planar",
      }, workStream(this.#dc)));
  }

  #guard(fn: () => number): number {
    if (this.error !== undefined) return 0;
    try {
      return fn();
    } catch (e) {
      this.error = e;
      return 0;
    }
  }

  /** BT.709 when the stream (or, failing that, the container) says so, else BT.601; range likewise. */
  #chooseColor(f: StreamFormat): void {
    const AVCOL_SPC_BT709 = 1, AVCOL_SPC_UNSPECIFIED = 2, AVCOL_RANGE_JPEG = 2;
    const m = f.matrixCoefficients === AVCOL_SPC_UNSPECIFIED || f.matrixCoefficients === 0
      ? this.#p.colorSpace
      : f.matrixCoefficients;
    this.matrix = m === AVCOL_SPC_BT709 ? "bt709" : "bt601";
    this.fullRange = f.fullRange || this.#p.colorRange === AVCOL_RANGE_JPEG;
  }

  #displayArea(f: StreamFormat): DisplayArea {
    const c = this.#o.crop;
    if (!c) return f.display;
    const area = { left: f.display.left + c.left, top: f.display.top + c.top, right: 0, bottom: 0 };
    area.right = area.left + c.width;
    area.bottom = area.top + c.height;
    if (
      c.left < 0 || c.top < 0 || c.width < 2 || c.height < 2 || area.right > f.display.right ||
      area.bottom > f.display.bottom
    ) {
      throw new InvalidArgumentError(
        `${this.#p.source}: decodeVideoNvdec: crop ${JSON.stringify(c)} is outside the frame`,
      );
    }
    return area;
  }

  #allocateOutput(): void {
    if (this.buffer) return;
    if (this.#o.batch) {
      this.buffer = this.#o.batch;
      return;
    }
    const frames = Math.max(1, this.filler.selector.capacity(framesInWindow(this.#p)));
    this.buffer = CudaBuffer.alloc(frames * this.frameSize, this.#dc.device);
    this.owned = true;
  }
}
