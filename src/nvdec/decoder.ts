/**
 * `decodeVideoNvdec(packets, opts)`: GPU decode through libnvcuvid. Same input as the CPU `decodeVideo`
 * (a {@link VideoPackets}, whole stream or window) and the same frame choice: the display callback asks the frame
 * selector (`src/media/frame_select.ts`, the CPU decoder's rule) what each frame does, and only frames that fill
 * output slots (or are held back for later ones, under `frameRate`/`"uniform"` sampling) are mapped and converted.
 *
 * - The parser's three callbacks are `Deno.UnsafeCallback`s run synchronously inside `cuvidParseVideoData`.
 *   An exception in a callback would be swallowed by the C side: it is stored, the callback returns 0, and it
 *   is rethrown after the call returns.
 * - The parser wants Annex-B H.264/HEVC. Length-prefixed packets (MP4/MKV: avcC/hvcC extradata, first byte 1)
 *   are re-packed with `h264_mp4toannexb` / `hevc_mp4toannexb` (`src/media/bsf.ts`) before parsing, so
 *   `decodeVideoNvdec(await demuxVideo(file))` works; packets demuxed with `bsf` already are used as they are.
 * - VP9 frames and AV1 temporal units go to the parser as demuxed. AV1's sequence header OBUs from av1C
 *   (after its 4-byte header) are handed over as FFmpeg's `cuviddec` does: in `pExtVideoInfo`
 *   (`CUVIDEOFORMATEX.raw_seqhdr_data`) and as a first, untimed packet.
 * - Resize is done by the hardware (decoder target size), crop by the display area.
 * - 10-bit and 4:2:2/4:4:4 streams are rejected with {@link NvdecUnsupportedError} in the sequence callback
 *   (P016 output is not implemented); so is anything outside `cuvidGetDecoderCaps`'s limits.
 * - Odd display sizes (e.g. 161x121) are rejected with {@link NvdecUnsupportedError} unless `width`/`height`
 *   (even) are given: NV12 output has whole 2x2 chroma blocks.
 * - The decoder is cached per thread and reconfigured (`cuvidReconfigureDecoder`) for the next stream when
 *   it fits; {@link releaseDecoderNvdec} destroys it. Any failure destroys it and releases everything taken.
 * - Decoding less: which frames fill slots is known before decoding (`framesShown`, a dry run of the selector
 *   over the packets' times). A frame held back for later slots is converted (into the scratch frame) only when
 *   it will fill one; with `skipUnshown` (H.264, HEVC), a picture the parser marks non-reference
 *   (`CUVIDPICPARAMS.ref_pic_flag` 0) whose frame fills no slot is not sent to `cuvidDecodePicture`, and when
 *   the parser displays it, its time is offered to the selector as if it had been decoded. Picture `k` of the
 *   decode callback is packet `k`; that, the display timestamps and the plan are checked as the parse goes, and
 *   anything unexpected (field pictures, a picture without its packet's timestamp) starts the decode over with
 *   every picture decoded and every held frame converted. Parsing stops once every slot is filled.
 * @module
 */
import { OutSlot } from "../../ffi/out_slot.ts";
import {
  CUVIDDECODECAPS,
  CUVIDDECODECREATEINFO,
  CUVIDEOFORMAT,
  CUVIDEOFORMATEX,
  CUVIDPARSERDISPINFO,
  CUVIDPARSERPARAMS,
  CUVIDPICPARAMS,
  CUVIDPROCPARAMS,
  CUVIDRECONFIGUREDECODERINFO,
  CUVIDSOURCEDATAPACKET,
  RAW_SEQHDR_CAPACITY,
} from "../../ffi/nvcuvid/layouts.ts";
import {
  CUDA_VIDEO_CHROMA,
  CUDA_VIDEO_CODEC,
  CUDA_VIDEO_SURFACE,
  CUVID_PKT,
  PARSER_CALLBACK,
} from "../../ffi/nvcuvid/symbols.ts";
import { CUDA_MEMCPY2D } from "../../ffi/cuda/layouts.ts";
import { CU_MEMORYTYPE } from "../../ffi/cuda/symbols.ts";
import { InvalidArgumentError, NvdecUnsupportedError } from "../errors.ts";
import { NOPTS, ptsToSeconds, VideoPackets } from "../media/packets.ts";
import {
  FrameSelector,
  framesShown,
  resolveSampling,
  type SamplingOptions,
  type SlotPlan,
} from "../media/frame_select.ts";
import { framesInWindow, slotPlan } from "../media/decode.ts";
import type { CropRect } from "../media/crop.ts";
import { filterPackets } from "../media/bsf.ts";
import {
  acquireContext,
  checkCu,
  cuda,
  cudaError,
  type DeviceContext,
  nvcuvid,
  releaseContext,
  withContext,
} from "./driver.ts";
import { CudaBuffer, CudaFrames, type NvdecPixelFormat } from "./cuda_buffer.ts";
import { type ColorMatrix, launchNv12ToRgb } from "./convert.ts";
import { StructBuffer, StructView } from "./struct_buffer.ts";
import { settle } from "../settle.ts";

