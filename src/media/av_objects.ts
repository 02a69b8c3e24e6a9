/**
 * Owners for the FFmpeg objects TypeScript allocates. Each class owns exactly one native object and frees it
 * in `[Symbol.dispose]` through FFmpeg's pointer-to-pointer free function; use them with `using`.
 * A FinalizationRegistry frees what a caller forgot, as a safety net only (it runs late, if ever).
 * @module
 */
import { OutParam } from "../../ffi/out_param.ts";
import { ffmpeg } from "./ffmpeg.ts";
import { codecpar, type Ptr } from "./structs.ts";
import { MediaError, SluiceError } from "../errors.ts";
import { checkCodecParams, type CheckedParams } from "./codec_params.ts";

type Freer = (pp: Uint8Array<ArrayBuffer>) => void;

/** Calls a `void xxx_free(T **p)` function on a raw pointer. */
function freeThroughPointer(free: Freer, p: Ptr): void {
  free(new OutParam(p).bytes);
}

/** Per class name: objects alive now, and objects the safety net freed because nobody disposed them. */
const live = new Map<string, number>();
const finalized = new Map<string, number>();

const bump = (m: Map<string, number>, k: string, d: number) => m.set(k, (m.get(k) ?? 0) + d);

const leaked = new FinalizationRegistry<{ free: Freer; ptr: Ptr; what: string }>(({ free, ptr, what }) => {
  bump(live, what, -1);
  bump(finalized, what, 1);
  freeThroughPointer(free, ptr);
});

/** Counts of this thread's owned FFmpeg objects, by class: alive now, and freed by the safety net (leaks). */
export interface NativeObjectCounts {
  /** Objects alive now, per class (`Packet`, `Frame`, `CodecContext`, …). */
  live: Record<string, number>;
  /** Objects the FinalizationRegistry freed because they were dropped without being disposed, per class. */
  finalized: Record<string, number>;
}

/**
 * How many owned FFmpeg objects this thread holds now, per class, and how many the FinalizationRegistry had to
 * free because they were dropped without being disposed (a non-zero count there is a leak to fix).
 */
export function nativeObjectCounts(): NativeObjectCounts {
  return { live: Object.fromEntries(live), finalized: Object.fromEntries(finalized) };
}

/** Base class: one native pointer, one free function, deterministic release. */
abstract class Owned {
  #ptr: Ptr | null;
  readonly #free: Freer;
  readonly #what: string;

  protected constructor(ptr: Deno.PointerValue, free: Freer, what: string) {
    if (ptr === null) throw new SluiceError(`out of memory allocating ${what}`);
    this.#ptr = ptr;
    this.#free = free;
    this.#what = what;
    bump(live, what, 1);
    leaked.register(this, { free, ptr, what }, this);
  }

