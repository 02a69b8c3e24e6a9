/**
 * `decodeVideoNvdec(packets, opts)`: GPU decode through libnvcuvid. Same input as the CPU `decodeVideo`
 * (a {@link VideoPackets}, whole stream or window) and the same frame choice: the display callback asks the frame
 * selector (`src/media/frame_select.ts`, the CPU decoder's rule) what each frame does, and only frames that fill
 * output positions (or are held back for later ones, under `frameRate`/`"uniform"` sampling) are mapped and converted.
 *
 * - The parser's three callbacks are `Deno.UnsafeCallback`s run synchronously inside `cuvidParseVideoData`,
 *   on an {@link NvdecSession} (`session.ts`). An exception in a callback would be swallowed by the C side: it is
 *   stored, the callback returns 0, and it is rethrown after the call returns.
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
 *   it fits (`decoder_cache.ts`); {@link releaseDecoderNvdec} destroys it. Any failure destroys it and releases
 *   everything taken.
 * - Decoding less: which frames fill positions is known before decoding (`framesShown`, a dry run of the selector
 *   over the packets' times). A frame held back for later positions is converted (into the scratch frame) only when
 *   it will fill one; with `skipUnshown` (H.264, HEVC), a picture the parser marks non-reference
 *   (`CUVIDPICPARAMS.ref_pic_flag` 0) whose frame fills no position is not sent to `cuvidDecodePicture`, and when
 *   the parser displays it, its time is offered to the selector as if it had been decoded (`ShownFrames`, the
 *   CPU's rule). Picture `k` of the decode callback is packet `k`; that, the display timestamps and the plan are
 *   checked as the parse goes, and anything unexpected (field pictures, a picture without its packet's
 *   timestamp) starts the decode over (`decodeOrStartOver`) with every picture decoded and every held frame
 *   converted. Parsing stops once every position is filled.
 * @module
 */
import { OutParam } from "../../ffi/out_param.ts";
import {
  CUVIDEOFORMATEX,
  CUVIDPARSERPARAMS,
  CUVIDSOURCEDATAPACKET,
  RAW_SEQHDR_CAPACITY,
} from "../../ffi/nvcuvid/layouts.ts";
import { CUVID_PKT, PARSER_CALLBACK } from "../../ffi/nvcuvid/symbols.ts";
import { InvalidArgumentError, NvdecUnsupportedError } from "../errors.ts";
import { NOPTS, VideoPackets } from "../media/packets.ts";
import {
  decodeOrStartOver,
  positionPlan,
  resolveSampling,
  type SamplingOptions,
  StartOver,
} from "../media/frame_select.ts";
import type { CropRect } from "../media/crop.ts";
import { filterPackets } from "../media/bsf.ts";
import {
  acquireContext,
  checkCu,
  cuda,
  cudaError,
  type DeviceContext,
  releaseContext,
  withContext,
  workStream,
} from "../cuda/driver.ts";
import { nvcuvid } from "./nvcuvid.ts";
import { NVDEC_CODECS } from "./available.ts";
import { timeStep } from "./step_times.ts";
import { CudaBuffer, CudaFrames, type NvdecPixelFormat } from "../cuda/cuda_buffer.ts";
import { StructBuffer } from "../cuda/struct_buffer.ts";
import { settle } from "../settle.ts";
import { NvdecSession } from "./session.ts";
import { releaseDecoderNvdec } from "./decoder_cache.ts";
import { frameIndices } from "../media/frame_index.ts";

export { releaseDecoderNvdec };

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
   * H.264 and HEVC: leave undecoded the non-reference pictures no output position shows (`ref_pic_flag` 0; default
   * true): they are not sent to `cuvidDecodePicture`. The output is the same either way (see the module docs).
   */
  skipUnshown?: boolean;
}

