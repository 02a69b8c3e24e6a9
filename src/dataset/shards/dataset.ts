/**
 * A shard set as a dataset the loader can sample: one item per sample, whose `path` is the shard (file or
 * URL) and whose `member` says where the video lies in it, so fetching an item is one positioned read (an
 * HTTP range request) checked against the index (`readMember`). Time ranges and keyframes come from the
 * index: nothing is probed.
 * @module
 */

import type { IndexedVideo, MemberRef, VideoDataset, VideoItem } from "../items.ts";
import type { OpenedShards } from "./reader.ts";

/** A dataset item that lives inside a shard. */
export interface ShardVideoItem extends VideoItem {
  /** The video member in the shard at `path`. */
  member: MemberRef;
  /** Its time range, frame rate and keyframes, from the index. */
  indexed: IndexedVideo & { keyframes: number[] };
}

/** A dataset of shard members. */
export interface ShardDataset extends VideoDataset {
  /** One item per sample, shard by shard. */
  items: ShardVideoItem[];
}

/**
 * The samples of `set` as dataset items, shard by shard in set order, samples in shard order: each item's
 * `path` is its shard and its `member` the video's place in it, its time range and keyframes from the index.
 * @param set the opened shards
 * @returns the dataset the loader samples
 */
export function shardDataset(set: OpenedShards): ShardDataset {
  const items = set.shards.flatMap((shard) =>
    shard.index.samples.map((s): ShardVideoItem => ({
      path: shard.tar,
      label: s.label,
      indexed: { start: s.start, end: s.end, frameRate: s.frameRate, keyframes: s.keyframes },
      member: { name: s.video.name, offset: s.video.offset, size: s.video.size, sha256: s.video.sha256 },
    }))
  );
  return { root: set.source, classes: set.classes, items };
}
