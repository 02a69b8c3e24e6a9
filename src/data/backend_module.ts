/**
 * The backend module of the video loader's "subprocess" backend: `spawnBackend` imports it in a child process
 * and calls its default export, which builds the loader's front half (source → fetch → demux → disaggregate,
 * see `front.ts`) there. The child streams one item per clip (metadata + compressed packets) to the parent,
 * which decodes, batches and collates.
 * @module
 */

import type { Pipeline } from "../pipeline/pipeline.ts";
import type { ClipPackets } from "./clip_worker.ts";
import { buildFront, type FrontArgs } from "./front.ts";

/** Builds the front half from the loader's JSON arguments. */
export default function clipFront(args: FrontArgs): Pipeline<ClipPackets> {
  return buildFront(args).addSink({ bufferSize: 4 }).build({ log: (m) => console.error(m) });
}
