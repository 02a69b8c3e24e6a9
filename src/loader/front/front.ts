/**
 * The front half of the video loader: sample → fetch → demux → shuffle → disaggregate. It is built the same way
 * in the loader's own process (backend "inprocess") and in a backend child process (backend "subprocess",
 * through `backend_module.ts`), from JSON-compatible {@link FrontArgs}: the sampler is pure, so both sides plan
 * the same epochs from the same options.
 *
 * - sample: each iteration plans the next epoch with the {@link ClipSampler} and yields one task per run of
 *   adjacent clips of the same video (with `groupByVideo`, all of a video's clips), in the order their first
 *   clips leave the shuffle buffer (so the epoch's first batch needs only its own videos demuxed);
 * - fetch (main thread, async, `concurrency.fetch` at once): URLs are fetched into memory with retries;
 *   local paths pass through (FFmpeg reads only the parts it needs);
 * - demux (`concurrency.demux` tasks at once in a `WorkerPool`; in-process the loader passes the pool its decode
 *   stage uses too, so demux and decode share one Worker per core instead of oversubscribing the CPU): one open
 *   of the file cuts every clip window;
 * - shuffle: the seeded shuffle buffer's order (`sampler.shuffleBuffer` clips, {@link epochOrder}) interleaves
 *   the clips of different videos: each clip leaves once every clip before it in the output has; disaggregate:
 *   one item per clip.
 *
 * A fetch or demux failure does not fail the task: each of its clips goes on as a `FailedClip` (see
 * `clip_steps.ts`), so every planned clip reaches the loader, loaded or failed.
 *
 * Decode once for several clips (`shareHorizon`): where each clip of an epoch ends up is known when the epoch is
 * planned, before anything is decoded: the sampler's plan is pure and the buffer's draws depend only on the seed,
 * the epoch and the count, so {@link epochOrder} gives each position's index in the epoch's output (batch
 * `⌊index / batchSize⌋`, slot `index mod batchSize`). Each video task carries its clips' output indices; the
 * demux Worker puts clips whose packets overlap (the same GOP, or one window's packets reaching into the next
 * one's) and whose output indices are at most `shareHorizon` apart into one group, led by the one that comes out
 * first. The leader carries the packets of all and decodes them in one forward pass (`decodeClip`), each
 * clip into its own destination and with its own failure; the others carry no packets, only `servedBy`, and the
 * decode stage hands them the leader's results when they come (`ClipDecodeStep`). The batches are the same as
 * with every clip decoded on its own: the order of the items does not change, only who decodes which. Clips of
 * other tasks of the same file (rows of a manifest) are offered to a task's passes too (`row_share.ts`).
 *
 * In a node server (`src/serve/node_hub.ts`), each rank's loader builds its own front, and the demux of each file
 * also cuts the clips other ranks' loaders planned of it (`lane_share.ts`): a demux task, when it starts, takes
 * what other ranks' demux cut for it and claims theirs.
 *
 * Resume mid-epoch (`resume`, see `loader_state.ts`): in the resumed epoch, the sample stage leaves out the clips
 * whose output index is below the resume point, so they are never fetched, demuxed or decoded, and the shuffle
 * stage's output starts at the resume point: every other clip leaves at its own output index, as in the whole
 * epoch.
 * @module
 */

import { PipelineBuilder } from "../../pipeline/builder.ts";
import { mainThread } from "../../pipeline/executor.ts";
import { WaitLedger } from "../../pipeline/wait_ledger.ts";
import { WorkerPool } from "../../pipeline/worker_pool.ts";
import type { TaskPool } from "../../pipeline/pool_lease.ts";
import { callingPool, demuxVideo, fetchVideo } from "../decode/clip_steps.ts";
import type { ClipSpec } from "../clip/clip_spec.ts";
import type { VideoItem } from "../../dataset/dataset.ts";
import type { FetchLimits } from "../../dataset/fetch.ts";
import { type StageConcurrency, startSize } from "../../pipeline/stage.ts";
import {
  type ClipRequest,
  ClipSampler,
  type ResolvedSamplerOptions,
  type SampledVideo,
} from "../../dataset/sampler.ts";
import { epochOrder } from "../../dataset/epoch_order.ts";
import { ShuffleBuffer } from "../../dataset/shuffle_buffer.ts";
import type { ThreadBudget } from "../decode/decode_threads.ts";
import { RowShares } from "./row_share.ts";
import { byPosition, type ClaimedTask, type LaneShare } from "./lane_share.ts";
import type { ClipBase, ClipItem, VideoTask } from "../clip/life.ts";

