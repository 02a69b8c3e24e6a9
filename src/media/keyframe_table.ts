/**
 * The keyframe table of a video stream: for every keyframe packet, what precedes it in decode order
 * ({@link PrefixStats}: frames, their latest pts, whether one is untimed). The demuxer looks a window's start
 * keyframe up in it to give the window's packets their `firstFrameIndex` when it reached them by seeking (it
 * cannot count what it skipped). Built by one read of every packet of the stream from a fresh open of the input
 * (no decoding; the other streams discarded), and kept per thread for the inputs seen last (a path with the same
 * size and modification time, or the same bytes object), so a video visited again (the next epoch) is not read
 * twice.
 *
 * Cost (`bench/frame_index.bench.ts`, 2 cores at load 16, page cache warm): for a 2-minute 720p H.264 MKV
 * (3,600 packets, 44 MB), demuxing 3 windows of a file not seen before takes 3.3–3.8× as long as without the
 * table (about 55–95 ms more); of a file seen before, no measurable difference.
 * @module
 */
import { Packet } from "./av_objects.ts";
import { ffmpeg } from "./ffmpeg.ts";
import { NOPTS } from "./packets.ts";
import { addToPrefix, emptyPrefix, type PrefixStats } from "./frame_index.ts";
import { type MediaInput, MediaSource } from "./source.ts";
import { AV_PKT_FLAG_KEY, AVDISCARD_ALL, formatContext, packet, stream } from "./structs.ts";

/** Every keyframe of one stream, by (pts, dts), with what precedes it. */
export class KeyframeTable {
  readonly #byKey = new Map<string, PrefixStats>();

  /** Keyframes in the table. */
  get size(): number {
    return this.#byKey.size;
  }

  /** Records the keyframe `pts`/`dts` and the stats of the packets before it. */
  add(pts: bigint, dts: bigint, before: PrefixStats): void {
    const key = keyOf(pts, dts);
    // Two keyframes with the same timestamps cannot be told apart: neither is looked up.
    this.#byKey.set(key, this.#byKey.has(key) ? { ...before, untimed: true } : { ...before });
  }

  /** What precedes the keyframe `pts`/`dts`, or null when the stream has no such keyframe. */
  before(pts: bigint, dts: bigint): PrefixStats | null {
    return this.#byKey.get(keyOf(pts, dts)) ?? null;
  }
}

function keyOf(pts: bigint, dts: bigint): string {
  return `${pts}/${dts}`;
}

/** Keyframe tables kept per thread, at most this many keyframes in all. */
const CACHE_KEYFRAMES = 262_144;
const cache = new Map<string, KeyframeTable>();
const bytesCache = new WeakMap<Uint8Array, Map<string, KeyframeTable>>();
let cachedKeyframes = 0;

let scans = 0;

/** How many times this thread built a table by reading a stream (for tests and benchmarks). */
export function keyframeScans(): number {
  return scans;
}

/**
 * The keyframe table of stream `index` of `src`: from the cache when this thread read the same input before,
 * else by reading every packet of the stream (and kept). `probed`: the demuxer read the stream info (so does the
 * scan: the packets then come the same way).
 */
export function keyframeTable(src: MediaInput, index: number, probed: boolean): KeyframeTable {
  if (typeof src !== "string") {
    let tables = bytesCache.get(src);
    if (tables === undefined) bytesCache.set(src, tables = new Map());
    let t = tables.get(`${index}/${probed}`);
    if (t === undefined) tables.set(`${index}/${probed}`, t = scan(src, index, probed));
    return t;
  }
  let key: string;
  try {
    const st = Deno.statSync(src);
    key = `${index}\0${probed}\0${st.size}\0${st.mtime?.getTime()}\0${src}`;
  } catch {
    return scan(src, index, probed); // not a local file (a URL FFmpeg opens itself): read it, keep nothing
  }
  const hit = cache.get(key);
  if (hit !== undefined) {
    cache.delete(key); // most recently used last
    cache.set(key, hit);
    return hit;
  }
  const t = scan(src, index, probed);
  cache.set(key, t);
  cachedKeyframes += t.size;
  for (const [k, old] of cache) {
    if (cachedKeyframes <= CACHE_KEYFRAMES || k === key) break;
    cache.delete(k);
    cachedKeyframes -= old.size;
  }
  return t;
}

/** Reads every packet of stream `index` of `src` (a fresh open, as the demuxer's; the other streams discarded). */
function scan(src: MediaInput, index: number, probed: boolean): KeyframeTable {
  scans++;
  using source = MediaSource.open(src);
  const fmt = source.fmt;
  if (probed) source.findStreamInfo({ probesize: 1_000_000, maxAnalyzeDurationUs: 1_000_000 });
  for (let i = 0; i < formatContext.nbStreams(fmt); i++) {
    if (i !== index) stream.setDiscard(formatContext.stream(fmt, i), AVDISCARD_ALL);
  }
  const table = new KeyframeTable();
  const before = emptyPrefix();
  using pkt = new Packet();
  const { avformat } = ffmpeg();
  while (avformat.av_read_frame(fmt, pkt.ptr) >= 0) {
    if (packet.streamIndex(pkt.ptr) === index) {
      const pts = packet.pts(pkt.ptr) ?? NOPTS, flags = packet.flags(pkt.ptr);
      if (flags & AV_PKT_FLAG_KEY) table.add(pts, packet.dts(pkt.ptr) ?? NOPTS, before);
      addToPrefix(before, pts, flags);
    }
    pkt.unref();
  }
  return table;
}