function validate(p: VideoPackets, o: NvdecOptions): number {
  const bad = (what: string) => new InvalidArgumentError(`${p.source}: decodeVideoNvdec: ${what}`);
  const codec = NVDEC_CODECS[p.codec];
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

/**
 * Decodes packets on the GPU with the CPU decoder's frame choice: the same frames as `decodeVideo`, resized
 * by the hardware and cropped by the display area, left in device memory as NV12 or planar RGB/BGR.
 * H.264/HEVC in MP4/MKV are re-packed to Annex-B first; the decoder is cached per thread
 * ({@link releaseDecoderNvdec} destroys it).
 * @param packets a whole stream or a window, as `demuxVideo` cut it
 * @param opts size, crop, output format, frame choice, device, a buffer to write into ({@link NvdecOptions})
 * @returns the frames in device memory (dispose of them to free it; `toHost()` copies them out)
 * @throws {NvdecUnsupportedError} (rejects) for what this decoder cannot do: 10-bit or 4:2:2/4:4:4 streams,
 *   sizes outside the engine's limits, odd sizes without an even `width`/`height`
 * @throws {InvalidArgumentError} (rejects) for an option out of range
 * @throws {CudaError} (rejects) naming the driver call that failed
 * @example
 * ```ts
 * import { demuxVideo } from "@sluice/sluice/media";
 * import { decodeVideoNvdec } from "@sluice/sluice/nvdec";
 * const packets = await demuxVideo("clip.mp4", { window: [0, 2] });
 * using frames = await decodeVideoNvdec(packets, { width: 224, height: 224 });
 * const host = await frames.toHost();
 * ```
 */
export function decodeVideoNvdec(packets: VideoPackets, opts: NvdecOptions = {}): Promise<CudaFrames> {
  return settle(() => decodeVideoNvdecSync(packets, opts));
}

/** The synchronous core of {@link decodeVideoNvdec} (the parser's callbacks need the calling thread). */
export function decodeVideoNvdecSync(packets: VideoPackets, opts: NvdecOptions = {}): CudaFrames {
  const given = VideoPackets.fromStructured(packets);
  return decodeNvdec(given, opts, given).frames;
}

/**
 * {@link decodeVideoNvdecSync}, with the pts and the time of the frame each position shows, and the frames' `frameIndex` taken from
 * `indexBy` (the packets these are, or contain), none when null (the NVDEC clip pass indexes by the pass's).
 */
export function decodeNvdec(
  given: VideoPackets,
  opts: NvdecOptions,
  indexBy: VideoPackets | null,
): { frames: CudaFrames; framePts: BigInt64Array; frameTimes: Float64Array } {
  const codec = validate(given, opts);
  const p = timeStep("annex-b filter", () => toAnnexB(given));
  const dc = acquireContext(opts.device ?? 0);
  try {
    // First leaving out what no position shows; when the stream is not what that assumes, every picture decoded and
    // every held frame converted.
    const mode = (leaveOut: boolean) => ({ leaveOut, skip: leaveOut && (opts.skipUnshown ?? true) });
    return decodeOrStartOver(
      true,
      (leaveOut, before) => decodeSession(p, opts, codec, dc, mode(leaveOut), before, indexBy),
    );
  } finally {
    releaseContext(dc);
  }
}

function decodeSession(
  p: VideoPackets,
  opts: NvdecOptions,
  codec: number,
  dc: DeviceContext,
  mode: { leaveOut: boolean; skip: boolean },
  decodedBefore: number,
  indexBy: VideoPackets | null,
): { frames: CudaFrames; framePts: BigInt64Array; frameTimes: Float64Array } {
  const plan = positionPlan(p, resolveSampling(opts, (w) => new InvalidArgumentError(w)));
  const s = new NvdecSession(p, plan, opts, dc, mode);
  try {
    withContext(dc, () => {
      timeStep("parse (decode, map, convert)", () => parseAll(p, opts, codec, s));
      if (s.error === undefined && s.buffer) s.finish();
      if (s.error === undefined) {
        const rc = timeStep("sync (decode's stream)", () => cuda().cuStreamSynchronize(workStream(dc)));
        checkCu(rc, p.source, "cuStreamSynchronize");
      }
    });
    if (s.error !== undefined) throw s.error;
    if (!s.buffer) s.outWidth = s.outHeight = 0;
    const buffer = s.buffer ?? CudaBuffer.alloc(1, dc.device);
    const framePts = s.filler.framePts();
    const frames = new CudaFrames({
      buffer,
      owned: s.buffer ? s.owned : true,
      pixelFormat: opts.pixelFormat ?? "rgb24-planar",
      width: s.outWidth || 2,
      height: s.outHeight || 2,
      pts: s.filler.times(),
      decodedFrames: decodedBefore + s.decodedPictures,
      skippedFrames: s.skippedPictures,
      frameIndex: indexBy === null ? null : frameIndices(indexBy, framePts),
    });
    return { frames, framePts, frameTimes: s.filler.frameTimes() };
  } catch (e) {
    if (e instanceof StartOver) {
      // The decoder is sound (only the plan was wrong): keep it; let the copies queued so far finish first.
      e.decoded = decodedBefore + s.decodedPictures;
      withContext(
        dc,
        () => checkCu(cuda().cuStreamSynchronize(workStream(dc)), p.source, "cuStreamSynchronize"),
      );
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

function parseAll(p: VideoPackets, o: NvdecOptions, codec: number, s: NvdecSession): void {
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
    const out = new OutParam();
    const rc = timeStep("parser create", () => nv.cuvidCreateVideoParser(out.bytes, params.bytes));
    checkCu(rc, p.source, "cuvidCreateVideoParser");
    parser = out.pointer;
    const pkt = new StructBuffer(CUVIDSOURCEDATAPACKET);
    if (seqhdr.length > 0) {
      pkt.u64("flags", 0).u64("payload_size", seqhdr.length).ptr("payload", Deno.UnsafePointer.of(seqhdr));
      const rc = nv.cuvidParseVideoData(parser, pkt.bytes);
      if (s.error === undefined && rc !== 0) {
        throw cudaError(rc, p.source, "cuvidParseVideoData(sequence header)");
      }
    }
    // Once every position is filled, the later packets need not be parsed (nor the stream's end signalled).
    for (let i = 0; i < p.numPackets && s.error === undefined && !s.filler.done; i++) {
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
    if (s.error === undefined && !s.filler.done) {
      pkt.u64("flags", CUVID_PKT.ENDOFSTREAM).u64("payload_size", 0).ptr("payload", null).u64(
        "timestamp",
        0n,
      );
      const rc = nv.cuvidParseVideoData(parser, pkt.bytes);
      if (s.error === undefined && rc !== 0) throw cudaError(rc, p.source, "cuvidParseVideoData");
    }
  } finally {
    if (parser !== null) timeStep("parser destroy", () => nv.cuvidDestroyVideoParser(parser));
    seq.close();
    dec.close();
    disp.close();
  }
}