/** Options of {@link decodeVideoNvdec}: the frame choice (`sampling`, `frameRate`, `numFrames`) is the CPU's. */
export interface NvdecOptions extends SamplingOptions {
  /** CUDA device ordinal (default 0). */
  device?: number;
  /** Output size (default: the displayed or cropped size); must be even (a hardware constraint). */
  width?: number;
  /** See `width`. */
  height?: number;
  /** Region of the coded frame (within its display area) taken before resizing: the decoder's display area. */
  crop?: CropRect;
  /** Default `"rgb24-planar"`. */
  pixelFormat?: NvdecPixelFormat;
  /** Write into this buffer (e.g. a slot of a batch) instead of allocating; it must be large enough. */
  batch?: CudaBuffer;
  /** Max frames the parser may hold before display (`ulMaxDisplayDelay`, default 2). */
  displayDelay?: number;
  /**
   * H.264 and HEVC: leave undecoded the non-reference pictures no output slot shows (`ref_pic_flag` 0; default
   * true): they are not sent to `cuvidDecodePicture`. The output is the same either way (see the module docs).
   */
  skipUnshown?: boolean;
}

const CODECS: Record<string, number> = {
  h264: CUDA_VIDEO_CODEC.H264,
  hevc: CUDA_VIDEO_CODEC.HEVC,
  vp9: CUDA_VIDEO_CODEC.VP9,
  av1: CUDA_VIDEO_CODEC.AV1,
};

// ------------------------------------------------------------------------------------------ cached decoder

interface CachedDecoder {
  handle: Deno.PointerObject;
  dc: DeviceContext;
  codec: number;
  maxWidth: number;
  maxHeight: number;
  surfaces: number;
}

let cached: CachedDecoder | undefined;

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

// ------------------------------------------------------------------------------------------ one decode

interface StreamFormat {
  codec: number;
  codedWidth: number;
  codedHeight: number;
  display: { left: number; top: number; right: number; bottom: number };
  minSurfaces: number;
  bitDepth: number;
  chroma: number;
  fullRange: boolean;
  matrixCoefficients: number;
}

class Session {
  error: unknown;
  format: StreamFormat | undefined;
  outWidth = 0;
  outHeight = 0;
  matrix: ColorMatrix = "bt601";
  fullRange = false;
  buffer: CudaBuffer | undefined;
  owned = false;
  readonly selector: FrameSelector;
  /** Frames the parser displayed. */
  displayed = 0;
  /** Pictures sent to `cuvidDecodePicture`, and pictures left undecoded (their frames fill no slot). */
  decodedPictures = 0;
  skippedPictures = 0;
  /** Grid sampling: the frame held back for later slots (converted once, copied into each). */
  #scratch: CudaBuffer | undefined;
  /** False while the frame held back has no pixels in the scratch frame (it will fill no slot). */
  #scratchValid = false;
  readonly #p: VideoPackets;
  readonly #o: NvdecOptions;
  readonly #fmt: NvdecPixelFormat;
  readonly #dc: DeviceContext;
  /** Per packet pts: whether its frame fills a slot (null when the packets' timestamps cannot tell). */
  readonly #shown: Map<bigint, boolean> | null;
  /** Skip non-reference pictures that fill no slot; convert held frames only when they will fill one. */
  readonly #skip: boolean;
  readonly #lazy: boolean;
  /** Decode callbacks so far (picture `k` is packet `k`), and each surface's expected timestamp. */
  #pictures = 0;
  readonly #picturePts = new Map<number, bigint>();
  readonly #skipped = new Set<number>();

