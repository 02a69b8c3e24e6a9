/**
 * The front half of the video loader: source → fetch → demux → disaggregate. It is built the same way in the
 * loader's own process (backend "inprocess") and in a backend child process (backend "subprocess", through
 * `backend_module.ts`), from JSON-compatible {@link FrontArgs}: the sampler is pure, so both sides plan the same
 * epochs from the same options.
 *
 * - source: each iteration plans the next epoch with the {@link ClipSampler} and yields one task per run of
 *   adjacent clips of the same video (with `groupByVideo`, all of a video's clips);
 * - fetch (main thread, async, `concurrency.fetch` at once): URLs are fetched into memory with retries;
 *   local paths pass through (FFmpeg reads only the parts it needs);
 * - demux (`concurrency.demux` tasks at once in a `WorkerPool`; in-process the loader passes the pool its decode
 *   stage uses too, so demux and decode share one Worker per core instead of oversubscribing the CPU): one open
 *   of the file cuts every clip window;
 * - disaggregate: one item per clip.
 * @module
 */

import type { MaxFailures } from "../pipeline/stage.ts";
import { PipelineBuilder } from "../pipeline/builder.ts";
import { WorkerPool } from "../pipeline/worker_pool.ts";
import type { ClipDecodeOptions, ClipPackets, VideoTask } from "./clip_worker.ts";
import type { VideoItem } from "./dataset.ts";
import { fetchBytes, type FetchOptions, isUrl } from "./fetch.ts";
import { readMember } from "../shards/reader.ts";
import { ClipSampler, type ResolvedSamplerOptions, type SampledVideo } from "./sampler.ts";

/** Everything the front half needs; JSON-compatible so it can cross into a backend child. */
export interface FrontArgs {
  /** The videos the sampler plans over (indexed ones only) and their ranges. */
  items: VideoItem[];
  ranges: SampledVideo[];
  /** Dataset index of each entry of `items` (reported as `ClipMeta.video`). */
  datasetIndex: number[];
  sampler: ResolvedSamplerOptions;
  /** The epoch the first iteration plans. */
  firstEpoch: number;
  decode: ClipDecodeOptions;
  concurrency: { fetch: number; demux: number };
  fetch: Omit<FetchOptions, "signal" | "range">;
  maxFailures?: MaxFailures;
  /** Keep the sampler's order through the concurrent stages (default true): same seed, same batches. */
  ordered?: boolean;
}

/** The worker module for the demux and decode pools. */
export const CLIP_WORKER: string = new URL("./clip_worker.ts", import.meta.url).href;

/** A continuous source: each iteration yields the video tasks of the next epoch. */
export function epochSource(args: FrontArgs): Iterable<VideoTask> {
  const sampler = new ClipSampler(args.ranges, args.sampler);
  let epoch = args.firstEpoch;
  return {
    *[Symbol.iterator]() {
      const e = epoch++;
      let task: VideoTask | undefined;
      for (const c of sampler.epoch(e)) {
        if (task !== undefined && task.video === args.datasetIndex[c.video]) {
          task.clips.push({ position: c.position, start: c.start, end: c.end });
          continue;
        }
        if (task !== undefined) yield task;
        const item = args.items[c.video];
        task = {
          epoch: e,
          video: args.datasetIndex[c.video],
          path: item.path,
          label: item.label,
          member: item.member,
          clips: [{ position: c.position, start: c.start, end: c.end }],
          decode: args.decode,
        };
      }
      if (task !== undefined) yield task;
    },
  };
}

/** Builds source → fetch → demux → disaggregate; see the module docs. */
export function buildFront(
  args: FrontArgs,
  pool: WorkerPool = new WorkerPool(CLIP_WORKER, { size: args.concurrency.demux }),
): PipelineBuilder<ClipPackets> {
  const maxFailures = args.maxFailures;
  const ordered = args.ordered ?? true;
  return new PipelineBuilder()
    .addSource(epochSource(args), { name: "sample", continuous: true })
    .pipe(async (task: VideoTask, ctx): Promise<VideoTask> => {
      task.src = task.member
        ? await readMember(task.path, task.member, { fetch: { ...args.fetch, signal: ctx.signal } })
        : isUrl(task.path)
        ? await fetchBytes(task.path, { ...args.fetch, signal: ctx.signal })
        : task.path;
      return task;
    }, { name: "fetch", concurrency: args.concurrency.fetch, maxFailures, ordered })
    .pipe<ClipPackets[]>("demuxClips", {
      name: "demux",
      executor: pool,
      concurrency: args.concurrency.demux,
      maxFailures,
      ordered,
    })
    .disaggregate({ name: "disaggregate" });
}
