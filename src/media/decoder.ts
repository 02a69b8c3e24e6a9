/**
 * The libavcodec side of CPU decoding: one opened {@link Decoder} (codec context, packet, the frames it decodes
 * into) with synchronous send/receive calls, cached per thread and flushed between calls with the same codec
 * parameters (decoder init is expensive and takes FFmpeg's process-wide codec lock), and this thread's swscale
 * wrapper. {@link releaseDecoder} frees both. Which frames are kept is the decode pass's (`decode_pass.ts`).
 * @module
 */
import { check, errorText, ffmpeg } from "./ffmpeg.ts";
import { CodecContext, CodecParameters, Frame, Packet, writeCodecParameters } from "./av_objects.ts";
import { codecParamsKey } from "./codec_params.ts";
import { codecContext, packet as avpacket, type Ptr } from "./structs.ts";
import { cstr } from "../../ffi/cstring.ts";
import { MediaError } from "../errors.ts";
import type { VideoPackets } from "./packets.ts";
import { Scaler } from "./scale.ts";

/** `AVDISCARD_DEFAULT`, `AVDISCARD_NONREF`. */
const AVDISCARD_DEFAULT = 0;
const AVDISCARD_NONREF = 8;

/**
 * One opened libavcodec decoder for one set of codec parameters, with its packet and frame objects. Reusable:
 * `flush()` returns it to the state after opening. Owns every native object; dispose it (`using`).
 */
export class Decoder {
  /** What the decoder was opened for (see {@link Decoder.keyOf}). */
  readonly key: string;
  readonly source: string;
  /** Packets rejected since the last flush. */
  failed = 0;
  /** The message of the first rejection since the last flush. */
  firstFailure = "";
  #ctx: CodecContext;
  readonly #pkt = new Packet();
  /** The frames it decodes into, kept while a selector holds them back. */
  readonly pool: FramePool = new FramePool();
  #skip = AVDISCARD_DEFAULT;
  /**
   * False once a packet was sent with `skip_frame = nonref` to a decoder that cannot be reused after it: the
   * single-threaded HEVC decoder of FFmpeg 7.1 and 8.1 decodes one frame in forty after that and a flush (a
   * fresh one decodes them all; 4.3's and 5.1's are not affected). The loaded release says (`ffi/`). Its
   * {@link flush} then opens a new codec context instead: the cache reuses it and a pass that starts over
   * decodes every frame right.
   */
  #reusable = true;
  readonly #skipSpoils: boolean;

  /** The cache key: everything that decides how a decoder is opened (every copied field, time base, threads). */
  static keyOf(p: VideoPackets, threads: number): string {
    return `${codecParamsKey(p)}/${p.timeBase}/${threads}`;
  }

