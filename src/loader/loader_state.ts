/**
 * Resuming a loader mid-epoch, exactly. An epoch's plan is a pure function of the seed, the epoch and the dataset
 * (`ClipSampler`), and so is each clip's place in the epoch's output (`epochOrder`): batch `k` holds output
 * indices `[kB, (k + 1)B)`. So a loader's place is two numbers, the epoch and the batches of it the consumer had,
 * and a loader built with the same options can continue from them: the front half skips the clips whose output
 * index is below the resume point (no fetch, no demux, no decode; `front.ts`) and every later batch is the one
 * the uninterrupted run makes, substitutes for failed clips included (they are drawn from the whole plan,
 * seeded by position: `replace.ts`).
 *
 * {@link LoaderState} is that place, plus what makes it mean the same batches: the sampler's seed, rank and world
 * size, a fingerprint of the dataset's indexed videos ({@link datasetFingerprint}) and the options that shape
 * batches. It is plain JSON; {@link checkLoaderState} refuses a state made under anything else, naming the
 * difference.
 * @module
 */

import { createHash } from "node:crypto";
import { InvalidArgumentError } from "../errors.ts";
import type { ClipSampler, ResolvedSamplerOptions } from "../dataset/sampler.ts";
import { epochOrder } from "../dataset/epoch_order.ts";
import { datasetRelative } from "../dataset/dataset.ts";
import type { ClipSpec } from "./clip/clip_spec.ts";
import type { BatchLayout } from "./batch/collate.ts";
import type { FrontArgs } from "./front/front.ts";
import type { OnClipError } from "./batch/replace.ts";

/** Version of the {@link LoaderState} format. */
export const LOADER_STATE_VERSION = 1;

/**
 * The options that decide which clips make which batch, and their pixels: a state is only valid for a loader
 * with the same ones. (The sampler's `seed`, `rank` and `worldSize` are in {@link LoaderState} itself.)
 */
export interface BatchingOptions {
  /** Clips per batch. */
  batchSize: number;
  /** Whether a last short batch is dropped. */
  dropLast: boolean;
  /** The batches' layout. */
  layout: BatchLayout;
  /** What a failed clip becomes. */
  onClipError: OnClipError;
  /** The sampler's other options, resolved (`clipDurationSec` `null`: the whole video). */
  sampler: Omit<ResolvedSamplerOptions, "seed" | "rank" | "worldSize" | "clipDurationSec"> & {
    clipDurationSec: number | null;
  };
  /** What each clip becomes (frame choice, size, transforms, dtype); not the device it is decoded on. */
  clip: Omit<ClipSpec, "planar" | "device">;
}

/**
 * A loader's place in its epochs (`loader.stateDict()`), plain JSON: save it with a checkpoint, and give it to
 * `loader.loadStateDict(state)` (or the `resume` option) of a loader built with the same options to continue
 * with the next batch.
 */
export interface LoaderState {
  /** Format version ({@link LOADER_STATE_VERSION}). */
  version: number;
  /** The epoch the consumer is in (the next one once an epoch ran to its end). */
  epoch: number;
  /**
   * Batches of that epoch's plan the consumer had: the first batch to deliver on resuming. Counted in the plan's
   * batches (with `onClipError: "skip"`, a batch whose every clip failed is never made, yet counts here).
   */
  batches: number;
  /** The sampler's seed. */
  seed: number;
  /** This loader's rank... */
  rank: number;
  /** ...of this many (each rank saves and loads its own state). */
  worldSize: number;
  /** The videos the plan is made over (the indexed ones): how many, and {@link datasetFingerprint}. */
  dataset: { videos: number; fingerprint: string };
  /** The options that shape batches. */
  batching: BatchingOptions;
}

/** Where a loader resumes: in `epoch`, the clips of output index below `from` are skipped. */
export interface ResumePoint {
  /** The epoch. */
  epoch: number;
  /** Its first batch to deliver. */
  batch: number;
  /** Its first output index to load (`batch × batchSize`, at most the epoch's clips). */
  from: number;
}

/**
 * SHA-256 (hex) of what the plan is made over: each indexed video's path (relative to the dataset's root, or
 * its manifest's directory, so a dataset moved elsewhere keeps it), member, label, manifest columns and dataset index, and its indexed range and
 * keyframes. Not mtimes or sizes: the same files indexed the same way give the same fingerprint in every run
 * and process.
 */
export function datasetFingerprint(front: FrontArgs, root: string): string {
  const hash = createHash("sha256");
  front.items.forEach((item, i) => {
    const r = front.ranges[i];
    hash.update(JSON.stringify([
      datasetRelative(item.path, root),
      item.member ?? null,
      item.label,
      item.fields ?? null,
      front.datasetIndex[i],
      r.start,
      r.end,
      r.keyframes ?? null,
    ]));
    hash.update("\n");
  });
  return hash.digest("hex");
}

