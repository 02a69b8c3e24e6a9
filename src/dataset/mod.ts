/**
 * Datasets below the loader: reading one ({@link openDataset} and the directory tree and manifest readers in
 * `@sluice/sluice`), the items it is made of, indexing it ({@link indexDataset}: each video's time range and
 * keyframes), the seeded sampler that plans each epoch's clips ({@link ClipSampler}), fetching an item's bytes
 * from a path or a URL with bounded retries ({@link fetchBytes}), and reading shard sets (what `sluice pack`
 * writes, `@sluice/sluice/prep`): {@link openShards}, {@link readMember}, {@link streamSamples}. The loader does
 * all of this itself; these are for tools around it and pipelines of one's own.
 *
 * @example Index a dataset and plan an epoch's clips
 * ```ts
 * import { ClipSampler, makeSyntheticDataset, openDataset } from "@sluice/sluice";
 * import { indexDataset } from "@sluice/sluice/dataset";
 *
 * const dir = await Deno.makeTempDir();
 * makeSyntheticDataset(dir, { videos: 4, classes: 2, durationSec: 2, width: 160, height: 120 });
 * const index = await indexDataset(await openDataset(dir));
 * const videos = index.videos.filter((v) => v !== null);
 * const sampler = new ClipSampler(videos, { seed: 0, clipsPerVideo: 2, clipDurationSec: 0.5 });
 * for (const clip of sampler.epoch(0)) console.log(clip.video, clip.start, clip.end);
 * ```
 * @module
 */

export { fetchBytes, type FetchLimits } from "./fetch.ts";
export { clipSeed } from "./sampler.ts";
export { type DatasetIndex, indexDataset, type IndexOptions } from "./video_index.ts";
// Shard sets: what `sluice pack` writes (`@sluice/sluice/prep`), read back
export {
  type OpenedShard,
  type OpenedShards,
  openShards,
  readMember,
  readSampleMeta,
  readSampleVideo,
  shardOrder,
  type ShardReadOptions,
  type StreamedSample,
  type StreamOptions,
  streamSamples,
} from "./shards/reader.ts";
export type { ShardEntry, ShardIndex, ShardSample, ShardSet } from "./shards/index_format.ts";
export { type ShardDataset, shardDataset, type ShardVideoItem } from "./shards/dataset.ts";
