/**
 * `indexDataset`: the time range (and, when asked, the keyframe times) of every video of a dataset, which the
 * sampler needs to plan an epoch up front. A manifest row that gives both `start` and `end` needs no probing
 * unless keyframes are wanted; other videos are probed (URLs are fetched first). A video that cannot be fetched
 * or probed is left out of the plan and reported in `failures`, not thrown.
 * @module
 */

import { probe } from "../media/probe.ts";
import type { IndexedVideo, VideoDataset } from "./items.ts";
import {
  type FetchLimits,
  type FetchOptions,
  fetchResolved,
  type FetchWhat,
  isUrl,
  resolveFetchOptions,
} from "./fetch.ts";
import { readMemberResolved } from "./shards/reader.ts";

/** A video left out of the index. */
export interface IndexFailure {
  /** The video's path or URL. */
  path: string;
  /** Why it could not be indexed. */
  error: string;
}

/** Result of {@link indexDataset}: `videos[i]` is null for the videos in `failures`. */
export interface DatasetIndex {
  /** One entry per dataset item, null when it could not be indexed. */
  videos: (IndexedVideo | null)[];
  /** The items left out, and why. */
  failures: IndexFailure[];
}

/** Options of {@link indexDataset}. */
export interface IndexOptions {
  /** Collect keyframe times (reads every packet header; no decoding). */
  keyframes?: boolean;
  /** Videos indexed at once (default 4). */
  concurrency?: number;
  /** How URLs are fetched (retries, timeout). */
  fetch?: FetchOptions;
}

/** {@link IndexOptions} with the fetch limits resolved (at a door: `indexDataset`'s, the loader's). */
export interface ResolvedIndexOptions extends Omit<IndexOptions, "fetch"> {
  /** How URLs are fetched, checked and defaulted. */
  fetch: FetchLimits & FetchWhat;
}

/**
 * The time range (and, when asked, the keyframe times) of every video of `ds`, which the sampler needs to plan
 * an epoch up front. A manifest row that gives both `start` and `end` needs no probing unless keyframes are
 * wanted; other videos are probed (URLs are fetched first).
 * @param ds the dataset
 * @param opts keyframes or not, videos indexed at once, how URLs are fetched
 * @returns one entry per item (null for a video that could not be fetched or probed: it is listed in
 *   `failures`, not thrown)
 * @throws {InvalidArgumentError} for fetch options out of range
 */
export async function indexDataset(ds: VideoDataset, opts: IndexOptions = {}): Promise<DatasetIndex> {
  return await indexVideos(ds, { ...opts, fetch: resolveFetchOptions(opts.fetch ?? {}) });
}

/** {@link indexDataset} with its options resolved (the loader's plan: its fetch group is checked already). */
export async function indexVideos(ds: VideoDataset, opts: ResolvedIndexOptions): Promise<DatasetIndex> {
  const videos: (IndexedVideo | null)[] = new Array(ds.items.length).fill(null);
  const failures: IndexFailure[] = [];
  let next = 0;
  const worker = async () => {
    while (next < ds.items.length) {
      const i = next++;
      try {
        videos[i] = await indexOne(ds.items[i], opts);
      } catch (e) {
        failures.push({ path: ds.items[i].path, error: e instanceof Error ? e.message : String(e) });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, opts.concurrency ?? 4) }, worker));
  return { videos, failures };
}

async function indexOne(
  item: VideoDataset["items"][number],
  opts: ResolvedIndexOptions,
): Promise<IndexedVideo> {
  if (item.start !== undefined && item.end !== undefined && !opts.keyframes) {
    return { start: item.start, end: item.end, frameRate: item.indexed?.frameRate ?? 0 };
  }
  if (item.indexed && (!opts.keyframes || item.indexed.keyframes)) {
    return { ...item.indexed, start: item.start ?? item.indexed.start, end: item.end ?? item.indexed.end };
  }
  const { range: _, signal, ...limits } = opts.fetch;
  const src = item.member
    ? await readMemberResolved(item.path, item.member, limits, signal)
    : isUrl(item.path)
    ? await fetchResolved(item.path, limits, { signal })
    : item.path;
  const info = await probe(src, { keyframes: opts.keyframes ?? false });
  const v = info.video;
  if (v === null) throw new Error(`${item.path}: index failed: no video stream`);
  const duration = v.durationSec ?? info.durationSec;
  const start = item.start ?? v.startTimeSec;
  const end = item.end ?? (duration === null ? NaN : v.startTimeSec + duration);
  if (!(end > start)) throw new Error(`${item.path}: index failed: unknown or empty duration`);
  const out: IndexedVideo = { start, end, frameRate: v.frameRate };
  if (v.keyframeTimes) out.keyframes = v.keyframeTimes;
  return out;
}
