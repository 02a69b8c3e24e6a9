/**
 * What a dataset is made of, below every module that makes or reads one: a labelled list of videos
 * ({@link VideoDataset}), each item ({@link VideoItem}) with what is known of it without probing (a shard
 * member's place, {@link MemberRef}; its index entry, {@link IndexedVideo}), and the files a directory tree
 * left out ({@link SkippedFile}). Directory trees and manifests are read in `dataset.ts`, shard sets in
 * `shards/`, indexes made in `video_index.ts`.
 * @module
 */

import type { SampledVideo } from "./sampler.ts";
import type { MemberLocation } from "./shards/index_format.ts";

/** A labelled list of videos. */
export interface VideoDataset {
  /** Where it came from (directory, manifest path or URL). */
  root: string;
  /** Class names; a label is an index into this list. */
  classes: string[];
  /** The videos, in the dataset's order. */
  items: VideoItem[];
  /** Files a directory tree left out, with the reason (empty for manifests). */
  skipped?: SkippedFile[];
}

/** One labelled video (or a time range of one). */
export interface VideoItem {
  /** Local path or http(s) URL. */
  path: string;
  /** Class index into `VideoDataset.classes`; -1 when the dataset has no labels. */
  label: number;
  /** Optional range of the video to sample from, seconds: its start... */
  start?: number;
  /** ...and its end. */
  end?: number;
  /** A manifest's other columns (captions, multi-label ids, targets), carried to each clip's metadata. */
  fields?: Record<string, unknown>;
  /** The video is this member of the file at `path` (a tar shard): one positioned read, checked (`readMember`). */
  member?: MemberRef;
  /** What indexing would find (time range, frame rate, keyframes) when it is known without probing. */
  indexed?: IndexedVideo;
}

/** A file a directory tree left out, and why. */
export interface SkippedFile {
  /** The file (or link) under the dataset's root. */
  path: string;
  /** Why it was left out. */
  reason: string;
}

/** Where a video lies inside a shard, and how to check it: what `readMember` needs. */
export type MemberRef = Pick<MemberLocation, "name" | "offset" | "size" | "sha256">;

/** What the index knows about one video. */
export interface IndexedVideo extends SampledVideo {
  /** Frames per second (0 when not probed or unknown). */
  frameRate: number;
}
