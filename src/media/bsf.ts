/**
 * Bitstream filters (`av_bsf_*`), shared by the demuxer (`demuxVideo`'s `bsf` option, fed from an `AVStream`)
 * and by decoders that need a different packing of the same packets (NVDEC wants Annex-B H.264/HEVC, MP4 and
 * Matroska store length-prefixed NAL units with avcC/hvcC extradata: {@link filterPackets} re-packs a
 * {@link VideoPackets} with `h264_mp4toannexb` / `hevc_mp4toannexb`).
 * @module
 */
import { OutParam } from "../../ffi/out_param.ts";
import { cstr } from "../../ffi/cstring.ts";
import { AVERROR_EAGAIN, AVERROR_EOF } from "../../ffi/ffmpeg/errors.ts";
import { MediaError } from "../errors.ts";
import { BsfContext, Packet, writeCodecParameters } from "./av_objects.ts";
import { check, ffmpeg } from "./ffmpeg.ts";
import { NOPTS, VideoPackets } from "./packets.ts";
import { codecInfoFromPar } from "./probe.ts";
import { bsfContext, packet, type Ptr, type Rational, stream } from "./structs.ts";

/**
 * Opens bitstream filter `name`; `fillParIn` writes its input codec parameters (`par_in`), `timeBase` is the
 * packets' time base. The caller owns the result.
 */
export function openBsf(
  name: string,
  fillParIn: (parIn: Ptr) => void,
  timeBase: Rational,
  label: string,
): BsfContext {
  const { avcodec } = ffmpeg();
  const filter = avcodec.av_bsf_get_by_name(cstr(name));
  if (filter === null) {
    throw new MediaError(label, "av_bsf_get_by_name", `unknown bitstream filter "${name}"`);
  }
  const out = new OutParam();
  check(avcodec.av_bsf_alloc(filter, out.bytes), label, `av_bsf_alloc(${name})`);
  const bsf = new BsfContext(out.pointer as Ptr);
  try {
    fillParIn(bsfContext.parIn(bsf.ptr));
    bsfContext.setTimeBaseIn(bsf.ptr, timeBase);
    check(avcodec.av_bsf_init(bsf.ptr), label, `av_bsf_init(${name})`);
    return bsf;
  } catch (e) {
    bsf[Symbol.dispose]();
    throw e;
  }
}

/** Opens bitstream filter `name` for the packets of an `AVStream` (its codec parameters and time base). */
export function openBsfForStream(name: string, st: Ptr, label: string): BsfContext {
  return openBsf(
    name,
    (par) =>
      check(ffmpeg().avcodec.avcodec_parameters_copy(par, stream.codecpar(st)), label, "bsf parameters"),
    stream.timeBase(st),
    label,
  );
}

/** Output packets of a filter run, collected in decode order. */
class Collected {
  pts: bigint[] = [];
  dts: bigint[] = [];
  duration: bigint[] = [];
  flags: number[] = [];
  chunks: Uint8Array[] = [];
  bytes = 0;

  push(pkt: Ptr): void {
    const size = Math.max(0, packet.size(pkt));
    const src = packet.data(pkt);
    const buf = new Uint8Array(size);
    if (src !== null && size > 0) Deno.UnsafePointerView.copyInto(src, buf);
    this.pts.push(packet.pts(pkt) ?? NOPTS);
    this.dts.push(packet.dts(pkt) ?? NOPTS);
    this.duration.push(packet.duration(pkt));
    this.flags.push(packet.flags(pkt) >>> 0);
    this.chunks.push(buf);
    this.bytes += size;
  }
}

/**
 * `p` re-packed through bitstream filter `name` (a new {@link VideoPackets}; `p` is untouched): same window,
 * source and timing, codec parameters (extradata included) from the filter's output.
 */
export function filterPackets(p: VideoPackets, name: string): VideoPackets {
  const { avcodec } = ffmpeg();
  const label = p.source;
  using bsf = openBsf(name, (par) => writeCodecParameters(par, p), p.timeBase, label);
  using inPkt = new Packet();
  using outPkt = new Packet();
  const out = new Collected();
  const drain = () => {
    for (;;) {
      const rc = avcodec.av_bsf_receive_packet(bsf.ptr, outPkt.ptr);
      if (rc === AVERROR_EAGAIN || rc === AVERROR_EOF) return;
      check(rc, label, `av_bsf_receive_packet(${name})`);
      out.push(outPkt.ptr);
      outPkt.unref();
    }
  };
  for (let i = 0; i < p.numPackets; i++) {
    const size = p.sizes[i];
    if (avcodec.av_new_packet(inPkt.ptr, size) < 0) {
      throw new MediaError(label, "av_new_packet", "out of memory");
    }
    if (size > 0) {
      new Uint8Array(Deno.UnsafePointerView.getArrayBuffer(packet.data(inPkt.ptr)!, size)).set(p.packet(i));
    }
    packet.setTiming(inPkt.ptr, p.pts[i], p.dts[i], p.duration[i], p.flags[i]);
    const rc = avcodec.av_bsf_send_packet(bsf.ptr, inPkt.ptr);
    inPkt.unref();
    check(rc, label, `av_bsf_send_packet(${name}) packet ${i}`);
    drain();
  }
  check(avcodec.av_bsf_send_packet(bsf.ptr, null), label, `av_bsf_send_packet(${name}) flush`);
  drain();
  const data = new Uint8Array(out.bytes);
  const offsets = new Uint32Array(out.chunks.length);
  let at = 0;
  out.chunks.forEach((c, i) => {
    offsets[i] = at;
    data.set(c, at);
    at += c.length;
  });
  return new VideoPackets({
    ...p,
    ...codecInfoFromPar(bsfContext.parOut(bsf.ptr)),
    pts: BigInt64Array.from(out.pts),
    dts: BigInt64Array.from(out.dts),
    duration: BigInt64Array.from(out.duration),
    flags: Uint32Array.from(out.flags),
    offsets,
    sizes: Uint32Array.from(out.chunks, (c) => c.length),
    data,
  });
}
