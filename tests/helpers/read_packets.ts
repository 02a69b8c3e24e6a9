/**
 * Test-only packet reader for the decoder tests: reads one video stream with `av_read_frame` into a
 * `VideoPackets`, optionally cut for a window the way a demuxer cuts one (from the last keyframe at or before the
 * window start, through the first keyframe at or after the end plus the leading frames that follow it).
 * Independent of `src/media/demux.ts` on purpose: the decoder's tests do not depend on the demuxer's choices.
 * @module
 */
import { ffmpeg } from "../../src/media/ffmpeg.ts";
import { Packet } from "../../src/media/av_objects.ts";
import { MediaSource } from "../../src/media/source.ts";
import { readCodecInfo, selectVideoStream, streamFrameRate, streamRotation } from "../../src/media/probe.ts";
import { formatContext, packet as avpacket, stream } from "../../src/media/structs.ts";
import { VideoPackets } from "../../src/media/packets.ts";

const NOPTS = -0x8000000000000000n;

interface RawPacket {
  pts: bigint;
  dts: bigint;
  duration: bigint;
  flags: number;
  data: Uint8Array;
}

/** All packets of the best (or given) video stream of `path`, cut for `window` when given. */
export function readPackets(
  path: string,
  opts: { window?: [number, number]; streamIndex?: number } = {},
): VideoPackets {
  using src = MediaSource.open(path);
  const fmt = src.fmt;
  const index = selectVideoStream(src, opts.streamIndex, "readPackets");
  const st = formatContext.stream(fmt, index);
  const tb = stream.timeBase(st);
  const all: RawPacket[] = [];
  using pkt = new Packet();
  const { avformat } = ffmpeg();
  while (avformat.av_read_frame(fmt, pkt.ptr) >= 0) {
    if (avpacket.streamIndex(pkt.ptr) === index) {
      const size = avpacket.size(pkt.ptr);
      const data = size > 0
        ? new Uint8Array(Deno.UnsafePointerView.getArrayBuffer(avpacket.data(pkt.ptr)!, size).slice(0))
        : new Uint8Array(0);
      all.push({
        pts: avpacket.pts(pkt.ptr) ?? NOPTS,
        dts: avpacket.dts(pkt.ptr) ?? NOPTS,
        duration: avpacket.duration(pkt.ptr),
        flags: avpacket.flags(pkt.ptr),
        data,
      });
    }
    pkt.unref();
  }
  const sec = (p: RawPacket) => (Number(p.pts) * tb[0]) / tb[1];
  let chosen = all;
  if (opts.window) {
    const [s, e] = opts.window;
    let first = 0;
    for (let i = 0; i < all.length; i++) {
      if (all[i].flags & 1 && all[i].pts !== NOPTS && sec(all[i]) <= s) first = i;
    }
    let last = all.length;
    for (let i = first + 1; i < all.length; i++) {
      if (all[i].flags & 1 && sec(all[i]) >= e) {
        last = i + 1;
        while (last < all.length && !(all[last].flags & 1) && sec(all[last]) < e) last++;
        break;
      }
    }
    chosen = all.slice(first, last);
  }
  const n = chosen.length;
  const total = chosen.reduce((a, p) => a + p.data.length, 0);
  const data = new Uint8Array(total);
  const offsets = new Uint32Array(n), sizes = new Uint32Array(n);
  let off = 0;
  chosen.forEach((p, i) => {
    data.set(p.data, off);
    offsets[i] = off;
    sizes[i] = p.data.length;
    off += p.data.length;
  });
  const rate = streamFrameRate(st);
  return new VideoPackets({
    ...readCodecInfo(st),
    source: path,
    streamIndex: index,
    timeBase: tb,
    frameRate: rate[0] / rate[1],
    rotation: streamRotation(st),
    startTimeSec: 0,
    window: opts.window ?? null,
    pts: BigInt64Array.from(chosen, (p) => p.pts),
    dts: BigInt64Array.from(chosen, (p) => p.dts),
    duration: BigInt64Array.from(chosen, (p) => p.duration),
    flags: Uint32Array.from(chosen, (p) => p.flags),
    offsets,
    sizes,
    data,
  });
}
