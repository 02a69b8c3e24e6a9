/**
 * The decoder tests' packet source: `demuxVideoSync` (src/media/demux.ts) with the options the tests use. Kept
 * as one seam so the decoder tests read packets one way.
 * @module
 */
import { demuxVideoSync } from "../../src/media/demux.ts";
import type { VideoPackets } from "../../src/media/packets.ts";

/** The packets of the best (or given) video stream of `path`, cut for `window` when given. */
export function readPackets(
  path: string,
  opts: { window?: [number, number]; streamIndex?: number } = {},
): VideoPackets {
  return demuxVideoSync(path, { window: opts.window, streamIndex: opts.streamIndex })[0];
}
