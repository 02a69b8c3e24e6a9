/**
 * `AudioCopier`: passes one audio stream of a source into a {@link Muxer} unchanged (no decode), shifted so
 * that source time `origin` becomes 0, in steps ({@link AudioCopier.copyUntil}) that keep it interleaved with
 * the video being encoded. Packets presented before `origin` are dropped; so are those at or after `end`.
 * @module
 */

import { Packet } from "../media/av_objects.ts";
import { ffmpeg } from "../media/ffmpeg.ts";
import { ptsToSeconds } from "../media/packets.ts";
import { type MediaInput, MediaSource } from "../media/source.ts";
import { AVDISCARD_ALL, formatContext, packet, type Ptr, type Rational, stream } from "../media/structs.ts";
import type { Muxer } from "./muxer.ts";
import { AVERROR_EOF } from "../../ffi/ffmpeg/errors.ts";

const AVSEEK_FLAG_BACKWARD = 1;

/** Copies audio stream `index` of `src` into `muxer`; see the module docs. Dispose it (`using`). */
export class AudioCopier implements Disposable {
  readonly #src: MediaSource;
  readonly #index: number;
  readonly #tb: Rational;
  readonly #originTs: bigint;
  readonly #end: number;
  readonly #pkt = new Packet();
  #held = false;
  #eof = false;
  #muxer: Muxer | undefined;
  #out = -1;

  /** Opens `src` a second time for its audio stream `index`, from `origin` to `end` seconds. */
  constructor(src: MediaInput, index: number, origin: number, end: number) {
    this.#src = MediaSource.open(src);
    try {
      const fmt = this.#src.fmt;
      for (let i = 0; i < formatContext.nbStreams(fmt); i++) {
        if (i !== index) stream.setDiscard(formatContext.stream(fmt, i), AVDISCARD_ALL);
      }
      this.#index = index;
      this.#tb = stream.timeBase(formatContext.stream(fmt, index));
      this.#originTs = BigInt(Math.round((origin * this.#tb[1]) / this.#tb[0]));
      this.#end = end;
      if (origin > 0) {
        // Best effort: a failed seek only means reading (and dropping) from the start.
        ffmpeg().avformat.av_seek_frame(fmt, index, this.#originTs, AVSEEK_FLAG_BACKWARD);
      }
    } catch (e) {
      this[Symbol.dispose]();
      throw e;
    }
  }

  /** The stream's codec parameters (for {@link Muxer.addStream}). */
  get codecParameters(): Ptr {
    return stream.codecpar(formatContext.stream(this.#src.fmt, this.#index));
  }

  /** The stream's time base. */
  get timeBase(): Rational {
    return this.#tb;
  }

  /** Where packets go: output stream `index` of `muxer`. */
  attach(muxer: Muxer, index: number): void {
    this.#muxer = muxer;
    this.#out = index;
  }

  /** Writes every packet presented before `until` seconds (source time). */
  copyUntil(until: number): void {
    const muxer = this.#muxer;
    if (muxer === undefined) return;
    const limit = Math.min(until, this.#end);
    const { avformat } = ffmpeg();
    const pkt = this.#pkt.ptr;
    while (!this.#eof) {
      if (!this.#held) {
        const rc = avformat.av_read_frame(this.#src.fmt, pkt);
        if (rc === AVERROR_EOF || rc < 0) {
          this.#eof = true; // damage past the header ends the audio; the video decides the file's fate
          return;
        }
        if (packet.streamIndex(pkt) !== this.#index) {
          this.#pkt.unref();
          continue;
        }
        this.#held = true;
      }
      const ts = packet.pts(pkt) ?? packet.dts(pkt);
      const t = ts === null ? NaN : ptsToSeconds(ts, this.#tb);
      if (t >= limit) {
        if (t >= this.#end) this.#eof = true;
        return; // keep it for the next call
      }
      this.#held = false;
      if (!(ts !== null && ts >= this.#originTs)) {
        this.#pkt.unref();
        continue;
      }
      const shift = (v: bigint | null) => v === null ? null : v - this.#originTs;
      packet.setTiming(
        pkt,
        shift(packet.pts(pkt)),
        shift(packet.dts(pkt)),
        packet.duration(pkt),
        packet.flags(pkt),
      );
      muxer.write(this.#out, pkt);
      this.#pkt.unref();
    }
  }

  /** Closes the second open of the source. */
  [Symbol.dispose](): void {
    this.#pkt[Symbol.dispose]();
    this.#src[Symbol.dispose]();
  }
}
