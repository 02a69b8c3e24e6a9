/**
 * Decode once across rows: clips of one file (path and shard member) planned by different dataset items (rows of
 * a manifest, wherever the shuffle puts them) share a decode pass, within the horizon the clips of one video task
 * share one by (`front.ts`), so with the same memory bound.
 *
 * When an epoch is planned, {@link RowShares.plan} offers each clip to at most one earlier task (in the order
 * the tasks start, `front.ts`) of the same file whose clips all leave the shuffle buffer before it and at most
 * the horizon before it, the one with the window nearest to it: the clip becomes an extra window of that task
 * (`VideoTask.extras`), cut only into a group the task's own clips open (`demuxGroupsSync`'s `optionalFrom`). Once that task is demuxed (or has
 * failed) the offer settles: served by the pass its clip at position p leads, or not. The clip's own task waits
 * for that before it is fetched: a served clip goes on as `{ servedBy }` without its file being opened; one not
 * served is fetched and demuxed as usual. The decode stage keeps the pass's result until the clip's item comes
 * (`ClipDecodeStep`), and decodes the clip on its own when the pass failed it.
 *
 * The wait cannot deadlock: the leader is earlier in that order, so its fetch and demux start before the waiting
 * task's, and it waits, if at all, only for tasks earlier still.
 * @module
 */

import { isFailedClip } from "../clip/clip_failure.ts";
import type { ClipBase, ClipItem, FailedClip, VideoTask } from "../clip/life.ts";

/** Earlier tasks of the same file looked at for each clip (bounds the planning work of a file with many rows). */
const SCAN = 64;

/** Whether (and by whose pass) an offered clip is served. */
interface Offer {
  served: Promise<number | null>;
  settle: (by: number | null) => void;
}

/** The offers of decode once across rows; see the module docs. One per front. */
export class RowShares {
  readonly #horizon: number;
  /** Offers by `epoch/position` of the offered clip, until its task takes it. */
  readonly #offers = new Map<string, Offer>();
  /** Items of a task's clips that another pass serves, until its own items join them. */
  readonly #served = new WeakMap<VideoTask, ClipItem[]>();

  /** @param horizon how far apart (in the epoch's output) two clips of one pass may be */
  constructor(horizon: number) {
    this.#horizon = horizon;
  }

  /**
   * Offers clips of `tasks` (one epoch's, in the order they start, each with `share`) to earlier tasks of the
   * same file; see the module docs.
   */
  plan(tasks: readonly VideoTask[]): void {
    const byFile = new Map<string, VideoTask[]>();
    for (const task of tasks) {
      const file = fileKey(task);
      const earlier = byFile.get(file) ?? [];
      for (const [i, clip] of task.clips.entries()) {
        const at = task.share!.order[i];
        let best: VideoTask | undefined, distance = Infinity;
        for (const lead of earlier.slice(-SCAN)) {
          const own = lead.share!.order.slice(0, lead.clips.length);
          if (Math.max(...own) >= at || at - Math.min(...own) > this.#horizon) continue;
          const d = Math.min(...lead.clips.map((c) => Math.abs(c.start - clip.start)));
          if (d < distance) [best, distance] = [lead, d];
        }
        if (best === undefined) continue;
        (best.extras ??= []).push(clip);
        best.share!.order.push(at);
        let settle!: (by: number | null) => void;
        const served = new Promise<number | null>((r) => settle = r);
        this.#offers.set(key(clip), { served, settle });
      }
      earlier.push(task);
      byFile.set(file, earlier);
    }
  }

  /**
   * `task` without its clips another pass serves (their items wait for its own in {@link fetched} and
   * {@link demuxed}), after waiting for their offers to settle; only those items when it has no clip left.
   */
  async take(task: VideoTask, signal: AbortSignal): Promise<VideoTask | ClipItem[]> {
    const served: ClipItem[] = [], keep: number[] = [];
    for (const [i, clip] of task.clips.entries()) {
      const offer = this.#offers.get(key(clip));
      const by = offer === undefined ? null : await settled(offer.served, signal);
      this.#offers.delete(key(clip));
      if (by === null) keep.push(i);
      else served.push({ meta: clip, spec: task.spec, servedBy: by });
    }
    if (served.length === 0) return task;
    if (keep.length === 0) {
      this.#settle(task, new Map()); // with no clip of its own, it opens no group
      return served;
    }
    const n = task.clips.length;
    if (task.share !== undefined) {
      task.share.order = [...keep.map((i) => task.share!.order[i]), ...task.share.order.slice(n)];
    }
    task.clips = keep.map((i) => task.clips[i]);
    this.#served.set(task, served);
    return task;
  }

  /** After `task`'s fetch: a failure settles its offers (not served) and joins the items waiting for it. */
  fetched(task: VideoTask, r: VideoTask | FailedClip[]): VideoTask | ClipItem[] {
    if (!Array.isArray(r)) return r;
    this.#settle(task, new Map());
    return this.#merge(task, r);
  }

  /** After `task`'s demux (`items`, or null when it threw): settles its offers; its items, in plan order. */
  demuxed(task: VideoTask, items: ClipItem[] | null): ClipItem[] {
    const by = new Map<string, number>();
    for (const x of items ?? []) {
      if (!isFailedClip(x)) { for (const s of x.shared ?? []) by.set(key(s.meta), x.meta.position); }
    }
    this.#settle(task, by);
    return items === null ? [] : this.#merge(task, items);
  }

  #settle(task: VideoTask, by: Map<string, number>): void {
    for (const clip of task.extras ?? []) this.#offers.get(key(clip))?.settle(by.get(key(clip)) ?? null);
  }

  /** The task's served items with its own, in plan order. */
  #merge(task: VideoTask, items: ClipItem[]): ClipItem[] {
    const served = this.#served.get(task);
    if (served === undefined) return items;
    const position = (x: ClipItem) => isFailedClip(x) ? x.failed.position : x.meta.position;
    return [...served, ...items].sort((a, b) => position(a) - position(b));
  }
}

function key(clip: Pick<ClipBase, "epoch" | "position">): string {
  return `${clip.epoch}/${clip.position}`;
}

/** The file a task reads: its path, and its shard member (the node's lanes key their shares by it too). */
export function fileKey(task: VideoTask): string {
  const m = task.member;
  return m === undefined ? task.path : `${task.path}\0${m.name}\0${m.offset}\0${m.size}`;
}

/** `p`'s value, or the signal's abort reason. */
export function settled<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}