  constructor(p: VideoPackets, o: NvdecOptions, dc: DeviceContext, mode: { skip: boolean; lazy: boolean }) {
    this.#p = p;
    this.#o = o;
    this.#fmt = o.pixelFormat ?? "rgb24-planar";
    this.#dc = dc;
    const plan = slotPlan(p, resolveSampling(o, (w) => new InvalidArgumentError(w)));
    this.selector = new FrameSelector(plan);
    this.#shown = mode.lazy || mode.skip ? shownByPts(p, plan) : null;
    this.#lazy = mode.lazy && this.#shown !== null;
    this.#skip = mode.skip && this.#shown !== null && (p.codec === "h264" || p.codec === "hevc");
  }

  get frameSize(): number {
    const px = this.outWidth * this.outHeight;
    return this.#fmt === "nv12" ? (px * 3) / 2 : 3 * px;
  }

  /** `pfnSequenceCallback`: returns the decode-surface count, 0 on error. */
  sequence(fmtPtr: Deno.PointerValue): number {
    return this.#guard(() => {
      const v = new StructView(CUVIDEOFORMAT, fmtPtr as Deno.PointerObject);
      const f: StreamFormat = {
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
      this.#checkSupported(f);
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
      return this.#configureDecoder(f, area);
    });
  }

  /** `pfnDecodePicture`: decodes the picture, unless it is a non-reference one whose frame fills no slot. */
  decode(pic: Deno.PointerValue): number {
    return this.#guard(() => {
      if (!cached) {
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
        if (v.i32("ref_pic_flag") === 0 && this.#shown!.get(pts) === false) {
          this.#skipped.add(idx);
          return 1;
        }
      }
      checkCu(nvcuvid().cuvidDecodePicture(cached.handle, pic), this.#p.source, "cuvidDecodePicture");
      this.decodedPictures++;
      return 1;
    });
  }

  /**
   * `pfnDisplayPicture`: asks the frame selector what the frame does; when it fills slots or is held back, maps
   * the surface, converts it into its slot (or the scratch frame), unmaps.
   */
  display(infoPtr: Deno.PointerValue): number {
    return this.#guard(() => {
      if (infoPtr === null) return 1;
      const info = new StructView(CUVIDPARSERDISPINFO, infoPtr);
      const ts = info.i64("timestamp");
      const idx = info.i32("picture_index");
      if (this.#skip) {
        if (this.#picturePts.get(idx) !== ts) throw new StartOver(`picture ${idx} shows at pts ${ts}`);
        if (this.#skipped.delete(idx)) {
          this.#offerSkipped(ts);
          return 1;
        }
      }
      this.displayed++;
      const before = this.selector.filled;
      const d = this.selector.offer(ts === NOPTS ? NaN : ptsToSeconds(ts, this.#p.timeBase));
      if (d.held > 0) this.#fillFromScratch(before, d.held);
      // A frame held back is converted only when it will fill a slot.
      const keep = d.hold && !(this.#lazy && this.#shown!.get(ts) === false);
      if (d.hold && !keep) this.#scratchValid = false;
      if (d.current === 0 && !keep) return 1;
      const vpp = new StructBuffer(CUVIDPROCPARAMS)
        .i32("progressive_frame", info.i32("progressive_frame")).i32(
          "top_field_first",
          info.i32("top_field_first"),
        );
      const dptr = new OutSlot();
      const pitch = new Uint32Array(1);
      const nv = nvcuvid();
      checkCu(
        nv.cuvidMapVideoFrame64(
          cached!.handle,
          info.i32("picture_index"),
          dptr.bytes,
          new Uint8Array(pitch.buffer),
          vpp.bytes,
        ),
        this.#p.source,
        "cuvidMapVideoFrame64",
      );
      try {
        if (d.current > 0) {
          const first = before + d.held;
          this.#writeSlot(dptr.u64[0], pitch[0], this.#slotPtr(first));
          for (let k = 1; k < d.current; k++) this.#copyFrame(this.#slotPtr(first), this.#slotPtr(first + k));
        }
        if (keep) {
          this.#writeSlot(dptr.u64[0], pitch[0], this.#scratchPtr());
          this.#scratchValid = true;
        }
      } finally {
        checkCu(
          nv.cuvidUnmapVideoFrame64(cached!.handle, dptr.u64[0]),
          this.#p.source,
          "cuvidUnmapVideoFrame64",
        );
      }
      return 1;
    });
  }

  /** End of stream: the held frame fills the slots left. */
  finish(): void {
    const before = this.selector.filled;
    const n = this.selector.finish();
    if (n > 0) this.#fillFromScratch(before, n);
  }

  /** Frees the scratch frame. */
  releaseScratch(): void {
    this.#scratch?.[Symbol.dispose]();
    this.#scratch = undefined;
  }

  /** A skipped picture is displayed: the selector sees its time, and must not want its pixels. */
  #offerSkipped(ts: bigint): void {
    this.skippedPictures++;
    const before = this.selector.filled;
    const d = this.selector.offer(ptsToSeconds(ts, this.#p.timeBase));
    if (d.held > 0) this.#fillFromScratch(before, d.held);
    if (d.current > 0) throw new StartOver(`the skipped frame at pts ${ts} fills a slot`);
    if (d.hold) this.#scratchValid = false;
  }

  #fillFromScratch(first: number, count: number): void {
    if (!this.#scratchValid) throw new StartOver("a frame that was not kept fills a slot");
    for (let k = 0; k < count; k++) this.#copyFrame(this.#scratchPtr(), this.#slotPtr(first + k));
  }

  /** Device address of output slot `slot`, checked against the buffer. */
  #slotPtr(slot: number): bigint {
    if ((slot + 1) * this.frameSize > this.buffer!.byteLength) {
      throw new InvalidArgumentError(
        `${this.#p.source}: decodeVideoNvdec: output buffer holds only ${slot} frames`,
      );
    }
    return this.buffer!.devicePtr + BigInt(slot * this.frameSize);
  }

  #scratchPtr(): bigint {
    this.#scratch ??= CudaBuffer.alloc(this.frameSize, this.#dc.device);
    return this.#scratch.devicePtr;
  }

  #copyFrame(src: bigint, dst: bigint): void {
    this.#copy2d(src, this.outWidth, dst, this.outWidth, this.frameSize / this.outWidth);
  }

  #writeSlot(src: bigint, pitch: number, dst: bigint): void {
    const w = this.outWidth;
    const h = this.outHeight;
    const chroma = src + BigInt(pitch * ((h + 1) & ~1));
    if (this.#fmt === "nv12") {
      this.#copy2d(src, pitch, dst, w, h);
      this.#copy2d(chroma, pitch, dst + BigInt(w * h), w, h / 2);
      return;
    }
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
    });
  }

  #copy2d(src: bigint, srcPitch: number, dst: bigint, width: number, rows: number): void {
    const c = new StructBuffer(CUDA_MEMCPY2D)
      .u32("srcMemoryType", CU_MEMORYTYPE.DEVICE).u64("srcDevice", src).u64("srcPitch", srcPitch)
      .u32("dstMemoryType", CU_MEMORYTYPE.DEVICE).u64("dstDevice", dst).u64("dstPitch", width)
      .u64("WidthInBytes", width).u64("Height", rows);
    checkCu(cuda().cuMemcpy2DAsync_v2(c.bytes, null), "NV12 surface to output", "cuMemcpy2DAsync_v2");
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

  #checkSupported(f: StreamFormat): void {
    const src = this.#p.source;
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
    const caps = new StructBuffer(CUVIDDECODECAPS)
      .i32("eCodecType", f.codec).i32("eChromaFormat", f.chroma).u32("nBitDepthMinus8", f.bitDepth - 8);
    checkCu(nvcuvid().cuvidGetDecoderCaps(caps.bytes), src, "cuvidGetDecoderCaps");
    const limit = (what: string, msg: string) =>
      new NvdecUnsupportedError(`${src}: the GPU's decoder ${msg}`, what);
    if (!caps.getU8("bIsSupported")) {
      throw limit(`codec ${this.#p.codec}`, `does not support ${this.#p.codec} 4:2:0 8-bit`);
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

  /** BT.709 when the stream (or, failing that, the container) says so, else BT.601; range likewise. */
  #chooseColor(f: StreamFormat): void {
    const AVCOL_SPC_BT709 = 1, AVCOL_SPC_UNSPECIFIED = 2, AVCOL_RANGE_JPEG = 2;
    const m = f.matrixCoefficients === AVCOL_SPC_UNSPECIFIED || f.matrixCoefficients === 0
      ? this.#p.colorSpace
      : f.matrixCoefficients;
    this.matrix = m === AVCOL_SPC_BT709 ? "bt709" : "bt601";
    this.fullRange = f.fullRange || this.#p.colorRange === AVCOL_RANGE_JPEG;
  }

  #displayArea(f: StreamFormat): { left: number; top: number; right: number; bottom: number } {
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
    const frames = Math.max(1, this.selector.capacity(framesInWindow(this.#p)));
    this.buffer = CudaBuffer.alloc(frames * this.frameSize, this.#dc.device);
    this.owned = true;
  }

  /** Creates the decoder, or reconfigures the cached one when it fits; returns the surface count. */
  #configureDecoder(
    f: StreamFormat,
    area: { left: number; top: number; right: number; bottom: number },
  ): number {
    const surfaces = Math.min(32, Math.max(f.minSurfaces, 1) + 4);
    const c = cached;
    if (
      c && c.dc === this.#dc && c.codec === f.codec && f.codedWidth <= c.maxWidth &&
      f.codedHeight <= c.maxHeight && surfaces <= c.surfaces
    ) {
      const r = new StructBuffer(CUVIDRECONFIGUREDECODERINFO)
        .u32("ulWidth", f.codedWidth).u32("ulHeight", f.codedHeight)
        .u32("ulTargetWidth", this.outWidth).u32("ulTargetHeight", this.outHeight)
        .u32("ulNumDecodeSurfaces", c.surfaces)
        .i16("displayLeft", area.left).i16("displayTop", area.top).i16("displayRight", area.right).i16(
          "displayBottom",
          area.bottom,
        );
      checkCu(
        nvcuvid().cuvidReconfigureDecoder(c.handle, r.bytes),
        this.#p.source,
        "cuvidReconfigureDecoder",
      );
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
      .u64("ulTargetWidth", this.outWidth).u64("ulTargetHeight", this.outHeight).u64(
        "ulNumOutputSurfaces",
        2,
      );
    const h = new OutSlot();
    checkCu(nvcuvid().cuvidCreateDecoder(h.bytes, ci.bytes), this.#p.source, "cuvidCreateDecoder");
    this.#dc.refs++; // the cached decoder holds its own context reference
    cached = {
      handle: h.pointer as Deno.PointerObject,
      dc: this.#dc,
      codec: f.codec,
      maxWidth: f.codedWidth,
      maxHeight: f.codedHeight,
      surfaces,
    };
    return surfaces;
  }
}

function validate(p: VideoPackets, o: NvdecOptions): number {
  const bad = (what: string) => new InvalidArgumentError(`${p.source}: decodeVideoNvdec: ${what}`);
  const codec = CODECS[p.codec];
  if (codec === undefined) {
    throw new NvdecUnsupportedError(
      `${p.source}: codec "${p.codec}" is not decoded by sluice's NVDEC path`,
      `codec ${p.codec}`,
    );
  }
  for (const k of ["width", "height"] as const) {
    const v = o[k];
    if (v !== undefined && (!Number.isInteger(v) || v < 2 || v % 2)) {
      throw bad(`${k} must be an even integer >= 2, got ${v}`);
    }
  }
  const fmt = o.pixelFormat ?? "rgb24-planar";
  if (!["rgb24-planar", "bgr24-planar", "nv12"].includes(fmt)) throw bad(`unknown pixelFormat "${fmt}"`);
  resolveSampling(o, bad);
  return codec;
}

/**
 * H.264/HEVC packets in Annex-B form: length-prefixed ones (avcC/hvcC extradata, whose first byte, the
 * configuration version, is 1) go through the `<codec>_mp4toannexb` bitstream filter; others must already
 * start with a start code.
 */
function toAnnexB(p: VideoPackets): VideoPackets {
  if (p.codec !== "h264" && p.codec !== "hevc") return p;
  if (p.extradata.length > 0 && p.extradata[0] === 1) return filterPackets(p, `${p.codec}_mp4toannexb`);
  if (p.numPackets > 0 && !isAnnexB(p.packet(0))) {
    throw new InvalidArgumentError(
      `${p.source}: decodeVideoNvdec: ${p.codec} packets are neither Annex-B nor length-prefixed with ` +
        `avcC/hvcC extradata`,
    );
  }
  return p;
}

/** AV1's sequence header OBUs: av1C extradata (marker bit set) without its 4-byte header; else empty. */
function sequenceHeader(p: VideoPackets): Uint8Array {
  if (p.codec !== "av1" || p.extradata.length <= 4 || !(p.extradata[0] & 0x80)) return new Uint8Array(0);
  return p.extradata.slice(4);
}

function isAnnexB(b: Uint8Array): boolean {
  return b.length >= 4 && b[0] === 0 && b[1] === 0 && (b[2] === 1 || (b[2] === 0 && b[3] === 1));
}

/** Decodes `packets` on the GPU. See the module docs. */
export function decodeVideoNvdec(packets: VideoPackets, opts: NvdecOptions = {}): Promise<CudaFrames> {
  return settle(() => decodeVideoNvdecSync(packets, opts));
}

/** The synchronous core of {@link decodeVideoNvdec} (the parser's callbacks need the calling thread). */
export function decodeVideoNvdecSync(packets: VideoPackets, opts: NvdecOptions = {}): CudaFrames {
  const given = VideoPackets.fromStructured(packets);
  const codec = validate(given, opts);
  const p = toAnnexB(given);
  const dc = acquireContext(opts.device ?? 0);
  try {
    try {
      return decodeSession(p, opts, codec, dc, { skip: opts.skipUnshown ?? true, lazy: true }, 0);
    } catch (e) {
      if (!(e instanceof StartOver)) throw e;
      // The stream is not what the plan assumes: decode every picture, convert every held frame.
      return decodeSession(p, opts, codec, dc, { skip: false, lazy: false }, e.decoded);
    }
  } finally {
    releaseContext(dc);
  }
}

/** A decode that skips or leaves frames unconverted met what it assumes away: it is started over without. */
class StartOver extends Error {
  /** Pictures decoded before it was noticed. */
  decoded = 0;
}

/** What {@link Session}s share to find which frames fill slots: the packets' timestamps, one per frame. */
function shownByPts(p: VideoPackets, plan: SlotPlan): Map<bigint, boolean> | null {
  const pts = [...p.pts];
  if (pts.some((t) => t === NOPTS)) return null;
  pts.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  for (let k = 1; k < pts.length; k++) if (pts[k] === pts[k - 1]) return null;
  const shown = framesShown(plan, pts.map((t) => ptsToSeconds(t, p.timeBase)));
  return new Map(pts.map((t, k) => [t, shown[k] === 1]));
}

function decodeSession(
  p: VideoPackets,
  opts: NvdecOptions,
  codec: number,
  dc: DeviceContext,
  mode: { skip: boolean; lazy: boolean },
  decodedBefore: number,
): CudaFrames {
  const s = new Session(p, opts, dc, mode);
  try {
    withContext(dc, () => {
      parseAll(p, opts, codec, s);
      if (s.error === undefined && s.buffer) s.finish();
      if (s.error === undefined) checkCu(cuda().cuStreamSynchronize(null), p.source, "cuStreamSynchronize");
    });
    if (s.error !== undefined) throw s.error;
    if (!s.buffer) s.outWidth = s.outHeight = 0;
    const buffer = s.buffer ?? CudaBuffer.alloc(1, dc.device);
    const pts = new Float64Array(s.selector.filled);
    for (let k = 0; k < pts.length; k++) pts[k] = s.selector.time(k);
    const frames = new CudaFrames({
      buffer,
      owned: s.buffer ? s.owned : true,
      pixelFormat: opts.pixelFormat ?? "rgb24-planar",
      width: s.outWidth || 2,
      height: s.outHeight || 2,
      pts,
      decodedFrames: decodedBefore + s.decodedPictures,
      skippedFrames: s.skippedPictures,
    });
    return frames;
  } catch (e) {
    if (e instanceof StartOver) {
      // The decoder is sound (only the plan was wrong): keep it; let the copies queued so far finish first.
      e.decoded = decodedBefore + s.decodedPictures;
      withContext(dc, () => checkCu(cuda().cuStreamSynchronize(null), p.source, "cuStreamSynchronize"));
    } else {
      // A failure leaves the decoder in an unknown state: destroy it, and free what this call allocated.
      releaseDecoderNvdec();
    }
    if (s.owned) s.buffer?.[Symbol.dispose]();
    throw e;
  } finally {
    s.releaseScratch();
  }
}

function parseAll(p: VideoPackets, o: NvdecOptions, codec: number, s: Session): void {
  const nv = nvcuvid();
  const seq = new Deno.UnsafeCallback(PARSER_CALLBACK, (_u, f) => s.sequence(f));
  const dec = new Deno.UnsafeCallback(PARSER_CALLBACK, (_u, pic) => s.decode(pic));
  const disp = new Deno.UnsafeCallback(PARSER_CALLBACK, (_u, info) => s.display(info));
  let parser: Deno.PointerValue = null;
  try {
    const seqhdr = sequenceHeader(p);
    const ext = new StructBuffer(CUVIDEOFORMATEX);
    if (seqhdr.length > 0 && seqhdr.length <= RAW_SEQHDR_CAPACITY) {
      ext.u32("seqhdr_data_length", seqhdr.length);
      ext.bytes.set(seqhdr, CUVIDEOFORMATEX.raw_seqhdr_data);
    }
    const params = new StructBuffer(CUVIDPARSERPARAMS)
      .i32("CodecType", codec).u32("ulMaxNumDecodeSurfaces", 1).u32("ulErrorThreshold", 0)
      .u32("ulMaxDisplayDelay", o.displayDelay ?? 2)
      .ptr("pfnSequenceCallback", seq.pointer).ptr("pfnDecodePicture", dec.pointer).ptr(
        "pfnDisplayPicture",
        disp.pointer,
      )
      .ptr("pExtVideoInfo", seqhdr.length > 0 ? Deno.UnsafePointer.of(ext.bytes) : null);
    const slot = new OutSlot();
    checkCu(nv.cuvidCreateVideoParser(slot.bytes, params.bytes), p.source, "cuvidCreateVideoParser");
    parser = slot.pointer;
    const pkt = new StructBuffer(CUVIDSOURCEDATAPACKET);
    if (seqhdr.length > 0) {
      pkt.u64("flags", 0).u64("payload_size", seqhdr.length).ptr("payload", Deno.UnsafePointer.of(seqhdr));
      const rc = nv.cuvidParseVideoData(parser, pkt.bytes);
      if (s.error === undefined && rc !== 0) {
        throw cudaError(rc, p.source, "cuvidParseVideoData(sequence header)");
      }
    }
    // Once every slot is filled, the later packets need not be parsed (nor the stream's end signalled).
    for (let i = 0; i < p.numPackets && s.error === undefined && !s.selector.done; i++) {
      const data = p.packet(i);
      const hasPts = p.pts[i] !== NOPTS;
      pkt.u64("flags", hasPts ? CUVID_PKT.TIMESTAMP : 0).u64("payload_size", data.length)
        .ptr("payload", data.length ? Deno.UnsafePointer.of(data) : null).u64(
          "timestamp",
          hasPts ? BigInt.asUintN(64, p.pts[i]) : 0n,
        );
      const rc = nv.cuvidParseVideoData(parser, pkt.bytes);
      if (s.error !== undefined) break;
      if (rc !== 0) throw cudaError(rc, p.source, "cuvidParseVideoData");
    }
    if (s.error === undefined && !s.selector.done) {
      pkt.u64("flags", CUVID_PKT.ENDOFSTREAM).u64("payload_size", 0).ptr("payload", null).u64(
        "timestamp",
        0n,
      );
      const rc = nv.cuvidParseVideoData(parser, pkt.bytes);
      if (s.error === undefined && rc !== 0) throw cudaError(rc, p.source, "cuvidParseVideoData");
    }
  } finally {
    if (parser !== null) nv.cuvidDestroyVideoParser(parser);
    seq.close();
    dec.close();
    disp.close();
  }
}
