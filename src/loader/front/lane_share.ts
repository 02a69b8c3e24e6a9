/**
 * Decode once across ranks (node mode, `sluice serve --node`): the loaders of a node's ranks ("lanes": one per
 * rank, each with its own sampler, shard, epoch order, batch slots and credit) run on one pool, and the clips of
 * one file that the sampler dealt to different ranks are opened and demuxed once, and decoded in one
 * pass where their packets overlap, as one rank's clips of a video are (`front.ts`, `row_share.ts`). Each rank's
 * batches stay exactly its own loader's: where a clip lands is its own lane's plan, and no pass changes a pixel.
 *
 * - Each lane registers the plan of the epoch it is producing ({@link LaneShare.plan}): its clips by file, with
 *   their places in its output. Clips some task of the lane offers to another of its own (row shares) are its
 *   own: no other lane claims them.
 * - Claims are made when a lane's demux task starts ({@link LaneShare.claim}), never earlier: a claim then
 *   settles within one demux, whatever the claiming lane's trainer does (a paused rank's pipeline starts no
 *   demux, so it claims nothing and holds no one up). The task claims every clip of its file that another lane
 *   planned in the same epoch and has not taken itself, while that lane has fewer than its horizon (the
 *   `decodeLess.onceMemory` bound) claimed and not yet taken: the memory waiting for a slow lane stays bounded,
 *   and clips beyond it are loaded by their own lane as usual. The claimed windows are cut in the same open.
 * - After the demux ({@link LaneShare.split}): a claimed clip alone in its group goes to its lane as its packets
 *   (that lane decodes it into its own slot: nothing copied); a group holding clips of several lanes is decoded
 *   at once in one pass on the node's pool ({@link LaneShares}), into buffers of the node's own, each result
 *   parked for its lane and copied into that lane's slot when its turn comes (`ClipDecodeStep.expectResult`,
 *   counted in the lane's `copiedBytes`). Such a pass waits for no lane's credit, so no lane waits for another's
 *   trainer. A group of the task's own lane only is left as it is.
 * - A lane's own demux task, when it starts, first takes its clips other lanes claimed ({@link LaneShare.take}),
 *   claims in turn, starts its demux, then waits for those claims to settle (within one demux: they were made
 *   when a demux started) and takes what they became ({@link LaneShare.served}): packets, a parked result, or
 *   nothing (the claim fell through: an aborted demux; its decode step loads the clip itself). A clip nobody
 *   claimed by then is marked its own and is never claimed after. Claims and takes happen at demux starts only,
 *   as late as a lane can decide, so the ranks' prefetching (fetch runs ahead) shares as much as it can.
 * - A failure stays the clip's: a file that cannot be opened fails each claimed clip as its own lane would have
 *   (its replacement is its lane's, from its lane's plan), and a clip a node pass fails is loaded again by its own
 *   lane (`reload`), as a clip of a failed pass is within one loader.
 * - A lane that moves to another epoch or closes drops what was parked for it (freeing the buffers); claims it
 *   made settle as they always do, in its demux's `finally`.
 *
 * NVDEC lanes (no shared pass: the decoder's crop and size are per clip), `ordered: false` and `decodeLess.once:
 * false` (no horizon) share nothing: their lanes only share the pool.
 * @module
 */

import type { TaskPool } from "../../pipeline/pool_lease.ts";
import type { BufferPool } from "../../memory/buffer_pool.ts";
import { clipFailure, isFailedClip } from "../clip/clip_failure.ts";
import { decodeTask, ownAudio } from "../decode/clip_steps.ts";
import { fileKey, settled } from "./row_share.ts";
import type { ThreadBudget } from "../decode/decode_threads.ts";
import type { ClipBase, ClipItem, ClipPackets, DecodedClip, FailedClip, VideoTask } from "../clip/life.ts";

/** What became of a claimed clip, for its own lane. */
type Served =
  /** Its packets (or the reason demux could not cut them), or its failure: it goes on as its own item. */
  | { item: ClipItem }
  /** Decoded in a node pass: its lane takes the result when the clip's turn comes. */
  | { result: Promise<DecodedClip | FailedClip> };

/** A claim on a lane's clip by another lane's demux task. */
export interface Claim {
  served: Promise<Served | null>;
  settle: (s: Served | null) => void;
  settled: boolean;
}

/** One planned clip of a lane's epoch. */
interface Planned {
  meta: ClipBase;
  /** Its index in the lane's epoch output. */
  order: number;
  /** Free to claim, taken by its own lane, or claimed by another lane's task. */
  state: "free" | "own" | Claim;
}

/** A lane's plan of the epoch it produces. */
interface EpochPlan {
  epoch: number;
  byFile: Map<string, Planned[]>;
  byPosition: Map<number, Planned>;
}

