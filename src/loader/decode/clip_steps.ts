/**
 * The three steps that load clips, each turning a failure into a {@link FailedClip} value instead of throwing:
 * fetch a video (URLs into memory; local paths pass through), demux it (one open of the file cuts every clip
 * window, in a `WorkerPool` running `clip_worker.ts`), decode one clip (same pool). The loader's pipeline stages
 * call them, and so does its replacement step for a substitute clip, so a substitute is loaded exactly as a
 * planned clip is.
 *
 * {@link ClipDecodeStep} is the loader's decode stage. It decodes a clip whose pass serves others too (decode
 * once, see `front.ts`) in one task and keeps the others' results until their own items come
 * (`servedBy`); items come in the order of the epoch's output, and a pass is led by the clip of its group that
 * comes first, so a result never waits for a clip that is not on its way, and the front's horizon bounds how
 * many wait. It also chooses each task's FFmpeg threads (`decode_threads.ts`).
 * @module
 */

import type { Executor, PipeFn, TaskContext } from "../../pipeline/executor.ts";
import type { TaskPool } from "../../pipeline/pool_lease.ts";
import { releaseBuffers } from "../../pipeline/transfer.ts";
import { ClipError } from "../../errors.ts";
import { clipFailure, isFailedClip } from "../clip/clip_failure.ts";
import { decodeThreads, type ThreadBudget } from "./decode_threads.ts";
import { type FetchLimits, fetchResolved, isUrl } from "../../dataset/fetch.ts";
import { readMemberResolved } from "../../dataset/shards/reader.ts";
import type { ClipProfile } from "./clip_profile.ts";
import type { BufferPool } from "../../memory/buffer_pool.ts";
import { threadMs } from "../../media/spans.ts";
import type {
  ClipBase,
  ClipItem,
  ClipPackets,
  ClipPlaces,
  DecodedClip,
  FailedClip,
  SharedClip,
  VideoTask,
} from "../clip/life.ts";

/** The loader's stage names of these steps: their tasks' Worker calls and waits count as those stages'. */
const DEMUX = "demux", DECODE = "decode";

/**
 * The executor of the stages that call these steps: it runs their functions on the main thread (they await
 * `pool` themselves, to catch what its Workers throw) and closes `pool` when the pipeline stops its executors,
 * which ends in-flight Worker tasks as a stage running on the pool directly would.
 */