/** Everything the front half needs; JSON-compatible so it can cross into a backend child. */
export interface FrontArgs {
  /** The videos the sampler plans over (indexed ones only) and their ranges. */
  items: VideoItem[];
  /** The range (and keyframes) of each entry of `items`. */
  ranges: SampledVideo[];
  /** Dataset index of each entry of `items` (reported as `ClipMeta.video`). */
  datasetIndex: number[];
  /** The sampler's options, resolved (the child plans with the same ones). */
  sampler: ResolvedSamplerOptions;
  /** The epoch the first iteration plans. */
  firstEpoch: number;
  /** What each clip becomes (travels with each clip to the decode stage). */
  spec: ClipSpec;
  /** Tasks at once in the fetch and demux stages. */
  concurrency: { fetch: StageConcurrency; demux: StageConcurrency };
  /** How URLs are fetched (resolved at the loader's door). */
  fetch: FetchLimits;
  /** Keep the sampler's order through the concurrent stages (default true): same seed, same batches. */
  ordered?: boolean;
  /**
   * Decode once for several clips (see the module docs): clips of one video whose packets overlap are served by
   * one decode pass when they leave the shuffle buffer at most this many clips apart (so at most this many
   * decoded clips wait for their turn). 0 or absent: every clip is decoded on its own. Needs `ordered`.
   */
  shareHorizon?: number;
  /** Time each demux task's phases (the loader's `profile`). */
  profile?: boolean;
  /**
   * Resume mid-epoch: in `epoch`, the clips whose output index is below `from` are skipped (see the module
   * docs). Read when an epoch starts, so the loader may set it until its first epoch starts.
   */
  resume?: { epoch: number; from: number };
}

/** The worker module for the demux and decode pools. */
export const CLIP_WORKER: string = new URL("../decode/clip_worker.ts", import.meta.url).href;

/**
 * The metadata of the planned clip `c` of `epoch` (entry `c.video` of `args.items`), placed at `position` with
 * `seed`: the plan's own position and seed for a planned clip, the failed clip's for a substitute.
 */
export function clipBase(
  args: FrontArgs,
  epoch: number,
  c: ClipRequest,
  position = c.position,
  seed = c.seed,
): ClipBase {
  const item = args.items[c.video];
  const meta: ClipBase = {
    path: item.path,
    video: args.datasetIndex[c.video],
    label: item.label,
    start: c.start,
    end: c.end,
    epoch,
    position,
    seed,
  };
  if (item.fields !== undefined) meta.fields = item.fields;
  return meta;
}

/** The resume point's `from` in `epoch`, 0 when `epoch` is not the resumed one. */
function resumeFrom(args: FrontArgs, epoch: number): number {
  return args.resume?.epoch === epoch ? args.resume.from : 0;
}

/** The front's decode-once horizon: `args.shareHorizon` when the order is kept, else 0. */
function horizonOf(args: FrontArgs): number {
  return (args.ordered ?? true) ? args.shareHorizon ?? 0 : 0;
}

/**
 * A continuous source: each iteration yields the video tasks of the next epoch (the first: `args.firstEpoch`, as
 * it is when that epoch starts). With `shares` (and a horizon), the epoch's clips are offered to earlier tasks of
 * their file first (decode once across rows); with `lane`, the epoch's plan is the node's to share (decode once
 * across ranks, `lane_share.ts`).
 */
export function epochSource(
  args: FrontArgs,
  shares: RowShares | null = null,
  lane: LaneShare | null = null,
): Iterable<VideoTask> {
  const sampler = ClipSampler.fromResolved(args.ranges, args.sampler);
  const horizon = horizonOf(args);
  let epoch: number | undefined;
  return {
    *[Symbol.iterator]() {
      const e = epoch ?? args.firstEpoch;
      epoch = e + 1;
      const from = resumeFrom(args, e);
      const order = epochOrder(sampler, e);
      const tasks: VideoTask[] = [];
      let task: VideoTask | undefined, current = -1;
      for (const c of sampler.epoch(e)) {
        if (order[c.position] < from) continue; // before the resume point: never loaded
        if (task !== undefined && c.video === current) {
          task.clips.push(clipBase(args, e, c));
          task.share?.order.push(order[c.position]);
          continue;
        }
        current = c.video;
        task = {
          epoch: e,
          video: args.datasetIndex[c.video],
          path: args.items[c.video].path,
          member: args.items[c.video].member,
          clips: [clipBase(args, e, c)],
          spec: args.spec,
        };
        if (horizon > 0) task.share = { order: [order[c.position]], horizon };
        if (args.profile) task.profile = true;
        tasks.push(task);
      }
      // In the order their first clips leave the shuffle buffer: the output never waits for a task behind others.
      const first = new Map(tasks.map((t) => [t, Math.min(...t.clips.map((c) => order[c.position]))]));
      tasks.sort((a, b) => first.get(a)! - first.get(b)!);
      if (horizon > 0) shares?.plan(tasks);
      lane?.plan(e, tasks, order);
      yield* tasks;
    },
  };
}

/**
 * Builds sample → fetch → demux → shuffle → disaggregate; see the module docs. `budget`: the thread tokens the
 * pool's decode tasks share (in-process, demux tasks hold one each while they run). `lane`: this loader's share
 * of a node's decode once across ranks (`lane_share.ts`): a demux task takes what other ranks' demux tasks cut
 * for it, and claims other ranks' clips of the file it opens.
 */