  constructor(p: VideoPackets, threads: number) {
    this.key = Decoder.keyOf(p, threads);
    this.source = p.source;
    this.#skipSpoils = p.codec === "hevc" && threads === 1 && !ffmpeg().layout.reuseHevcAfterSkip;
    const { avcodec } = ffmpeg();
    const codec = avcodec.avcodec_find_decoder(p.codecId);
    if (codec === null) {
      this.#disposeFrames();
      throw new MediaError(
        p.source,
        "avcodec_find_decoder",
        `no decoder for codec "${p.codec}" (id ${p.codecId}) in this FFmpeg`,
      );
    }
    try {
      this.#ctx = new CodecContext(codec);
    } catch (e) {
      this.#disposeFrames();
      throw e;
    }
    try {
      using par = new CodecParameters();
      writeCodecParameters(par.ptr, p);
      this.#open(par.ptr, p, codec, threads);
      if (this.#skipSpoils) {
        // What a reopen needs (see `#reusable`): the parameters, not the packets.
        const kept = new CodecParameters();
        check(
          ffmpeg().avcodec.avcodec_parameters_copy(kept.ptr, par.ptr),
          p.source,
          "avcodec_parameters_copy",
        );
        const timeBase = p.timeBase, info = { source: p.source, codec: p.codec, timeBase };
        this.#reopen = () => {
          this.#ctx[Symbol.dispose]();
          this.#ctx = new CodecContext(codec);
          this.#open(kept.ptr, info, codec, threads);
        };
        this.#kept = kept;
      }
    } catch (e) {
      this[Symbol.dispose]();
      throw e;
    }
  }

  #reopen: (() => void) | null = null;
  #kept: CodecParameters | null = null;

  #open(
    par: Ptr,
    p: { source: string; codec: string; timeBase: VideoPackets["timeBase"] },
    codec: Ptr,
    threads: number,
  ): void {
    const { avcodec, avutil } = ffmpeg();
    const ctx = this.#ctx.ptr;
    check(avcodec.avcodec_parameters_to_context(ctx, par), p.source, "avcodec_parameters_to_context");
    codecContext.setPktTimebase(ctx, p.timeBase);
    check(
      avutil.av_opt_set_int(ctx, cstr("threads"), BigInt(threads), 0),
      p.source,
      "av_opt_set_int(threads)",
    );
    check(avcodec.avcodec_open2(ctx, codec, null), p.source, `avcodec_open2(${p.codec})`);
  }

  /** Sets `skip_frame` to `nonref` (true) or `default`; it applies to the packets sent from now on. */
  setSkipNonRef(skip: boolean): void {
    const want = skip ? AVDISCARD_NONREF : AVDISCARD_DEFAULT;
    if (want === this.#skip) return;
    if (skip && this.#skipSpoils) this.#reusable = false;
    check(
      ffmpeg().avutil.av_opt_set_int(this.#ctx.ptr, cstr("skip_frame"), BigInt(want), 0),
      this.source,
      "av_opt_set_int(skip_frame)",
    );
    this.#skip = want;
  }

  /**
   * Sends packet `i` of `p` (copied into a padded, ref-counted AVPacket). Returns FFmpeg's code: 0,
   * `AVERROR(EAGAIN)` (receive frames first, then send again) or an error.
   */
  send(p: VideoPackets, i: number): number {
    const { avcodec } = ffmpeg();
    const pkt = this.#pkt.ptr;
    const size = p.sizes[i];
    if (avcodec.av_new_packet(pkt, size) < 0) {
      throw new MediaError(this.source, "av_new_packet", "out of memory");
    }
    if (size > 0) {
      const data = avpacket.data(pkt)!;
      new Uint8Array(Deno.UnsafePointerView.getArrayBuffer(data, size)).set(p.packet(i));
    }
    avpacket.setTiming(pkt, p.pts[i], p.dts[i], p.duration[i], p.flags[i]);
    const ret = avcodec.avcodec_send_packet(this.#ctx.ptr, pkt);
    avcodec.av_packet_unref(pkt);
    return ret;
  }

  /** Signals end of stream so the decoder releases the frames it holds back. */
  sendEof(): number {
    return ffmpeg().avcodec.avcodec_send_packet(this.#ctx.ptr, null);
  }

  /** Receives the next frame into `f`: 0, `AVERROR(EAGAIN)`, `AVERROR_EOF` or an error. */
  receive(f: Frame): number {
    return ffmpeg().avcodec.avcodec_receive_frame(this.#ctx.ptr, f.ptr);
  }

  /** Records a rejected packet. */
  noteFailure(code: number, what: string): void {
    if (this.failed === 0) this.firstFailure = `${what}: ${errorText(code)}`;
    this.failed++;
  }

  /** Back to the state after opening: drops buffered frames, clears the failure count. */
  flush(): void {
    if (!this.#reusable && this.#reopen !== null) {
      this.#reopen();
      this.#skip = AVDISCARD_DEFAULT;
      this.#reusable = true;
    } else {
      ffmpeg().avcodec.avcodec_flush_buffers(this.#ctx.ptr);
    }
    this.failed = 0;
    this.firstFailure = "";
  }

  #disposeFrames(): void {
    this.#pkt[Symbol.dispose]();
    this.pool[Symbol.dispose]();
  }

  /** Frees the codec context, packet and frames. */
  [Symbol.dispose](): void {
    this.#ctx?.[Symbol.dispose]();
    this.#kept?.[Symbol.dispose]();
    this.#disposeFrames();
  }
}

let cached: Decoder | undefined;

/** This thread's decoder for `p`, reused (flushed) when the codec parameters match the previous call's. */
export function acquireDecoder(p: VideoPackets, threads: number): Decoder {
  const key = Decoder.keyOf(p, threads);
  if (cached && cached.key === key) {
    cached.flush();
    return cached;
  }
  // Only the decoder: the caller already holds this thread's scaler (a FrameWriter made before decoding).
  cached?.[Symbol.dispose]();
  cached = undefined;
  cached = new Decoder(p, threads);
  return cached;
}

/** Frees this thread's cached decoder and scaler (they are re-created on the next call). */
export function releaseDecoder(): void {
  cached?.[Symbol.dispose]();
  cached = undefined;
  scaler?.[Symbol.dispose]();
  scaler = undefined;
}

let scaler: Scaler | undefined;

/** This thread's swscale wrapper for `flags` (kept between calls; {@link releaseDecoder} frees it). */
export function threadScaler(flags: number): Scaler {
  if (scaler && scaler.flags === flags) return scaler;
  scaler?.[Symbol.dispose]();
  scaler = new Scaler(flags);
  return scaler;
}

// ------------------------------------------------------------------------------------------ frames held

/**
 * The AVFrames of one decoder: the one being received into, and those selectors hold back for later positions (one
 * per output at most, shared when several hold the same frame). A frame goes back (unreferenced) when its last
 * holder lets go of it.
 */
export class FramePool implements Disposable {
  readonly #all: Frame[] = [];
  readonly #free: Frame[] = [];
  readonly #holders = new Map<Frame, number>();

  /** A frame to receive into, held once (by the caller). */
  take(): Frame {
    let f = this.#free.pop();
    if (f === undefined) {
      f = new Frame();
      this.#all.push(f);
    }
    this.#holders.set(f, 1);
    return f;
  }

  /** One more holder of `f`. */
  hold(f: Frame): void {
    this.#holders.set(f, (this.#holders.get(f) ?? 0) + 1);
  }

  /** One holder less; the last one's release unreferences it for reuse. */
  release(f: Frame): void {
    const n = (this.#holders.get(f) ?? 1) - 1;
    if (n > 0) {
      this.#holders.set(f, n);
      return;
    }
    this.#holders.delete(f);
    f.unref();
    this.#free.push(f);
  }

  /** Frees every frame. */
  [Symbol.dispose](): void {
    for (const f of this.#all) f[Symbol.dispose]();
    this.#all.length = this.#free.length = 0;
    this.#holders.clear();
  }
}
