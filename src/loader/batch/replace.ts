/**
 * The replacement step of the loader (`onClipError: "replace"`): a failed clip's position is filled with a
 * substitute, another clip of the same rank's epoch plan, so the batch stays full. The substitute is chosen
 * deterministically from `(seed, epoch, position, attempt)` ({@link substitutePositions}), never from timing, so
 * the same seed gives the same batches in-process and with a backend child; it is loaded through the same
 * fetch → demux → decode steps as any clip (in the loader's process, on its decode Workers), keeps the failed
 * clip's position (so ordered output and batch composition stay the same run to run, and with batch slots it is
 * decoded into the failed clip's place), and gets the seed
 * `clipSeed(seed, epoch, position, attempt)` for its random transforms. Clips of the failed clip's video are
 * tried last (a broken file usually fails every window); after {@link SUBSTITUTE_ATTEMPTS} failed substitutes
 * the position stays empty and its batch is one clip short.
 * @module
 */

import type { TaskPool } from "../../pipeline/pool_lease.ts";
import { decodeClipItem, demuxVideo, fetchVideo } from "../decode/clip_steps.ts";
import { clipBase, type FrontArgs } from "../front/front.ts";
import { type ClipRequest, ClipSampler, clipSeed } from "../../dataset/sampler.ts";
import { hashSeed } from "../../dataset/random.ts";
import type {
  ClipBase,
  ClipFailure,
  ClipPlaces,
  DecodedClip,
  FailedClip,
  PlacedClip,
  VideoTask,
} from "../clip/life.ts";

/** What happens to a clip that cannot be loaded; see docs/loader.md, "Full batches". */
export type OnClipError = "replace" | "skip" | "fail";

/** Substitutes tried for one failed clip before its position is left empty. */
export const SUBSTITUTE_ATTEMPTS = 8;

/** Seed-part tag of the substitute draws (keeps them apart from the sampler's). */
const SUBSTITUTE_DRAW = 0x73756273;

/**
 * Positions of `plan` to try, in order, for the failed clip at `position`: seeded draws of
 * `(seed, epoch, position, k)`, other videos' clips first, each position once, never `position` itself.
 */
export function substitutePositions(
  plan: readonly ClipRequest[],
  position: number,
  seed: number,
  epoch: number,
  count = SUBSTITUTE_ATTEMPTS,
): number[] {
  const n = plan.length, video = plan[position]?.video;
  const others: number[] = [], same: number[] = [], seen = new Set([position]);
  for (let k = 1; k <= 8 * count && others.length < count && seen.size < n; k++) {
    const p = hashSeed(seed, epoch, position, k, SUBSTITUTE_DRAW) % n;
    if (seen.has(p)) continue;
    seen.add(p);
    (plan[p].video === video ? same : others).push(p);
  }
  return [...others, ...same].slice(0, count);
}

/** Fills failed clips' positions; see the module docs. */
export class Replacer {
  readonly #args: FrontArgs;
  readonly #sampler: ClipSampler;
  readonly #pool: TaskPool;
  readonly #slots: ClipPlaces | null;
  #plan: { epoch: number; clips: ClipRequest[] } | undefined;

  /**
   * @param args the front's arguments (the same plan as the clips came from)
   * @param pool Workers running `clip_worker.ts` (demux and decode; the decoder is the one `args.spec` names)
   * @param slots the loader's batch slots: a substitute is decoded into the failed clip's place
   */
  constructor(args: FrontArgs, pool: TaskPool, slots: ClipPlaces | null = null) {
    this.#args = args;
    this.#sampler = ClipSampler.fromResolved(args.ranges, args.sampler);
    this.#pool = pool;
    this.#slots = slots;
  }

  #planOf(epoch: number): ClipRequest[] {
    if (this.#plan?.epoch !== epoch) this.#plan = { epoch, clips: this.#sampler.epoch(epoch) };
    return this.#plan.clips;
  }

  /** Loads substitutes for `failed` until one fills its position (or all attempts fail). */
  async replace(failed: ClipFailure, signal: AbortSignal): Promise<PlacedClip> {
    const { epoch, position } = failed;
    const plan = this.#planOf(epoch);
    const failures = [failed];
    const candidates = substitutePositions(plan, position, this.#args.sampler.seed, epoch);
    for (const [i, p] of candidates.entries()) {
      const attempt = i + 1;
      const meta = clipBase(
        this.#args,
        epoch,
        plan[p],
        position,
        clipSeed(this.#args.sampler.seed, epoch, position, attempt),
      );
      meta.replaces = failed;
      const clip = await this.#load(meta, plan[p], attempt, signal);
      if (!("failed" in clip)) return { clip, failures };
      failures.push(clip.failed);
    }
    return { clip: null, failures };
  }

  /**
   * Loads the planned clip `meta` on its own, as if nothing were shared: for a clip whose shared decode pass
   * failed it (decode once's fallback, `ClipDecodeStep`).
   */
  async load(meta: ClipBase, signal: AbortSignal): Promise<DecodedClip | FailedClip> {
    return await this.#load(meta, this.#planOf(meta.epoch)[meta.position], 0, signal);
  }

  /** Fetches, demuxes and decodes clip `meta` of `planned`'s video (into its batch slot, with slots). */
  async #load(
    meta: ClipBase,
    planned: ClipRequest,
    attempt: number,
    signal: AbortSignal,
  ): Promise<DecodedClip | FailedClip> {
    const task: VideoTask = {
      epoch: meta.epoch,
      video: meta.video,
      path: meta.path,
      member: this.#args.items[planned.video].member,
      clips: [meta],
      spec: this.#args.spec,
    };
    const fetched = await fetchVideo(task, this.#args.fetch, signal, attempt);
    const [packets] = await demuxVideo(this.#pool, fetched, signal, attempt);
    return await decodeClipItem(this.#pool, packets, signal, attempt, this.#slots);
  }
}