  /** The native pointer; throws after release. */
  get ptr(): Ptr {
    if (this.#ptr === null) throw new SluiceError(`${this.constructor.name} used after it was released`);
    return this.#ptr;
  }

  /** True once released. */
  get released(): boolean {
    return this.#ptr === null;
  }

  /** Frees the native object. Safe to call twice. */
  [Symbol.dispose](): void {
    if (this.#ptr === null) return;
    leaked.unregister(this);
    bump(live, this.#what, -1);
    freeThroughPointer(this.#free, this.#ptr);
    this.#ptr = null;
  }
}

/** An `AVPacket` (`av_packet_alloc` / `av_packet_free`). */
export class Packet extends Owned {
  constructor() {
    const { avcodec } = ffmpeg();
    super(avcodec.av_packet_alloc(), avcodec.av_packet_free, "AVPacket");
  }
  /** Drops the packet's payload reference so the packet can be reused. */
  unref(): void {
    ffmpeg().avcodec.av_packet_unref(this.ptr);
  }
}

/** An `AVFrame` (`av_frame_alloc` / `av_frame_free`). */
export class Frame extends Owned {
  constructor() {
    const { avutil } = ffmpeg();
    super(avutil.av_frame_alloc(), avutil.av_frame_free, "AVFrame");
  }
  /** Drops the frame's buffers so the frame can be reused. */
  unref(): void {
    ffmpeg().avutil.av_frame_unref(this.ptr);
  }
}

/** An `AVCodecContext` (`avcodec_alloc_context3` / `avcodec_free_context`). */
export class CodecContext extends Owned {
  constructor(codec: Deno.PointerValue) {
    const { avcodec } = ffmpeg();
    super(avcodec.avcodec_alloc_context3(codec), avcodec.avcodec_free_context, "AVCodecContext");
  }
}

/** An `AVCodecParameters` (`avcodec_parameters_alloc` / `avcodec_parameters_free`). */
export class CodecParameters extends Owned {
  constructor() {
    const { avcodec } = ffmpeg();
    super(avcodec.avcodec_parameters_alloc(), avcodec.avcodec_parameters_free, "AVCodecParameters");
  }
}

/** An opened input `AVFormatContext` (`avformat_close_input`). Wraps a pointer `avformat_open_input` filled. */
export class InputContext extends Owned {
  constructor(ptr: Ptr) {
    super(ptr, ffmpeg().avformat.avformat_close_input, "AVFormatContext");
  }
}

/**
 * An output `AVFormatContext` (`avformat_alloc_output_context2` / `avformat_free_context`, which takes the
 * pointer itself). Its `pb` is not freed with it: close that first (`avio_closep`).
 */
export class OutputContext extends Owned {
  constructor(ptr: Deno.PointerValue) {
    const { avformat } = ffmpeg();
    // The freer gets a `T **` out-parameter; this free function takes the pointer itself.
    const pointee = (pp: Uint8Array<ArrayBuffer>) =>
      Deno.UnsafePointer.create(new BigUint64Array(pp.buffer, 0, 1)[0]);
    super(ptr, (pp) => avformat.avformat_free_context(pointee(pp)), "AVFormatContext(output)");
  }
}

/** An `AVBSFContext` (`av_bsf_free`). Wraps a pointer `av_bsf_alloc` filled. */
export class BsfContext extends Owned {
  constructor(ptr: Ptr) {
    super(ptr, ffmpeg().avcodec.av_bsf_free, "AVBSFContext");
  }
}

/** A `SwsContext` (`sws_freeContext`, which takes the pointer itself). */
export class ScaleContext extends Owned {
  constructor(ptr: Deno.PointerValue) {
    const { swscale } = ffmpeg();
    super(
      ptr,
      (pp) => swscale.sws_freeContext(Deno.UnsafePointer.create(new BigUint64Array(pp.buffer)[0])),
      "SwsContext",
    );
  }
}

/** A `SwrContext` (`swr_free`). Wraps a pointer `ChannelLayout.resampler` made. */
export class ResampleContext extends Owned {
  constructor(ptr: Ptr) {
    super(ptr, ffmpeg().swresample.swr_free, "SwrContext");
  }
}

/** FFmpeg's `AV_INPUT_BUFFER_PADDING_SIZE` (64 since 4.0): bit readers read past the end of extradata. */
export const INPUT_PADDING = 64;

/**
 * Writes video codec parameters into `par` (an `AVCodecParameters`), extradata copied into a zero-padded
 * `av_malloc`ed buffer that `par` owns from then on (freed with it). Checks them first (`codec_params.ts`):
 * a `MediaError` rather than FFmpeg state it was never meant to hold.
 */
export function writeCodecParameters(par: Ptr, p: CheckedParams): void {
  checkCodecParams(p);
  let ext: Deno.PointerValue = null;
  if (p.extradata.length > 0) {
    ext = ffmpeg().avutil.av_malloc(BigInt(p.extradata.length + INPUT_PADDING));
    if (ext === null) throw new MediaError(p.source, "av_malloc", "out of memory for extradata");
    const dst = new Uint8Array(
      Deno.UnsafePointerView.getArrayBuffer(ext, p.extradata.length + INPUT_PADDING),
    );
    dst.set(p.extradata);
    dst.fill(0, p.extradata.length);
  }
  codecpar.setVideo(par, p, ext, p.extradata.length);
}