/** A clip of a task that another lane's demux claimed ({@link LaneShare.take}). */
export interface Pending {
  meta: ClipBase;
  claim: Claim;
}

/** A demux task that claimed other lanes' clips ({@link LaneShare.claim}). */
export interface ClaimedTask {
  /** The claimed clips, in the order appended to the task (the `k`-th has position `-1 - k` there). */
  readonly claims: { lane: LaneShare; planned: Planned; claim: Claim }[];
}

/** What a lane's loader gives its share: where parked results go (its decode step). */
export interface LaneHooks {
  /** Registers a node pass's result for a clip whose `servedBy` item comes later (`ClipDecodeStep.expectResult`). */
  expect(meta: ClipBase, result: Promise<DecodedClip | FailedClip>, recycle: (b: ArrayBuffer) => void): void;
}

/** The node's counters of clips shared across lanes. */
export interface LaneShareStats {
  /** Lanes attached now. */
  lanes: number;
  /** Clips claimed by another lane's demux task (each saves its own lane an open and a demux). */
  claimed: number;
  /** Claimed clips handed to their lane as packets (decoded by that lane into its own slot). */
  servedPackets: number;
  /** Node passes run (groups of clips of several lanes decoded in one pass). */
  passes: number;
  /** Clips decoded in node passes. */
  passClips: number;
  /** Claimed clips taken by their lanes so far. */
  taken: number;
  /** Claimed and not yet taken, now (bounded per lane by its horizon). */
  outstanding: number;
}

/** Options of {@link LaneShares}. */
export interface LaneSharesOptions {
  /** The node's pool (node passes run there as stage `node`). */
  pool: TaskPool;
  /** Thread tokens of the pool's decode tasks (a node pass holds one while it runs). */
  budget?: ThreadBudget | null;
  /** Buffers of one clip's pixels, reused for node passes' results. */
  buffers: BufferPool;
  /** Aborted when the node closes: node passes still queued leave the pool. */
  signal: AbortSignal;
  /** Leave undecoded the frames no slot shows (the loaders' `decodeLess.skip`). */
  skipUnshown: boolean;
}

/** Every lane of a node and the passes run for several of them; see the module docs. One per node. */
export class LaneShares {
  readonly #lanes = new Set<LaneShare>();
  readonly #opts: LaneSharesOptions;
  readonly #counts = { claimed: 0, servedPackets: 0, passes: 0, passClips: 0, taken: 0 };

  constructor(opts: LaneSharesOptions) {
    this.#opts = opts;
  }

