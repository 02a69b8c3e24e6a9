/**
 * Channel layouts over FFmpeg's two APIs, so that audio works on every supported release: `AVChannelLayout`
 * (FFmpeg >= 5.1: `av_opt_get_chlayout`, `av_channel_layout_default`, `swr_alloc_set_opts2`) and, in 4.x, the
 * `uint64_t` channel mask with a channel count (`av_opt_get_int` of `channel_layout` and `ac`,
 * `av_get_default_channel_layout`, `swr_alloc_set_opts`). The loaded release says which (`ffmpeg().channels`,
 * opened by `ffi/ffmpeg/library.ts`).
 * @module
 */
import { cstr } from "../../ffi/cstring.ts";
import { OutParam } from "../../ffi/out_param.ts";
import { MediaError } from "../errors.ts";
import { check, ffmpeg } from "./ffmpeg.ts";
import { channelLayout, type Ptr } from "./structs.ts";

const OPT_CH_LAYOUT = cstr("ch_layout"), OPT_CHANNEL_LAYOUT = cstr("channel_layout"), OPT_AC = cstr("ac");
const OPT_ICH = cstr("ich"), OPT_OCH = cstr("och");

/** One channel layout, owned: dispose it (an `AVChannelLayout` may hold a custom channel map). */
export class ChannelLayout implements Disposable {
  /** `AVChannelLayout` bytes (5.1 on) or the channel mask (4.x). */
  readonly #native: Uint8Array<ArrayBuffer> | bigint;
  /** How many channels. */
  readonly channels: number;
  /** Equal for equal layouts (a resampler is kept per input layout). */
  readonly key: string;

  private constructor(native: Uint8Array<ArrayBuffer> | bigint, channels: number) {
    this.#native = native;
    this.channels = channels;
    this.key = typeof native === "bigint" ? `mask ${native} ${channels}` : native.join(",");
  }

  /** The layout a decoder (`AVCodecContext`) gives its current frames; `label` names the file in errors. */
  static ofDecoder(ctx: Ptr, label: string): ChannelLayout {
    const { avutil, channels: api } = ffmpeg();
    if (api.kind === "ch_layout") {
      const b = channelLayout.alloc();
      check(api.avutil.av_opt_get_chlayout(ctx, OPT_CH_LAYOUT, 0, b), label, "av_opt_get_chlayout");
      return new ChannelLayout(b, channelLayout.nbChannels(b));
    }
    const i64 = new BigInt64Array(1);
    const bytes = new Uint8Array(i64.buffer);
    check(avutil.av_opt_get_int(ctx, OPT_AC, 0, bytes), label, "av_opt_get_int(ac)");
    const channels = Number(i64[0]);
    check(avutil.av_opt_get_int(ctx, OPT_CHANNEL_LAYOUT, 0, bytes), label, "av_opt_get_int(channel_layout)");
    let mask = BigInt.asUintN(64, i64[0]);
    // A decoder may leave the mask unset (0) or at odds with the count: FFmpeg's default for the count then.
    if (popcount(mask) !== channels) {
      mask = BigInt.asUintN(64, api.avutil.av_get_default_channel_layout(channels));
    }
    return new ChannelLayout(mask, channels);
  }

  /** FFmpeg's default layout for `channels` channels (mono, stereo, 2.1, …). */
  static default(channels: number): ChannelLayout {
    const api = ffmpeg().channels;
    if (api.kind === "ch_layout") {
      const b = channelLayout.alloc();
      api.avutil.av_channel_layout_default(b, channels);
      return new ChannelLayout(b, channels);
    }
    return new ChannelLayout(
      BigInt.asUintN(64, api.avutil.av_get_default_channel_layout(channels)),
      channels,
    );
  }

  /**
   * A resampler (`SwrContext *`, options set, not initialised: the caller owns it and runs `swr_init`) from
   * `input` to `out` (each a layout, an `AVSampleFormat` and a rate). Throws a {@link MediaError} naming `label`.
   */
  static resampler(
    out: { layout: ChannelLayout; format: number; rate: number },
    input: { layout: ChannelLayout; format: number; rate: number },
    label: string,
  ): Ptr {
    const { avutil, channels: api } = ffmpeg();
    const o = out.layout.#native, i = input.layout.#native;
    if (api.kind === "ch_layout") {
      if (typeof o === "bigint" || typeof i === "bigint") throw new Error("channel layouts of another API");
      const swr = new OutParam();
      const rc = api.swresample.swr_alloc_set_opts2(
        swr.bytes,
        o,
        out.format,
        out.rate,
        i,
        input.format,
        input.rate,
        0,
        null,
      );
      check(rc, label, "swr_alloc_set_opts2");
      return swr.pointer as Ptr;
    }
    if (typeof o !== "bigint" || typeof i !== "bigint") throw new Error("channel layouts of another API");
    const swr = api.swresample.swr_alloc_set_opts(
      null,
      o,
      out.format,
      out.rate,
      i,
      input.format,
      input.rate,
      0,
      null,
    );
    if (swr === null) throw new MediaError(label, "swr_alloc_set_opts", "out of memory");
    // The counts too: a mask FFmpeg has no default for (over 8 channels) is 0.
    avutil.av_opt_set_int(swr, OPT_ICH, BigInt(input.layout.channels), 0);
    avutil.av_opt_set_int(swr, OPT_OCH, BigInt(out.layout.channels), 0);
    return swr;
  }

  [Symbol.dispose](): void {
    const api = ffmpeg().channels;
    if (api.kind === "ch_layout" && typeof this.#native !== "bigint") {
      api.avutil.av_channel_layout_uninit(this.#native);
    }
  }
}

function popcount(mask: bigint): number {
  let n = 0;
  for (let m = mask; m > 0n; m >>= 1n) n += Number(m & 1n);
  return n;
}
