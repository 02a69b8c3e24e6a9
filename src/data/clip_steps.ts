/**
 * The three steps that load clips, each turning a failure into a {@link FailedClip} value instead of throwing:
 * fetch a video (URLs into memory; local paths pass through), demux it (one open of the file cuts every clip
 * window, in a `WorkerPool` running `clip_worker.ts`), decode one clip (same pool). The loader's pipeline stages
 * call them, and so does its replacement step for a substitute clip, so a substitute is loaded exactly as a
 * planned clip is.
 * @module
 */

import type { Executor, PipeFn, TaskContext } from "../pipeline/executor.ts";
import type { WorkerPool } from "../pipeline/worker_pool.ts";
import { clipFailure, type FailedClip, isFailedClip } from "./clip_failure.ts";
import type { ClipPackets, VideoTask } from "./clip_worker.ts";
import type { FilledClip } from "./collate.ts";
import { fetchBytes, type FetchOptions, isUrl } from "./fetch.ts";
import { readMember } from "../shards/reader.ts";

/** A clip on its way: its packets, or its failure. */
export type ClipItem = ClipPackets | FailedClip;

/** The Worker export that decodes one clip. */
export type DecodeExport = "decodeClip" | "decodeClipNvdec";

/**
 * The executor of the stages that call these steps: it runs their functions on the main thread (they await
 * `pool` themselves, to catch what its Workers throw) and closes `pool` when the pipeline stops its executors,
 * which ends in-flight Worker tasks as a stage running on the pool directly would.
 */
export function callingPool(pool: WorkerPool): Executor {
  return {
    size: pool.size,
    run: (fn: PipeFn | string, item: unknown, ctx: TaskContext) => (fn as PipeFn)(item, ctx),
    close: () => pool.close(),
  };
}

/** Every clip of `task` failed in `stage` with `error`. */
function failAll(task: VideoTask, stage: string, error: unknown, attempt: number): FailedClip[] {
  return task.clips.map((meta) => ({
    failed: clipFailure({ ...meta, path: task.path }, stage, error, attempt),
  }));
}

/**
 * Fetches a URL's bytes into `task.src` (local paths pass through; a shard member is one checked positioned
 * read); on failure, every clip of it failed.
 */
export async function fetchVideo(
  task: VideoTask,
  opts: Omit<FetchOptions, "signal" | "range">,
  signal: AbortSignal,
  attempt = 0,
): Promise<VideoTask | FailedClip[]> {
  try {
    task.src = task.member
      ? await readMember(task.path, task.member, { fetch: { ...opts, signal } })
      : isUrl(task.path)
      ? await fetchBytes(task.path, { ...opts, signal })
      : task.path;
    return task;
  } catch (e) {
    if (signal.aborted) throw e;
    return failAll(task, "fetch", e, attempt);
  }
}

/** Demuxes every clip window of a fetched video in `pool`; on failure, every clip of it failed. */
export async function demuxVideo(
  pool: WorkerPool,
  task: VideoTask | FailedClip[],
  signal: AbortSignal,
  attempt = 0,
): Promise<ClipItem[]> {
  if (Array.isArray(task)) return task;
  try {
    return await pool.run("demuxClips", task, { signal, stage: "demux" }) as ClipPackets[];
  } catch (e) {
    if (signal.aborted) throw e;
    return failAll(task, "demux", e, attempt);
  }
}

/** Decodes one clip in `pool` into the clip its spec promises; on failure, the clip failed. */
export async function decodeClipItem(
  pool: WorkerPool,
  exportName: DecodeExport,
  item: ClipItem,
  signal: AbortSignal,
  attempt = 0,
): Promise<FilledClip | FailedClip> {
  if (isFailedClip(item)) return item;
  const { meta } = item;
  try {
    // The Workers return exactly the clip the spec promises (with its outcome) or throw a ClipError.
    return await pool.run(exportName, item, { signal, stage: "decode" }) as FilledClip;
  } catch (e) {
    if (signal.aborted) throw e;
    return { failed: clipFailure(meta, "decode", e, attempt) };
  }
}