/** What a state must match: everything of {@link LoaderState} but the place. */
export type StateIdentity = Omit<LoaderState, "version" | "epoch" | "batches">;

/** The identity of a loader's states, JSON-normalised (as a state read back from a file is). */
export function stateIdentity(
  front: FrontArgs,
  root: string,
  batching: { batchSize: number; dropLast: boolean; layout: BatchLayout; onClipError: OnClipError },
): StateIdentity {
  const { seed, rank, worldSize, clipDurationSec, ...sampler } = front.sampler;
  // The CUDA device decodes the same batches wherever it is (LOCAL_RANK, or a CPU loader's unused default), and
  // either decoder puts the same clips in the same batches: a state resumes with the other.
  const { planar: _, device: _device, decoder: _decoder, ...clip } = front.spec;
  return JSON.parse(JSON.stringify({
    seed,
    rank,
    worldSize,
    dataset: { videos: front.items.length, fingerprint: datasetFingerprint(front, root) },
    batching: {
      ...batching,
      sampler: { ...sampler, clipDurationSec: Number.isFinite(clipDurationSec) ? clipDurationSec : null },
      clip,
    },
  }));
}

/**
 * Checks `state` against the loader's `identity` and returns where to resume; throws `InvalidArgumentError`
 * naming the difference for a state of another dataset, seed, rank or batch-shaping option, and for one that is
 * not a loader state or lies beyond the epoch's `batchesPerEpoch`.
 */
export function checkLoaderState(
  state: unknown,
  identity: StateIdentity,
  epochClips: number,
  batchesPerEpoch: number,
): ResumePoint {
  const s = state as Partial<LoaderState>;
  const int = (v: unknown) => Number.isSafeInteger(v) && (v as number) >= 0;
  if (typeof s !== "object" || s === null || !int(s.epoch) || !int(s.batches) || !("batching" in s)) {
    throw new InvalidArgumentError(
      `loader: not a loader state (expected what loader.stateDict() returns: { version, epoch, batches, ... })`,
    );
  }
  if (s.version !== LOADER_STATE_VERSION) {
    throw new InvalidArgumentError(
      `loader: a loader state of version ${s.version}; this sluice reads version ${LOADER_STATE_VERSION}`,
    );
  }
  const mine = identity.dataset, theirs = s.dataset;
  if (theirs?.fingerprint !== mine.fingerprint) {
    throw new InvalidArgumentError(
      `loader: the state was saved for another dataset (${theirs?.videos} indexed videos, fingerprint ` +
        `${String(theirs?.fingerprint).slice(0, 12)}…); this loader's has ${mine.videos} (fingerprint ` +
        `${mine.fingerprint.slice(0, 12)}…): the same files, labels and indexed ranges are needed`,
    );
  }
  if (s.rank !== identity.rank || s.worldSize !== identity.worldSize) {
    throw new InvalidArgumentError(
      `loader: the state is rank ${s.rank} of ${s.worldSize}'s; this loader is rank ${identity.rank} of ` +
        `${identity.worldSize} (each rank loads its own state)`,
    );
  }
  const { device: _device, ...clip } = (s.batching?.clip ?? {}) as Partial<ClipSpec>; // a state saved with it
  const diffs = differences({ seed: s.seed, batching: { ...s.batching, clip } }, {
    seed: identity.seed,
    batching: identity.batching,
  });
  if (diffs.length > 0) {
    throw new InvalidArgumentError(
      `loader: the state was saved with other batch-shaping options: ${diffs.slice(0, 3).join("; ")}` +
        (diffs.length > 3 ? ` (and ${diffs.length - 3} more)` : ""),
    );
  }
  const epoch = s.epoch!, batch = s.batches!;
  if (batch > batchesPerEpoch) {
    throw new InvalidArgumentError(
      `loader: the state says ${batch} batches of epoch ${epoch} were delivered; an epoch has ${batchesPerEpoch}`,
    );
  }
  return { epoch, batch, from: Math.min(batch * identity.batching.batchSize, epochClips) };
}

