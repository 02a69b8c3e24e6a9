/**
 * `Muxer`: writes packets into a container file through libavformat (MP4 by default). Streams are added
 * before {@link Muxer.open}; packets are written with timestamps in a time base of the caller's choosing and
 * rescaled to the stream's own (the muxer picks it when the header is written). {@link Muxer.finish} writes
 * the trailer and closes the file, checking both: a full disk shows up there, not as a silently short file.
 * @module
 */

import { cstr } from "../../ffi/cstring.ts";
import { OutputContext } from "../media/av_objects.ts";
import { OutParam } from "../../ffi/out_param.ts";
import { check, ffmpeg } from "../media/ffmpeg.ts";
import { formatContext, packet, type Ptr, type Rational, stream } from "../media/structs.ts";
import { MediaError } from "../errors.ts";

const AVIO_FLAG_WRITE = 2;

/** One output file being written. Dispose it (`using`); an unfinished file is left incomplete. */
export class Muxer implements Disposable {
  readonly path: string;
  readonly #oc: OutputContext;
  #pbOpen = false;
  #headerWritten = false;
  /** Per stream: the time base packets arrive in. */
  readonly #inTb: Rational[] = [];

  /** Allocates the output context for `path` in container `format` (a libavformat muxer name). */
  constructor(path: string, format = "mp4") {
    this.path = path;
    const out = new OutParam();
    check(
      ffmpeg().avformat.avformat_alloc_output_context2(out.bytes, null, cstr(format), cstr(path)),
      path,
      `avformat_alloc_output_context2(${format})`,
    );
    this.#oc = new OutputContext(out.pointer);
  }

  /**
   * Adds a stream whose codec parameters are copied from `par` (an `AVCodecParameters`) and whose packets
   * will arrive in time base `tb`. Returns the stream index.
   */
  addStream(par: Ptr, tb: Rational): number {
    const { avformat, avcodec } = ffmpeg();
    const st = avformat.avformat_new_stream(this.#oc.ptr, null);
    if (st === null) throw new MediaError(this.path, "avformat_new_stream", "out of memory");
    check(avcodec.avcodec_parameters_copy(stream.codecpar(st), par), this.path, "avcodec_parameters_copy");
    stream.setTimeBase(st, tb);
    this.#inTb.push(tb);
    return this.#inTb.length - 1;
  }

  /** Adds a stream for an opened encoder (`AVCodecContext`) whose packets arrive in `tb`. */
  addEncoderStream(encoderContext: Ptr, tb: Rational): number {
    const { avformat, avcodec } = ffmpeg();
    const st = avformat.avformat_new_stream(this.#oc.ptr, null);
    if (st === null) throw new MediaError(this.path, "avformat_new_stream", "out of memory");
    check(
      avcodec.avcodec_parameters_from_context(stream.codecpar(st), encoderContext),
      this.path,
      "avcodec_parameters_from_context",
    );
    stream.setTimeBase(st, tb);
    this.#inTb.push(tb);
    return this.#inTb.length - 1;
  }

  /** Creates the file and writes the container header. */
  open(): void {
    const { avformat } = ffmpeg();
    const pb = new OutParam();
    check(avformat.avio_open(pb.bytes, cstr(this.path), AVIO_FLAG_WRITE), this.path, "avio_open");
    formatContext.setPb(this.#oc.ptr, pb.pointer);
    this.#pbOpen = true;
    check(avformat.avformat_write_header(this.#oc.ptr, null), this.path, "avformat_write_header");
    this.#headerWritten = true;
  }

  /**
   * Writes one packet to stream `index`: its pts, dts and duration (in the stream's input time base; a zero
   * duration becomes `defaultDuration`) are rescaled to the stream's time base. The packet's payload reference
   * passes to the muxer (the packet comes back empty).
   */
  write(index: number, pkt: Ptr, defaultDuration = 0n): void {
    const st = formatContext.stream(this.#oc.ptr, index);
    const from = this.#inTb[index], to = stream.timeBase(st);
    const r = (t: bigint | null) => t === null ? null : rescale(t, from, to);
    const dur = packet.duration(pkt) > 0n ? packet.duration(pkt) : defaultDuration;
    packet.setTiming(pkt, r(packet.pts(pkt)), r(packet.dts(pkt)), r(dur) ?? 0n, packet.flags(pkt));
    packet.setStreamIndex(pkt, index);
    check(
      ffmpeg().avformat.av_interleaved_write_frame(this.#oc.ptr, pkt),
      this.path,
      "av_interleaved_write_frame",
    );
  }

  /** Writes the trailer (index, durations) and closes the file, failing on any write error. */
  finish(): void {
    const { avformat } = ffmpeg();
    if (!this.#headerWritten) throw new MediaError(this.path, "mux", "finish() before open()");
    check(avformat.av_write_trailer(this.#oc.ptr), this.path, "av_write_trailer");
    this.#closeFile(true);
  }

  #closeFile(checked: boolean): void {
    if (!this.#pbOpen) return;
    const out = new OutParam(formatContext.pb(this.#oc.ptr));
    const rc = ffmpeg().avformat.avio_closep(out.bytes);
    formatContext.setPb(this.#oc.ptr, null);
    this.#pbOpen = false;
    if (checked) check(rc, this.path, "avio_closep");
  }

  /** Closes the file (if still open) and frees the context. */
  [Symbol.dispose](): void {
    this.#closeFile(false);
    this.#oc[Symbol.dispose]();
  }
}

/** `t · from / to`, rounded to the nearest integer (halves away from zero), as `av_rescale_q` does. */
export function rescale(t: bigint, from: Rational, to: Rational): bigint {
  const num = t * BigInt(from[0]) * BigInt(to[1]);
  const den = BigInt(from[1]) * BigInt(to[0]);
  const half = den / 2n;
  return num >= 0n ? (num + half) / den : -((-num + half) / den);
}