export function buildFront(
  args: FrontArgs,
  pool: TaskPool = new WorkerPool(CLIP_WORKER, { size: startSize(args.concurrency.demux) }),
  budget: ThreadBudget | null = null,
  lane: LaneShare | null = null,
): PipelineBuilder<ClipItem> {
  const ordered = args.ordered ?? true;
  const sampler = ClipSampler.fromResolved(args.ranges, args.sampler);
  const output = new OutputOrder(args, sampler);
  // Unordered, tasks finish in any order: the buffer itself interleaves a video's clips as they come.
  const buffer = new ShuffleBuffer<ClipItem>(args.sampler.shuffleBuffer, args.sampler.seed, sampler.length);
  const shuffled = (clips: ClipItem[]) =>
    ordered ? output.release(clips) : buffer.push(placeOf(clips[0]).epoch, clips);
  const shares = horizonOf(args) > 0 ? new RowShares(horizonOf(args)) : null;
  // A row waiting for an earlier row's pass to settle its offer is waiting, not fetching (for the verdict).
  const waits = new WaitLedger();
  const fetch = async (task: VideoTask, signal: AbortSignal) => {
    if (shares === null) return await fetchVideo(task, args.fetch, signal);
    const t = await waits.during("fetch", shares.take(task, signal));
    return Array.isArray(t) ? t : shares.fetched(t, await fetchVideo(t, args.fetch, signal));
  };
  /** Demuxes the task's clips (none left: only its row shares settle), handing claimed clips to their lanes. */
  const demuxOwn = async (task: VideoTask, signal: AbortSignal, claimed: ClaimedTask | null) => {
    let items: ClipItem[] | null = task.clips.length === 0 ? [] : null;
    try {
      items ??= await demuxVideo(pool, task, signal, 0, budget);
    } finally {
      const raw = items;
      if (shares !== null) items = shares.demuxed(task, raw); // settles its offers even when it threw
      if (claimed !== null) {
        if (raw === null) lane!.release(claimed);
        else items = lane!.split(claimed, items!);
      }
    }
    return items!;
  };
  const demux = async (task: VideoTask | ClipItem[], signal: AbortSignal) => {
    if (Array.isArray(task)) return task;
    if (lane === null) return await demuxOwn(task, signal, null);
    // Other ranks' demux took some of its clips, or it takes theirs (see lane_share.ts).
    const pending = lane.take(task);
    const claimed = task.clips.length > 0 ? lane.claim(task) : null;
    const own = demuxOwn(task, signal, claimed);
    if (pending.length === 0) return await own;
    own.catch(() => {}); // awaited below; a failure here must not go unhandled while the claims settle
    const served = await pool.waits.during("demux", lane.served(task.spec, pending, signal));
    return [...served, ...await own].sort(byPosition);
  };
  return new PipelineBuilder()
    .addSource(epochSource(args, shares, lane), { name: "sample", continuous: true })
    .pipe((task: VideoTask, ctx) => fetch(task, ctx.signal), {
      name: "fetch",
      executor: { ...mainThread, waitMs: (stage) => waits.ms(stage) },
      bound: "io",
      concurrency: args.concurrency.fetch,
      ordered,
    })
    .pipe((task, ctx) => demux(task, ctx.signal), {
      name: "demux",
      executor: callingPool(pool),
      concurrency: args.concurrency.demux,
      ordered,
    })
    .pipe((clips: ClipItem[]) => clips.length === 0 ? clips : shuffled(clips), { name: "shuffle" })
    .disaggregate({ name: "disaggregate" });
}

/** A clip item's epoch and plan position. */
function placeOf(x: ClipItem): { epoch: number; position: number } {
  return "failed" in x ? x.failed : x.meta;
}

/**
 * The shuffle buffer's order, applied as clips come (see the module docs): each clip is held until every clip
 * before it in the epoch's output has left (a resumed epoch's output starts at its resume point), then they leave
 * in output order. The sample stage starts tasks in the order of their first clip's output index, so the clip the
 * output waits for is always in a task on its way, never behind tasks whose clips all come later.
 */
class OutputOrder {
  readonly #args: FrontArgs;
  readonly #sampler: ClipSampler;
  #epoch = -1;
  #order: Int32Array = new Int32Array(0);
  #next = 0;
  /** Clips come ahead of their turn, by output index. */
  readonly #held = new Map<number, ClipItem>();

  constructor(args: FrontArgs, sampler: ClipSampler) {
    this.#args = args;
    this.#sampler = sampler;
  }

  /** Takes `clips` (of one epoch) and returns those whose turn has come, in output order. */
  release(clips: ClipItem[]): ClipItem[] {
    const epoch = placeOf(clips[0]).epoch;
    if (epoch !== this.#epoch) {
      this.#epoch = epoch;
      this.#order = epochOrder(this.#sampler, epoch);
      this.#next = resumeFrom(this.#args, epoch);
      this.#held.clear(); // an epoch stopped early leaves clips behind: they belong to no later epoch
    }
    for (const x of clips) this.#held.set(this.#order[placeOf(x).position], x);
    const out: ClipItem[] = [];
    for (let x = this.#held.get(this.#next); x !== undefined; x = this.#held.get(this.#next)) {
      this.#held.delete(this.#next++);
      out.push(x);
    }
    return out;
  }
}
