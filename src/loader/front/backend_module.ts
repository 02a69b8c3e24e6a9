/**
 * The backend module of the video loader's "subprocess" backend: `spawnBackend` imports it in a child process
 * and calls its default export, which builds the loader's front half (sample → fetch → demux → shuffle →
 * disaggregate, see `front.ts`) there. The child streams one item per clip to the parent, which decodes,
 * replaces, batches and collates: metadata + compressed packets, or, for a clip whose fetch or demux failed,
 * its `FailedClip` (an ordinary JSON item, so the parent counts and replaces it like a failure of its own).
 *
 * The child's entry writes each item to its stdout synchronously (copying small parts, writing big ones
 * straight from their memory) before it asks for the next one, so asking for the next item means the previous
 * one is spent: its packet buffers are freed then (see {@link releasingSpent}) rather than whenever V8 next
 * collects garbage, which keeps the child's memory at its working set.
 * @module
 */

import type { Pipeline } from "../../pipeline/pipeline.ts";
import type { PipelineStats } from "../../pipeline/stats.ts";
import { releaseBuffers } from "../../pipeline/transfer.ts";
import { buildFront, type FrontArgs } from "./front.ts";
import type { ClipItem } from "../clip/life.ts";

/** The child's pipeline stats, plus its memory (relayed to the parent in STATS frames). */
export interface FrontStats extends PipelineStats {
  /** `Deno.memoryUsage()` of the child's main thread (its RSS is the whole child process's). */
  memory: Deno.MemoryUsage;
}

/** What the child serves: each iteration is one epoch; `stats` (plus memory) and `stop` are the pipeline's. */
export interface ServedFront extends AsyncIterable<ClipItem> {
  stats(): FrontStats;
  stop(): Promise<void>;
}

/** Builds the front half from the loader's JSON arguments. */
export default function clipFront(args: FrontArgs): ServedFront {
  // JSON carries no Infinity: a clip window of the whole video comes as null.
  args.sampler.clipDurationSec ??= Infinity;
  return releasingSpent(buildFront(args).addSink({ bufferSize: 4 }).build({ log: (m) => console.error(m) }));
}

/**
 * Wraps the front pipeline so that each `next()` (and the end of an epoch) frees the packet buffers of the item
 * the previous `next()` returned. Only for a consumer that is done with an item when it asks for the next one,
 * as the backend child's entry is.
 */
export function releasingSpent(pipeline: Pipeline<ClipItem>): ServedFront {
  return {
    stats: () => ({ ...pipeline.stats(), memory: Deno.memoryUsage() }),
    stop: () => pipeline.stop(),
    [Symbol.asyncIterator](): AsyncIterator<ClipItem> {
      const it = pipeline[Symbol.asyncIterator]();
      let spent: ClipItem | undefined;
      const release = () => {
        if (spent !== undefined && "packets" in spent) releaseBuffers(spent.packets);
        spent = undefined;
      };
      return {
        next: async () => {
          release();
          const r = await it.next();
          if (!r.done) spent = r.value;
          return r;
        },
        return: async (value?: unknown) => {
          release();
          await it.return?.(value);
          return { done: true, value: undefined };
        },
      };
    },
  };
}
