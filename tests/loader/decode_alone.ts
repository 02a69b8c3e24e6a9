/**
 * A clip decoded on its own by the clip Worker's one decode export, as tests want it: the clip, or its failure
 * thrown as an `Error` carrying the failure record's text.
 * @module
 */
import { decodeClip } from "../../src/loader/decode/clip_worker.ts";
import { isFailedClip } from "../../src/loader/clip/clip_failure.ts";
import type { ClipPackets, DecodedClip } from "../../src/loader/clip/life.ts";

/** `item` (no `shared` clips) decoded by `decoder` (default: the one its spec names). */
export function decodeAlone(item: ClipPackets, decoder?: "cpu" | "nvdec"): DecodedClip {
  if (decoder !== undefined) item.spec = { ...item.spec, decoder };
  const results = decodeClip(item).value;
  if (results.length !== 1) throw new Error(`decodeAlone: ${results.length} results for one clip`);
  const [r] = results;
  if (isFailedClip(r)) throw new Error(r.failed.error);
  return r;
}