  /**
   * A new lane's share: `horizon` (clips; 0 shares nothing) bounds what may wait for it; `hooks` come from its
   * loader ({@link LaneShare.connect}).
   */
  lane(horizon: number): LaneShare {
    const lane = new LaneShare(this, horizon, this.#counts);
    this.#lanes.add(lane);
    return lane;
  }

  /** Current counters. */
  stats(): LaneShareStats {
    let outstanding = 0;
    for (const l of this.#lanes) outstanding += l.outstanding;
    return { lanes: this.#lanes.size, ...this.#counts, outstanding };
  }

  /** The lanes other than `lane` producing `epoch`. */
  others(lane: LaneShare, epoch: number): LaneShare[] {
    return [...this.#lanes].filter((l) => l !== lane && l.epoch === epoch);
  }

  /** @internal `lane` closed. */
  detach(lane: LaneShare): void {
    this.#lanes.delete(lane);
  }

  /**
   * Decodes `item` and the clips it serves in one pass now, into the node's buffers: one result per clip, the
   * leader's first; a pass that cannot run fails each of its clips.
   */
  pass(item: ClipPackets): Promise<(DecodedClip | FailedClip)[]> {
    const { pool, budget, buffers, signal } = this.#opts;
    const metas = [item.meta, ...(item.shared ?? []).map((s) => s.meta)];
    this.#counts.passes++;
    this.#counts.passClips += metas.length;
    const dest = () => {
      const b = buffers.take() ?? new ArrayBuffer(buffers.bytes);
      return { data: item.spec.dtype === "float32" ? new Float32Array(b) : new Uint8Array(b), offset: 0 };
    };
    item.dest = dest();
    for (const s of item.shared ?? []) s.dest = dest();
    item.skipUnshown = this.#opts.skipUnshown;
    ownAudio(item);
    return (async () => {
      const held = budget == null ? 0 : await budget.acquire(1);
      try {
        return await decodeTask(pool, item, signal, "node");
      } catch (e) {
        return metas.map((m) => ({ failed: clipFailure(m, "decode", e) }));
      } finally {
        budget?.release(held);
      }
    })();
  }

  /** Gives a node pass's buffer back for the next pass. */
  recycle = (buffer: ArrayBuffer): void => this.#opts.buffers.give(buffer);
}

/** One lane's side of the node's shares; see the module docs. */
export class LaneShare {
  readonly #node: LaneShares;
  readonly #horizon: number;
  readonly #counts: Omit<LaneShareStats, "lanes" | "outstanding">;
  #hooks: LaneHooks | null = null;
  #plan: EpochPlan | null = null;
  #outstanding = 0;
  #closed = false;

  /** Use {@link LaneShares.lane}. */
  constructor(node: LaneShares, horizon: number, counts: Omit<LaneShareStats, "lanes" | "outstanding">) {
    this.#node = node;
    this.#horizon = horizon;
    this.#counts = counts;
  }

  /** The epoch this lane produces now (null before its first, or when it shares nothing). */
  get epoch(): number | null {
    return this.#plan?.epoch ?? null;
  }

  /** Its clips claimed by other lanes and not taken yet. */
  get outstanding(): number {
    return this.#outstanding;
  }

  /** Connects the lane's loader: where parked results go. */
  connect(hooks: LaneHooks): void {
    this.#hooks = hooks;
  }

  /**
   * The lane starts producing `epoch`: `tasks` (in the order they start, row shares planned) and `order` (each
   * plan position's output index). What was parked for an earlier epoch is dropped.
   */
  plan(epoch: number, tasks: readonly VideoTask[], order: Int32Array): void {
    this.#dropPlan();
    if (this.#horizon <= 0 || this.#closed) return;
    const byFile = new Map<string, Planned[]>(), byPosition = new Map<number, Planned>();
    for (const task of tasks) {
      const file = fileKey(task);
      for (const meta of task.clips) {
        const p: Planned = { meta, order: order[meta.position], state: "free" };
        byPosition.set(meta.position, p);
        byFile.set(file, [...byFile.get(file) ?? [], p]);
      }
    }
    // Clips offered to a task of this lane (row shares) are served there: not another lane's to claim.
    for (const task of tasks) {
      for (const e of task.extras ?? []) {
        const p = byPosition.get(e.position);
        if (p !== undefined) p.state = "own";
      }
    }
    this.#plan = { epoch, byFile, byPosition };
  }

  /**
   * At the start of `task`'s demux, before {@link claim}: its clips claimed by other lanes are taken out of it
   * (to be waited for with {@link served}); every other clip is marked its own, never to be claimed after.
   */
  take(task: VideoTask): Pending[] {
    const plan = this.#plan;
    if (plan === null || plan.epoch !== task.epoch) return [];
    const pending: Pending[] = [], keep: number[] = [];
    for (const [i, clip] of task.clips.entries()) {
      const p = plan.byPosition.get(clip.position);
      if (p === undefined || p.state === "free" || p.state === "own") {
        if (p !== undefined) p.state = "own";
        keep.push(i);
      } else {
        pending.push({ meta: clip, claim: p.state });
        p.state = "own";
        this.#outstanding--;
        this.#counts.taken++;
      }
    }
    if (pending.length === 0) return pending;
    const n = task.clips.length;
    if (task.share !== undefined) {
      task.share.order = [...keep.map((i) => task.share!.order[i]), ...task.share.order.slice(n)];
    }
    task.clips = keep.map((i) => task.clips[i]);
    return pending;
  }

  /**
   * The items of the clips {@link take} found claimed, once their claims settled (within the claiming lane's
   * demux): packets or failures to go on as they are, or `servedBy` items whose results this lane's decode step
   * expects; a claim that fell through (its demux was cut short) gives a `servedBy` item with nothing expected,
   * which the decode step loads on its own.
   */
  async served(spec: VideoTask["spec"], pending: Pending[], signal: AbortSignal): Promise<ClipItem[]> {
    const out: ClipItem[] = [];
    for (const { meta, claim } of pending) {
      const s = await settled(claim.served, signal);
      if (s !== null && "item" in s) out.push(s.item);
      else {
        if (s !== null) this.#hooks?.expect(meta, s.result, this.#node.recycle);
        out.push({ meta, spec, servedBy: -1 });
      }
    }
    return out;
  }

  /**
   * At the start of `task`'s demux: claims the clips of its file that other lanes planned in its epoch and have
   * not taken (see the module docs) and appends them to `task.clips` (with positions `-1 - k`, so they meet none
   * of this lane's own), their output places to `task.share.order`. Null when it claimed none. Every claim is
   * settled by {@link split}, or by {@link release} when the demux did not finish.
   */
  claim(task: VideoTask): ClaimedTask | null {
    if (task.share === undefined || this.#plan?.epoch !== task.epoch || this.#closed) return null;
    const file = fileKey(task);
    const claims: ClaimedTask["claims"] = [];
    for (const lane of this.#node.others(this, task.epoch)) {
      for (const planned of lane.#plan?.byFile.get(file) ?? []) {
        if (planned.state !== "free" || lane.#outstanding >= lane.#horizon) continue;
        let settle!: (s: Served | null) => void;
        const served = new Promise<Served | null>((r) => settle = r);
        const claim: Claim = { served, settle: (s) => (claim.settled = true, settle(s)), settled: false };
        planned.state = claim;
        lane.#outstanding++;
        claims.push({ lane, planned, claim });
      }
    }
    if (claims.length === 0) return null;
    this.#counts.claimed += claims.length;
    const own = task.clips.length;
    task.clips = [...task.clips, ...claims.map((c, k) => ({ ...c.planned.meta, position: -1 - k }))];
    const order = task.share.order;
    task.share.order = [...order.slice(0, own), ...claims.map((c) => c.planned.order), ...order.slice(own)];
    return { claims };
  }

  /**
   * After the demux of a task that {@link claim}ed: hands each claimed clip to its lane (its packets, or the
   * result of the node pass its group gets) and returns this lane's items (a group of several lanes' clips is
   * decoded in a node pass: this lane's clips of it come as `servedBy` items, their results expected by its
   * decode step).
   */
  split(claimed: ClaimedTask, items: ClipItem[]): ClipItem[] {
    const { claims } = claimed;
    const claimOf = (position: number) => position < 0 ? claims[-1 - position] : undefined;
    const out: ClipItem[] = [];
    for (const x of items) {
      if (isFailedClip(x)) {
        const c = claimOf(x.failed.position);
        if (c === undefined) out.push(x);
        else c.claim.settle({ item: { failed: { ...x.failed, position: c.planned.meta.position } } });
        continue;
      }
      const shared = x.shared ?? [];
      if (x.servedBy !== undefined) {
        if (claimOf(x.meta.position) === undefined) out.push(x); // a claimed one settles with its leader
        continue;
      }
      const metas = [x.meta, ...shared.map((s) => s.meta)];
      if (!metas.some((m) => m.position < 0)) {
        out.push(x);
        continue;
      }
      if (shared.length === 0) {
        // A claimed clip alone in its group (or one demux could not serve): its lane decodes it, into its slot.
        const c = claimOf(x.meta.position)!;
        x.meta = { ...x.meta, position: c.planned.meta.position };
        this.#counts.servedPackets++;
        c.claim.settle({ item: x });
        continue;
      }
      // Clips of several lanes in one group: decoded now, each result parked for its lane.
      const results = this.#node.pass(x);
      for (const [k, m] of metas.entries()) {
        const c = claimOf(m.position);
        if (c !== undefined) {
          const position = c.planned.meta.position;
          c.claim.settle({ result: results.then((r) => withPosition(r[k], position)) });
        } else {
          this.#hooks?.expect(m, results.then((r) => r[k]), this.#node.recycle);
        }
      }
      if (x.meta.position >= 0) out.push({ meta: x.meta, spec: x.spec, servedBy: -1 });
    }
    this.release(claimed);
    return out;
  }

  /** Settles the claims of `claimed` still open as not served (their lanes load those clips themselves). */
  release(claimed: ClaimedTask): void {
    for (const c of claimed.claims) if (!c.claim.settled) c.claim.settle(null);
  }

  /** Stops sharing: what was parked for this lane is dropped, and no lane claims its clips any more. */
  close(): void {
    this.#closed = true;
    this.#dropPlan();
    this.#node.detach(this);
  }

  /** Drops the current plan: clips claimed and not taken are let go (a parked result's buffer is freed). */
  #dropPlan(): void {
    const plan = this.#plan;
    this.#plan = null;
    if (plan === null) return;
    for (const p of plan.byPosition.values()) {
      if (p.state === "free" || p.state === "own") continue;
      this.#outstanding--;
      void p.state.served.then((s) => {
        if (s !== null && "result" in s) {
          void s.result.then((r) => {
            if (!isFailedClip(r) && r.data.buffer instanceof ArrayBuffer) this.#node.recycle(r.data.buffer);
          });
        }
      });
    }
  }
}

/** A node pass's result for a claimed clip, with its own lane's position back. */
function withPosition(r: DecodedClip | FailedClip, position: number): DecodedClip | FailedClip {
  if (isFailedClip(r)) return { failed: { ...r.failed, position } };
  r.meta = { ...r.meta, position };
  return r;
}

/** Orders clip items by their plan position. */
export function byPosition(a: ClipItem, b: ClipItem): number {
  const p = (x: ClipItem) => isFailedClip(x) ? x.failed.position : x.meta.position;
  return p(a) - p(b);
}
