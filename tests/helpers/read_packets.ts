/**
 * The decoder tests' packet source: `demuxVideoSync` (src/media/demux.ts) with the options the tests use. Kept
 * as one seam so the decoder tests read packets one way.
 * @module
 */
import { demuxVideoSync } from "../../src/media/demux.ts";
import { VideoPackets } from "../../src/media/packets.ts";

/** The packets of the best (or given) video stream of `path`, cut for `window` when given. */
export function readPackets(
  path: string,
  opts: { window?: [number, number]; streamIndex?: number } = {},
): VideoPackets {
  return demuxVideoSync(path, { window: opts.window, streamIndex: opts.streamIndex })[0];
}

/**
 * `p` rebuilt from the packets `keep` (indices into `p`, in order), packet `k`'s payload replaced by
 * `payload(k)` when that gives one: for tests that forge packet streams (a payload swapped, two packets merged).
 */
export function rebuildPackets(
  p: VideoPackets,
  keep: readonly number[],
  payload: (k: number) => Uint8Array | undefined = () => undefined,
): VideoPackets {
  const parts = keep.map((k) => payload(k) ?? p.packet(k));
  const data = new Uint8Array(parts.reduce((n, x) => n + x.length, 0));
  const offsets = new Uint32Array(parts.length), sizes = new Uint32Array(parts.length);
  let at = 0;
  for (const [i, x] of parts.entries()) {
    data.set(x, at);
    offsets[i] = at;
    sizes[i] = x.length;
    at += x.length;
  }
  return new VideoPackets({
    ...p,
    data,
    offsets,
    sizes,
    pts: BigInt64Array.from(keep, (k) => p.pts[k]),
    dts: BigInt64Array.from(keep, (k) => p.dts[k]),
    duration: BigInt64Array.from(keep, (k) => p.duration[k]),
    flags: Uint32Array.from(keep, (k) => p.flags[k]),
  });
}