export function callingPool(pool: TaskPool): Executor {
  return {
    size: pool.size,
    run: (fn: PipeFn | string, item: unknown, ctx: TaskContext) => (fn as PipeFn)(item, ctx),
    // a stage's concurrency claims Workers: the pool grows when it is raised (by hand or by "auto")
    reserve: (stage: string, n: number) => pool.reserve(stage, n),
    // time queued for a Worker (or a thread token) is waiting, not the stage's work
    waitMs: (stage: string) => pool.waitMs(stage),
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
  limits: FetchLimits,
  signal: AbortSignal,
  attempt = 0,
): Promise<VideoTask | FailedClip[]> {
  try {
    task.src = task.member
      ? await readMemberResolved(task.path, task.member, limits, signal)
      : isUrl(task.path)
      ? await fetchResolved(task.path, limits, { signal })
      : task.path;
    return task;
  } catch (e) {
    if (signal.aborted) throw e;
    return failAll(task, "fetch", e, attempt);
  }
}

/**
 * Demuxes every clip window of a fetched video in `pool`; on failure, every clip of it failed. With `budget`
 * (the pool's decode tasks share it), the task holds one thread token while it runs.
 */
export async function demuxVideo(
  pool: TaskPool,
  task: VideoTask | ClipItem[],
  signal: AbortSignal,
  attempt = 0,
  budget: ThreadBudget | null = null,
): Promise<ClipItem[]> {
  if (Array.isArray(task)) return task;
  const held = budget === null ? 0 : await pool.waits.during(DEMUX, budget.acquire(1));
  try {
    return await pool.run("demuxClips", task, { signal, stage: DEMUX }) as ClipPackets[];
  } catch (e) {
    if (signal.aborted) throw e;
    return failAll(task, "demux", e, attempt);
  } finally {
    budget?.release(held);
  }
}

/**
 * Decodes one clip in `pool` into the clip its spec promises; on failure, the clip failed. With `slots`, the
 * clip's place in its batch's slot is taken first (waiting for credit) and the Worker writes there.
 */
export async function decodeClipItem(
  pool: TaskPool,
  item: ClipItem,
  signal: AbortSignal,
  attempt = 0,
  slots: ClipPlaces | null = null,
  profile: ClipProfile | null = null,
): Promise<DecodedClip | FailedClip> {
  if (isFailedClip(item)) return item;
  const { meta } = item;
  try {
    if (slots !== null) {
      const dest = await slots.place(meta, signal);
      if (slots.direct) item.dest = dest;
    }
    // The Workers return exactly the clip the spec promises (with its outcome) or its failure record.
    ownAudio(item);
    const [clip] = await profiled(profile, item, 1, () => decodeTask(pool, item, signal));
    if (isFailedClip(clip)) return { failed: { ...clip.failed, attempt } };
    return slots?.direct ? await placed(profile, () => slots.adopt(clip, signal)) : clip;
  } catch (e) {
    if (signal.aborted) throw e;
    return { failed: clipFailure(meta, "decode", e, attempt) };
  }
}

/**
 * Runs a decode task (`run`) for `clips` clips; with `profile`, asks the Worker for its phase times and adds
 * them (taken off the result, so they never reach a batch's metadata).
 */
async function profiled(
  profile: ClipProfile | null,
  item: ClipPackets,
  clips: number,
  run: () => Promise<(DecodedClip | FailedClip)[]>,
): Promise<(DecodedClip | FailedClip)[]> {
  if (profile === null) return await run();
  item.profile = true;
  profile.count(clips);
  const r = await run();
  const timed = r.find((x) => !isFailedClip(x)) as DecodedClip | undefined;
  if (timed !== undefined) {
    profile.add(timed.phases);
    delete timed.phases;
  }
  return r;
}

/** Runs `adopt` (a clip written into its batch slot), timed as the profile's "place". */
async function placed<T>(profile: ClipProfile | null, adopt: () => Promise<T>): Promise<T> {
  if (profile === null) return await adopt();
  // its synchronous part: the copy into the slot, when there is one (the waits are not CPU)
  const t0 = threadMs();
  const p = adopt();
  profile.addMain("place", threadMs() - t0);
  return await p;
}

/**
 * Gives each clip's audio a buffer of its own before the item moves to a Worker: items from the backend child
 * hold views of the frame they came in, which other items share (moving it would detach theirs).
 */
export function ownAudio(item: ClipPackets): void {
  for (const c of [item, ...(item.shared ?? [])]) {
    const s = c.audio?.samples;
    if (s !== undefined && s.byteLength !== s.buffer.byteLength) c.audio!.samples = s.slice();
  }
}

/** How the loader's decode stage decodes (each switch of issue 14's "decode less"). */
export interface ClipDecodeOptions {
  /** Leave undecoded the frames no slot shows (`ClipPackets.skipUnshown`; default true). */
  skipUnshown?: boolean;
  /** Give tasks idle cores as FFmpeg threads (see `decode_threads.ts`); null: one thread each (default). */
  threads?: ThreadBudget | null;
  /** Clips per epoch (what is still to come decides the threads). */
  perEpoch?: number;
  /** Where each clip goes in its batch (the loader's batch slots): each clip is decoded into its place there. */
  slots?: ClipPlaces | null;
  /** Add each task's phase times here (`clip_profile.ts`); null: no spans (default). */
  profile?: ClipProfile | null;
  /**
   * Without slots: clip buffers to decode into again (each clip's size), which the loader gives back once a clip
   * is copied into its batch; a clip decoded on its own takes one when there is one. Null: a new buffer each.
   */
  buffers?: BufferPool | null;
  /**
   * Loads a planned clip on its own (fetch, demux, decode): what a clip another clip's pass was to serve gets
   * when that pass failed it or did not run. Null: it fails with the pass (default).
   */
  reload?: ((meta: ClipBase, signal: AbortSignal) => Promise<DecodedClip | FailedClip>) | null;
}

/** A pass's result for a clip that comes later: settled when the pass ends. */
interface Waiting {
  epoch: number;
  result: Promise<DecodedClip | FailedClip>;
  settle: (r: DecodedClip | FailedClip) => void;
  /** Its item has come and taken the result. */
  taken: boolean;
  /** Where the clip's buffer goes once copied into its place (a node pass's buffers); default: freed. */
  recycle?: (buffer: ArrayBuffer) => void;
}

/** The loader's decode stage; see the module docs. */
export class ClipDecodeStep {
  readonly #pool: TaskPool;
  readonly #skip: boolean;
  readonly #budget: ThreadBudget | null;
  readonly #perEpoch: number;
  readonly #slots: ClipPlaces | null;
  readonly #profile: ClipProfile | null;
  readonly #buffers: BufferPool | null;
  readonly #reload: ClipDecodeOptions["reload"];
  /** Results of passes for clips still to come, by `epoch/position`. */
  readonly #waiting = new Map<string, Waiting>();
  /** Per epoch: clips come to this step so far. */
  readonly #come = new Map<number, number>();

  /**
   * @param pool the clip Worker pool
   * @param opts the decode-less switches
   */
  constructor(pool: TaskPool, opts: ClipDecodeOptions = {}) {
    this.#pool = pool;
    this.#skip = opts.skipUnshown ?? true;
    this.#budget = opts.threads ?? null;
    this.#perEpoch = opts.perEpoch ?? 0;
    this.#slots = opts.slots ?? null;
    this.#profile = opts.profile ?? null;
    this.#buffers = opts.buffers ?? null;
    this.#reload = opts.reload ?? null;
  }

  /** Results waiting for their clip's item (bounded by the front's horizon). */
  get waiting(): number {
    let n = 0;
    for (const w of this.#waiting.values()) if (!w.taken) n++;
    return n;
  }

  /** Decodes one clip item (or takes its result from the pass that served it); on failure, the clip failed. */
  async decode(item: ClipItem, signal: AbortSignal): Promise<DecodedClip | FailedClip> {
    if (isFailedClip(item)) {
      // Every position takes its place in turn, failed or not: batches get their slots in order, and a
      // substitute fills this place.
      if (this.#slots !== null) await this.#slots.place(item.failed, signal);
      return item;
    }
    this.#arrive(item.meta.epoch);
    if (item.phases !== undefined) {
      this.#profile?.add(item.phases); // its demux task's times
      delete item.phases;
    }
    if (item.servedBy !== undefined) return await this.#served(item, item.servedBy, signal);
    return await this.#pass(item, signal);
  }

  /**
   * A clip another clip's pass (at position `servedBy`) decoded: takes that pass's result, in its place; a clip
   * the pass failed or never ran is loaded on its own (`reload`), or fails.
   */
  async #served(item: ClipPackets, servedBy: number, signal: AbortSignal): Promise<DecodedClip | FailedClip> {
    const { meta } = item;
    if (this.#slots !== null) await this.#slots.place(meta, signal);
    const w = this.#waiting.get(key(meta));
    let r: DecodedClip | FailedClip | undefined;
    let recycle: Waiting["recycle"];
    if (w !== undefined) {
      recycle = w.recycle;
      w.taken = true;
      try {
        r = await w.result;
      } finally {
        this.#waiting.delete(key(meta));
      }
    }
    // A failed (or lost) pass does not take the clip with it: it gets a pass of its own.
    if ((r === undefined || isFailedClip(r)) && this.#reload != null) {
      return await this.#reload(meta, signal);
    }
    if (r === undefined) {
      const why = `its decode pass (the clip at position ${servedBy}) did not run`;
      return {
        failed: clipFailure(
          meta,
          "decode",
          new ClipError(meta.path, "decode", [meta.start, meta.end], why),
        ),
      };
    }
    return await this.#adopt(r, signal, recycle);
  }

  /**
   * Runs the decode pass of `item` and of the clips it serves (`shared`, whose results wait for their items):
   * each clip into its place when it has one, else into a buffer of its own (a reused one for a clip alone).
   */
  async #pass(item: ClipPackets, signal: AbortSignal): Promise<DecodedClip | FailedClip> {
    const { meta } = item;
    const slots = this.#slots;
    const shared = item.shared ?? [];
    // Registered before the first await: the clips this pass serves may come while it runs.
    const waits = shared.map((s) => this.#expect(s.meta));
    item.skipUnshown = this.#skip;
    if (slots !== null) await this.#placePass(slots, item, shared, waits, signal);
    const threads = await this.#threads(meta.epoch);
    try {
      if (threads > 1) item.threads = threads;
      if (shared.length === 0) {
        const reuse = slots === null ? this.#buffers?.take() : undefined;
        if (reuse !== undefined) {
          const data = item.spec.dtype === "float32" ? new Float32Array(reuse) : new Uint8Array(reuse);
          item.dest = { data, offset: 0 };
        }
        return await decodeClipItem(this.#pool, item, signal, 0, slots, this.#profile);
      }
      ownAudio(item);
      const [own, ...others] = await profiled(
        this.#profile,
        item,
        1 + shared.length,
        () => decodeTask(this.#pool, item, signal),
      );
      others.forEach((r, k) => waits[k].settle(r));
      return await this.#adopt(own, signal);
    } catch (e) {
      for (const [k, w] of waits.entries()) w.settle({ failed: clipFailure(shared[k].meta, "decode", e) });
      if (signal.aborted) throw e;
      return { failed: clipFailure(meta, "decode", e) };
    } finally {
      this.#budget?.release(threads);
    }
  }

  /**
   * With slots, a pass's places: its own clip's (waiting for its batch's slot; failing the clips it serves when
   * that throws), and those of the clips it serves whose batches have slots now (never waiting: their batches
   * come after this one's); the others are decoded into their own buffers, copied into place when they come.
   */
  async #placePass(
    slots: ClipPlaces,
    item: ClipPackets,
    shared: SharedClip[],
    waits: Waiting[],
    signal: AbortSignal,
  ): Promise<void> {
    try {
      const dest = await slots.place(item.meta, signal);
      if (slots.direct) item.dest = dest;
    } catch (e) {
      for (const [k, w] of waits.entries()) w.settle({ failed: clipFailure(shared[k].meta, "decode", e) });
      throw e;
    }
    if (slots.direct) { for (const s of shared) s.dest = slots.tryPlace(s.meta); }
  }

  /**
   * The result of a pass run elsewhere (the node's pass for clips of several ranks, `lane_share.ts`) for a clip
   * whose item comes later with `servedBy`: it is taken as a pass of this step's would be, its buffer given to
   * `recycle` once copied into its place.
   */
  expectResult(
    meta: ClipBase,
    result: Promise<DecodedClip | FailedClip>,
    recycle?: (buffer: ArrayBuffer) => void,
  ): void {
    const w = this.#expect(meta);
    w.recycle = recycle;
    result.then(w.settle, (e) => w.settle({ failed: clipFailure(meta, "decode", e) }));
  }

  /** `count` clips of `epoch` will never come (a resumed epoch's skipped ones): they are not still ahead. */
  skipped(epoch: number, count: number): void {
    this.#come.set(epoch, (this.#come.get(epoch) ?? 0) + count);
  }

  /** Counts a clip come, and drops results of earlier epochs nobody came for (an epoch stopped early). */
  #arrive(epoch: number): void {
    this.#come.set(epoch, (this.#come.get(epoch) ?? 0) + 1);
    for (const [k, w] of this.#waiting) {
      if (w.epoch >= epoch) continue;
      this.#waiting.delete(k);
      void w.result.then((r) => {
        if (w.taken || isFailedClip(r)) return;
        if (w.recycle !== undefined && r.data.buffer instanceof ArrayBuffer) w.recycle(r.data.buffer);
        else releaseBuffers(r.data);
      });
    }
    for (const e of this.#come.keys()) if (e < epoch) this.#come.delete(e);
  }

  /** A decoded clip in its batch slot's place (with slots writing directly), as is otherwise. */
  async #adopt(
    r: DecodedClip | FailedClip,
    signal: AbortSignal,
    recycle?: (buffer: ArrayBuffer) => void,
  ): Promise<DecodedClip | FailedClip> {
    const slots = this.#slots;
    if (isFailedClip(r) || !slots?.direct) return r;
    return await placed(this.#profile, () => slots.adopt(r, signal, recycle));
  }

  #expect(meta: ClipBase): Waiting {
    let settle!: (r: DecodedClip | FailedClip) => void;
    const result = new Promise<DecodedClip | FailedClip>((r) => settle = r);
    const w: Waiting = { epoch: meta.epoch, result, settle, taken: false };
    this.#waiting.set(key(meta), w);
    return w;
  }

  /** Tokens for a task starting now (1 without a budget). */
  async #threads(epoch: number): Promise<number> {
    const b = this.#budget;
    if (b === null) return 1;
    let served = 0;
    for (const w of this.#waiting.values()) if (w.epoch === epoch && !w.taken) served++;
    const ahead = Math.max(0, this.#perEpoch - (this.#come.get(epoch) ?? 0) - served);
    return await b.acquire(decodeThreads(b.size, b.busy, ahead));
  }
}

function key(meta: ClipBase): string {
  return `${meta.epoch}/${meta.position}`;
}

/**
 * Decodes `item` and the clips its pass serves in `pool` (the clip Worker's one decode export, its decoder named
 * by the item's spec): one result per clip, the item's first.
 */
export async function decodeTask(
  pool: TaskPool,
  item: ClipPackets,
  signal: AbortSignal,
  stage = DECODE,
): Promise<(DecodedClip | FailedClip)[]> {
  return await pool.run("decodeClip", item, { signal, stage }) as (DecodedClip | FailedClip)[];
}