/** `path: the state's X, this loader's Y` for each leaf where `state` and `mine` differ. */
function differences(state: unknown, mine: unknown, path = ""): string[] {
  if (isObject(state) && isObject(mine)) {
    const keys = new Set([...Object.keys(state), ...Object.keys(mine)]);
    return [...keys].flatMap((k) => differences(state[k], mine[k], path === "" ? k : `${path}.${k}`));
  }
  const [a, b] = [JSON.stringify(state), JSON.stringify(mine)];
  return a === b ? [] : [`${path}: the state's ${a ?? "none"}, this loader's ${b ?? "none"}`];
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * A loader's side of its state: the consumer's place (the epoch, and the plan batches of it delivered, kept from
 * the batches handed out: a batch's plan index is its clips' output index `÷ batchSize`, so batches never made
 * still count), the resume point once a state is loaded, and the front's arguments it sets for it.
 */
export class LoaderStates {
  readonly #args: FrontArgs;
  readonly #identity: StateIdentity;
  readonly #sampler: ClipSampler;
  readonly #batchSize: number;
  /** Batches per epoch (fewer when `onClipError` is "skip" and every clip of a batch failed). */
  readonly batchesPerEpoch: number;
  #order: { epoch: number; order: Int32Array } | undefined;
  #resume: ResumePoint | null = null;
  #started = false;
  /** The epoch the consumer is in and its plan batches delivered. */
  #place: { epoch: number; batches: number };

  /**
   * @param args the front's arguments (a resume sets `firstEpoch` and `resume` there)
   * @param identity what the loader's states hold for
   * @param sampler the loader's sampler
   */
  constructor(args: FrontArgs, identity: StateIdentity, sampler: ClipSampler) {
    this.#args = args;
    this.#identity = identity;
    this.#sampler = sampler;
    const { batchSize, dropLast } = identity.batching;
    this.#batchSize = batchSize;
    this.batchesPerEpoch = Math[dropLast ? "floor" : "ceil"](sampler.length / batchSize);
    this.#place = { epoch: args.firstEpoch, batches: 0 };
  }

  /**
   * Checks `state` (see {@link checkLoaderState}; resuming needs ordered output, and comes before the first
   * epoch starts) and resumes from it: the front's first epoch is the state's (`firstEpoch`, when given, must
   * be it), its clips before the resume point skipped. Returns the resume point.
   */
  load(state: LoaderState, firstEpoch?: number): ResumePoint {
    if (this.#started) {
      throw new InvalidArgumentError(
        "loader: loadStateDict() must come before the first epoch starts (build a new loader to resume)",
      );
    }
    if (this.#args.ordered === false) {
      throw new InvalidArgumentError(
        "loader: resuming needs ordered output (with ordered: false the batches differ run to run)",
      );
    }
    const point = checkLoaderState(state, this.#identity, this.#sampler.length, this.batchesPerEpoch);
    if (firstEpoch !== undefined && firstEpoch !== point.epoch) {
      throw new InvalidArgumentError(
        `loader: firstEpoch is ${firstEpoch} but the resume state is in epoch ${point.epoch}`,
      );
    }
    this.#args.firstEpoch = point.epoch;
    this.#args.resume = { epoch: point.epoch, from: point.from };
    this.#resume = point;
    this.#place = { epoch: point.epoch, batches: point.batch };
    return point;
  }

  /** The consumer starts `epoch`; its resume point if it is the resumed epoch. */
  begin(epoch: number): ResumePoint | null {
    this.#started = true;
    const point = this.#resume?.epoch === epoch ? this.#resume : null;
    this.#place = { epoch, batches: point?.batch ?? 0 };
    return point;
  }

  /** The consumer's state now, or just after the batch of `clips` (one batch's clips). */
  state(clips?: readonly { epoch: number; position: number }[]): LoaderState {
    const { epoch, batches } = clips === undefined || clips.length === 0 ? this.#place : this.#after(clips);
    return { version: LOADER_STATE_VERSION, epoch, batches, ...structuredClone(this.#identity) };
  }

  /** The consumer took the batch of `clips`. */
  delivered(clips: readonly { epoch: number; position: number }[]): void {
    if (clips.length > 0) this.#place = this.#after(clips);
  }

  /**
   * The batch of `clips` never reached the consumer (a relay's client discarded it): in the consumer's epoch,
   * the place goes back to it. (One of an epoch the consumer left is moot.)
   */
  undelivered(clips: readonly { epoch: number; position: number }[]): void {
    if (clips.length === 0 || clips[0].epoch !== this.#place.epoch) return;
    this.#place = {
      epoch: this.#place.epoch,
      batches: Math.min(this.#place.batches, this.#batchOf(clips[0])),
    };
  }

  /** `epoch` ran to its end: the consumer is at the start of the next one. */
  completed(epoch: number): void {
    this.#place = { epoch: epoch + 1, batches: 0 };
  }

  #after(clips: readonly { epoch: number; position: number }[]): { epoch: number; batches: number } {
    return { epoch: clips[0].epoch, batches: this.#batchOf(clips[0]) + 1 };
  }

  /** The plan batch of a clip (a substitute keeps the failed clip's position, hence its batch). */
  #batchOf(clip: { epoch: number; position: number }): number {
    if (this.#order?.epoch !== clip.epoch) {
      this.#order = { epoch: clip.epoch, order: epochOrder(this.#sampler, clip.epoch) };
    }
    return Math.floor(this.#order.order[clip.position] / this.#batchSize);
  }
}
