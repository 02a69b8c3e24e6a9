/**
 * A shard set as a dataset the loader can sample: one item per sample, whose `path` is the shard (file or
 * URL) and whose `range` is the video member's bytes in it, so fetching an item is one positioned read (an
 * HTTP range request). Time ranges and keyframes come from the index: nothing is probed.
 * @module
 */

import type { VideoDataset, VideoItem } from "../data/dataset.ts";
import type { OpenedShards } from "./reader.ts";

/** A dataset item that lives inside a shard. */
export interface ShardVideoItem extends VideoItem {
  /** The video member's bytes in the shard: `[start, end)`. */
  range: [number, number];
  /** Its SHA-256 (hex), checked after each read. */
  sha256: string;
  /** The tar member's name, for messages. */
  member: string;
  /** Start of the range the loader samples from, seconds. */
  start: number;
  /** End of that range, seconds. */
  end: number;
  /** Keyframe times, seconds, ascending. */
  keyframes: number[];
}

/** A dataset of shard members. */
export interface ShardDataset extends VideoDataset {
  /** One item per sample, shard by shard. */
  items: ShardVideoItem[];
}

/** The samples of `set` as dataset items, shard by shard in set order, samples in shard order. */
export function shardDataset(set: OpenedShards): ShardDataset {
  const items = set.shards.flatMap((shard) =>
    shard.index.samples.map((s): ShardVideoItem => ({
      path: shard.tar,
      label: s.label,
      start: s.start,
      end: s.end,
      keyframes: s.keyframes,
      range: [s.video.offset, s.video.offset + s.video.size],
      sha256: s.video.sha256,
      member: s.video.name,
    }))
  );
  return { root: set.source, classes: set.classes, items };
}
