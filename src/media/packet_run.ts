/**
 * {@link PacketRun}: a contiguous run of one stream's packets in decode order, copied out of FFmpeg into growable
 * buffers (timing columns and one payload buffer), as the demuxer reads them; windows' packets are sliced out of
 * it (`demux.ts`).
 * @module
 */
import { NOPTS, ptsToSeconds } from "./packets.ts";
import { AV_PKT_FLAG_KEY, packet, type Ptr, type Rational } from "./structs.ts";

/** Packets after a keyframe without pts that bound when it is presented (see `PacketRun.keyframeSeconds`). */
export const LEADING_LOOKAHEAD = 4;

/** A contiguous run of packets in decode order, copied out of FFmpeg into growable buffers. */
export class PacketRun {
  pts = new BigInt64Array(256);
  dts = new BigInt64Array(256);
  duration = new BigInt64Array(256);
  flags = new Uint32Array(256);
  offsets = new Float64Array(256);
  sizes = new Uint32Array(256);
  data = new Uint8Array(1 << 20);
  length = 0;
  bytes = 0;

  clear(): void {
    this.length = 0;
    this.bytes = 0;
  }

  /** Copies the packet's payload and timing out of FFmpeg. */
  push(pkt: Ptr): void {
    const size = packet.size(pkt);
    const src = packet.data(pkt);
    this.#reserve(this.length + 1, this.bytes + Math.max(0, size));
    const i = this.length++;
    this.pts[i] = packet.pts(pkt) ?? NOPTS;
    this.dts[i] = packet.dts(pkt) ?? NOPTS;
    this.duration[i] = packet.duration(pkt);
    this.flags[i] = packet.flags(pkt) >>> 0;
    this.offsets[i] = this.bytes;
    this.sizes[i] = Math.max(0, size);
    if (src !== null && size > 0) {
      Deno.UnsafePointerView.copyInto(src, this.data.subarray(this.bytes, this.bytes + size));
      this.bytes += size;
    }
  }

  /** Presentation time of packet `i` in seconds (dts when pts is missing), NaN when it has neither. */
  seconds(i: number, tb: Rational): number {
    const t = this.pts[i] !== NOPTS ? this.pts[i] : this.dts[i];
    return t === NOPTS ? NaN : ptsToSeconds(t, tb);
  }

  /**
   * When keyframe `i` is presented, for choosing where a window's decode starts. A keyframe without a pts
   * (MPEG-PS, AVI) is presented after its dts, and after the leading B-frames that follow it in decode order
   * (open GOP: they need the previous GOP); and where no packet has a pts (AVI), a decoder that reorders
   * stamps each frame with the dts of the packet that pushed it out, its reorder delay later (a 2-B-frame H.264
   * keyframe at dts 0.8 s comes out at 0.8667 s, as ffprobe lists it too). The latest time (pts, else dts)
   * among the next {@link LEADING_LOOKAHEAD} packets bounds both from above, so a window is never started at a
   * keyframe that comes out after its start.
   */
  keyframeSeconds(i: number, tb: Rational): number {
    if (this.pts[i] !== NOPTS) return ptsToSeconds(this.pts[i], tb);
    let t = this.seconds(i, tb);
    for (let j = i + 1; j < Math.min(this.length, i + 1 + LEADING_LOOKAHEAD); j++) {
      const x = this.seconds(j, tb);
      if (x > t) t = x;
    }
    return t;
  }

  isKey(i: number): boolean {
    return (this.flags[i] & AV_PKT_FLAG_KEY) !== 0;
  }

  /** Drops packets `[0, k)`, keeping the rest (and their payload) at the front. */
  dropBefore(k: number): void {
    if (k <= 0) return;
    const base = this.offsets[k] ?? this.bytes;
    const n = this.length - k;
    for (const col of [this.pts, this.dts, this.duration]) col.copyWithin(0, k, this.length);
    for (const col of [this.flags, this.sizes]) col.copyWithin(0, k, this.length);
    this.offsets.copyWithin(0, k, this.length);
    for (let i = 0; i < n; i++) this.offsets[i] -= base;
    this.data.copyWithin(0, base, this.bytes);
    this.length = n;
    this.bytes -= base;
  }

  /** Packets `[a, b)` as fresh, exactly sized arrays (one payload copy). */
  slice(a: number, b: number) {
    const base = b > a ? this.offsets[a] : 0;
    const end = b > a ? this.offsets[b - 1] + this.sizes[b - 1] : 0;
    const offsets = new Uint32Array(b - a);
    for (let i = a; i < b; i++) offsets[i - a] = this.offsets[i] - base;
    return {
      pts: this.pts.slice(a, b),
      dts: this.dts.slice(a, b),
      duration: this.duration.slice(a, b),
      flags: this.flags.slice(a, b),
      offsets,
      sizes: this.sizes.slice(a, b),
      data: this.data.slice(base, end),
    };
  }

  #reserve(count: number, bytes: number): void {
    if (count > this.pts.length) {
      const cap = Math.max(count, this.pts.length * 2);
      this.pts = grow(this.pts, new BigInt64Array(cap));
      this.dts = grow(this.dts, new BigInt64Array(cap));
      this.duration = grow(this.duration, new BigInt64Array(cap));
      this.flags = grow(this.flags, new Uint32Array(cap));
      this.offsets = grow(this.offsets, new Float64Array(cap));
      this.sizes = grow(this.sizes, new Uint32Array(cap));
    }
    if (bytes > this.data.length) {
      const next = new Uint8Array(Math.max(bytes, this.data.length * 2));
      next.set(this.data.subarray(0, this.bytes));
      this.data = next;
    }
  }
}

function grow<T extends BigInt64Array | Uint32Array | Float64Array>(old: T, next: T): T {
  (next as { set(a: ArrayLike<unknown>): void }).set(old);
  return next;
}
