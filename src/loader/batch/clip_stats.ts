/**
 * The loader's accounting in clips, the one unit a training run cares about. Every position of a rank's epoch
 * plan ends in exactly one of four states: delivered (its own clip is in a batch), failed (its clip could not
 * be loaded; the cause is listed), dropped (its batch was a short last one and `dropLast` is set), or skipped
 * (a loader resumed mid-epoch leaves out the clips of the batches delivered before: `loader_state.ts`). So, once
 * an epoch has run to its end, `planned = delivered + failed + dropped + skipped`. Of the failed positions, `replaced`
 * ones were filled with a substitute clip (`onClipError: "replace"`), which is why batches stay full:
 * clips in batches = `delivered + replaced`. Padded frames (frame positions beyond the end of the stream) and held frames
 * (slots repeating a frame still on screen, see `ClipOutcome.held`) are counted too.
 *
 * The loader counts failures and dropped positions as it closes each batch, in batch order
 * ({@link ClipAccounting.collated}), and delivered clips as it hands each batch to the consumer
 * ({@link ClipAccounting.delivered}): a batch still buffered when an epoch is stopped early is not delivered,
 * and its clips stay `pending`. The counts are kept per epoch and in total.
 *
 * The decode work behind the clips of batches is counted too: frames decoded, frames left undecoded because no
 * slot showed them (`skippedFrames`), frames emitted (the clips' frames, padding and held repeats excluded), and
 * `decodeAmplification` = decoded / emitted: how many frames were decoded for each frame delivered. Clips served
 * by one decode pass share its frames (see `ClipOutcome.decodedFrames`); `sharedClips` counts them.
 * @module
 */

import { InvalidArgumentError, PipelineFailure, withProblem } from "../../errors.ts";
import type { MaxFailures } from "../../pipeline/stage.ts";
import { formatClipFailure } from "../clip/clip_failure.ts";
import type { ClipFailure, ClipMeta, PlacedClip } from "../clip/life.ts";

/** Clip counts; see the module docs for how they add up. */
export interface ClipCounts {
  /** Positions in the plan. */
  planned: number;
  /** Positions whose own clip is in a batch handed to the consumer. */
  delivered: number;
  /** Positions whose clip failed (replaced or not). */
  failed: number;
  /** Failed positions filled with a substitute clip that was handed to the consumer. */
  replaced: number;
  /** Positions left out with a short last batch (`dropLast`). */
  dropped: number;
  /** Positions before the resume point of a resumed epoch (delivered before the loader's state was saved). */
  skipped: number;
  /** Planned positions not accounted for yet: in flight, or not reached when an epoch was stopped early. */
  pending: number;
  /** Substitutes that failed too (listed in `failures` with their attempt number). */
  substitutesFailed: number;
  /** Frames padded (repeats of a clip's last frame beyond the end of the stream) in the clips of batches. */
  paddedFrames: number;
  /** Clips of batches with any padded frame. */
  paddedClips: number;
  /** Held frames (repeats of a clip's last frame while it is still on screen) in the clips of batches. */
  heldFrames: number;
  /** Clips of batches with any held frame. */
  heldClips: number;
  /** Failed positions per stage (`fetch`, `demux`, `decode`, …). */
  failedByStage: Record<string, number>;
  /** With the `audio` option: clips of batches whose audio is zeros because their video has no audio track. */
  audioMissing: number;
  /** ...partly zeros because the track does not reach the whole window. */
  audioShort: number;
  /** ...zeros because the track could not be decoded there. */
  audioError: number;
  /** Frames decoded for the clips of batches (substitutes included). */
  decodedFrames: number;
  /** Frames left undecoded for them because no slot showed them. */
  skippedFrames: number;
  /** Frames of theirs that came from the decoder (padded and held repeats excluded). */
  emittedFrames: number;
  /** Clips of batches served by a decode pass that served other clips too. */
  sharedClips: number;
  /** `decodedFrames / emittedFrames` (0 before any frame is emitted). */
  decodeAmplification: number;
}

/** The counts of one epoch, with its failures. */
export interface ClipEpochStats extends ClipCounts {
  /** The plan's epoch (0-based). */
  epoch: number;
  /** True once the epoch ran to its end (then `pending` is 0). */
  complete: boolean;
  /** Failures of planned clips and substitutes, in batch order: the first {@link LISTED_FAILURES}. */
  failures: ClipFailure[];
  /** Failures beyond those listed. */
  unlisted: number;
}

/** `loader.stats().clips`: cumulative counts and one entry per recent epoch. */
export interface ClipStats {
  /** Sums over every epoch started. */
  total: ClipCounts;
  /**
   * One entry per epoch started, in order: the last {@link KEPT_EPOCHS} (older complete epochs count in
   * `total` only, so a loader running for thousands of epochs holds bounded stats).
   */
  epochs: ClipEpochStats[];
  /** Complete epochs folded into `total` and no longer listed in `epochs`. */
  foldedEpochs: number;
}

/** Epochs listed in {@link ClipStats.epochs}; older complete ones are folded into the total. */
export const KEPT_EPOCHS = 64;

/** Failures listed per epoch (the rest are counted). */
export const LISTED_FAILURES = 100;
/** Failure lines logged per run (the rest are counted). */
const LOGGED_FAILURES = 10;

function zero(planned: number): ClipCounts {
  return {
    planned,
    delivered: 0,
    failed: 0,
    replaced: 0,
    dropped: 0,
    skipped: 0,
    pending: planned,
    substitutesFailed: 0,
    paddedFrames: 0,
    paddedClips: 0,
    heldFrames: 0,
    heldClips: 0,
    failedByStage: {},
    audioMissing: 0,
    audioShort: 0,
    audioError: 0,
    decodedFrames: 0,
    skippedFrames: 0,
    emittedFrames: 0,
    sharedClips: 0,
    decodeAmplification: 0,
  };
}

/** Frames decoded per frame emitted (0 before any is emitted). */
function amplification(c: ClipCounts): number {
  return c.emittedFrames > 0 ? c.decodedFrames / c.emittedFrames : 0;
}

/** Counts clips per epoch; see the module docs. */
export class ClipAccounting {
  readonly #planned: number;
  readonly #maxFailures: MaxFailures;
  readonly #log: (line: string) => void;
  readonly #epochs = new Map<number, ClipEpochStats>();
  /** The counts of complete epochs no longer listed, and how many. */
  readonly #folded = zero(0);
  #foldedEpochs = 0;
  /** Positions collated per epoch (the failure budget's denominator: delivery lags behind by the buffers). */
  readonly #seen = new Map<number, number>();
  #logged = 0;

  /**
   * @param planned positions per epoch (the sampler's length)
   * @param maxFailures failed positions an epoch tolerates (see `LoaderOptions.maxFailures`)
   * @param log where failure lines go (the first few of the run)
   */
  constructor(planned: number, maxFailures: MaxFailures, log: (line: string) => void) {
    this.#planned = planned;
    this.#maxFailures = maxFailures;
    this.#log = log;
  }

  /** The entry of `epoch`, created on first use. */
  #epoch(epoch: number): ClipEpochStats {
    let e = this.#epochs.get(epoch);
    if (e === undefined) {
      e = { epoch, complete: false, ...zero(this.#planned), failures: [], unlisted: 0 };
      this.#epochs.set(epoch, e);
      this.#fold();
    }
    return e;
  }

  /** Folds the oldest complete epochs into the total while more than {@link KEPT_EPOCHS} are listed. */
  #fold(): void {
    for (const [n, e] of this.#epochs) {
      if (this.#epochs.size <= KEPT_EPOCHS) return;
      if (!e.complete) continue;
      addCounts(this.#folded, e);
      this.#foldedEpochs++;
      this.#epochs.delete(n);
      this.#seen.delete(n);
    }
  }

  /** Starts counting `epoch` (so an epoch that yields nothing still shows). */
  begin(epoch: number): void {
    this.#epoch(epoch);
  }

  /** The first `count` positions (in output order) of `epoch` are skipped: the loader resumed after them. */
  skipped(epoch: number, count: number): void {
    const e = this.#epoch(epoch);
    e.skipped += count;
    e.pending -= count;
  }

  /** Marks `epoch` as run to its end. */
  complete(epoch: number): void {
    this.#epoch(epoch).complete = true;
  }

  /**
   * Counts the positions of a batch as the pipeline closes it, in batch order (or one position stopping the
   * epoch): their failures, and, with `dropped` (a short last batch left out), the positions whose own clip
   * is lost with it. Failures are logged unless `stopping` (the position stops the epoch with its failure,
   * which reaches the consumer: logged too, it was printed twice). Throws `PipelineFailure` once the epoch's
   * failures exceed `maxFailures`.
   */
  collated(epoch: number, slots: readonly PlacedClip[], dropped = false, stopping = false): void {
    const e = this.#epoch(epoch);
    for (const s of slots) {
      const own = s.failures.length === 0; // the position's own clip was loaded
      if (own && s.clip === null) {
        throw new InvalidArgumentError(`clip accounting: a position with neither a clip nor a failure`);
      }
      for (const f of s.failures) this.#failure(e, f, !stopping);
      if (!own) {
        e.failed++;
        e.pending--;
        const stage = s.failures[0].stage;
        e.failedByStage[stage] = (e.failedByStage[stage] ?? 0) + 1;
      } else if (dropped) {
        e.dropped++;
        e.pending--;
      }
    }
    this.#seen.set(epoch, (this.#seen.get(epoch) ?? 0) + slots.length);
    this.#checkBudget(e);
  }

  /**
   * Counts the clips of a batch handed to the consumer: delivered, or substitutes, their padding and their
   * decode work. With `sign` -1, takes that count back (the batch never reached the training code, e.g. a
   * relay's client discarded it): its positions are pending again, and its epoch not complete.
   */
  delivered(clips: readonly ClipMeta[], sign: 1 | -1 = 1): void {
    for (const c of clips) countDelivered(this.#epoch(c.epoch), c, sign);
  }

  #failure(e: ClipEpochStats, f: ClipFailure, log: boolean): void {
    if (f.attempt > 0) e.substitutesFailed++;
    if (e.failures.length < LISTED_FAILURES) e.failures.push(f);
    else e.unlisted++;
    if (!log) return;
    const n = this.#logged++;
    if (n < LOGGED_FAILURES) this.#log(`sluice loader: epoch ${e.epoch}: ${formatClipFailure(f)}`);
    else if (n === LOGGED_FAILURES) this.#log(`sluice loader: further failures are counted in stats().clips`);
  }

  #checkBudget(e: ClipEpochStats): void {
    const max = this.#maxFailures;
    const finished = this.#seen.get(e.epoch) ?? 0;
    const over = typeof max === "number"
      ? e.failed > max
      : finished >= max.after && e.failed / finished > max.rate;
    if (!over) return;
    const budget = typeof max === "number" ? `${max}` : `rate ${max.rate} after ${max.after}`;
    const first = e.failures.find((f) => f.attempt === 0);
    // The option is named as TypeScript does; a door words it as its caller wrote it (`max_failures`).
    const says = [`loader: ${e.failed} of ${finished} clips failed in epoch ${e.epoch}, above `];
    const rest = ` (${budget})` + (first === undefined ? "" : `; first: ${formatClipFailure(first)}`);
    const failure = new PipelineFailure(
      `${says[0]}maxFailures${rest}`,
      Object.entries(e.failedByStage).map(([stage, failed]) => ({ stage, tasksIn: finished, failed })),
      e.failures.slice(0, 3).map((f) => ({
        stage: f.stage,
        item: f.path,
        error: f.error,
      })),
    );
    throw withProblem(failure, {
      option: "maxFailures",
      value: max,
      says: [...says, { option: "maxFailures" }, rest],
    });
  }

  /**
   * The counts so far: a copy, per epoch and in total. `unconsumed`: clips handed out that have not reached the
   * training code yet (a relay's batches on their way to its client), counted in the copy as pending, as if
   * their delivery were taken back (see {@link delivered}); the accounting itself is left as it is.
   */
  stats(unconsumed: readonly ClipMeta[] = []): ClipStats {
    const copies = new Map([...this.#epochs].map(([n, e]) => [n, {
      ...e,
      failedByStage: { ...e.failedByStage },
      failures: [...e.failures],
    }]));
    for (const c of unconsumed) {
      const e = copies.get(c.epoch);
      if (e !== undefined) countDelivered(e, c, -1);
    }
    const epochs = [...copies.values()];
    const total = zero(0);
    addCounts(total, this.#folded);
    for (const e of epochs) addCounts(total, e);
    total.decodeAmplification = amplification(total);
    return { total, epochs, foldedEpochs: this.#foldedEpochs };
  }
}

/** Counts (`sign` 1) or takes back (-1) the delivery of clip `c` in its epoch's entry `e`. */
function countDelivered(e: ClipEpochStats, c: ClipMeta, sign: 1 | -1): void {
  if (c.replaces === undefined) {
    e.delivered += sign;
    e.pending -= sign;
  } else e.replaced += sign;
  if (c.padded > 0) {
    e.paddedFrames += sign * c.padded;
    e.paddedClips += sign;
  }
  const held = c.held ?? 0;
  if (held > 0) {
    e.heldFrames += sign * held;
    e.heldClips += sign;
  }
  e.decodedFrames += sign * (c.decodedFrames ?? 0);
  e.skippedFrames += sign * (c.skippedFrames ?? 0);
  e.emittedFrames += sign * (c.pts.length - c.padded - held);
  if ((c.passClips ?? 1) > 1) e.sharedClips += sign;
  if (c.audio === "missing") e.audioMissing += sign;
  else if (c.audio === "short") e.audioShort += sign;
  else if (c.audio === "error") e.audioError += sign;
  e.decodeAmplification = amplification(e);
  if (e.pending > 0) e.complete = false;
}

/** Adds the counts of `from` to `to` (the amplification is the caller's to recompute). */
function addCounts(to: ClipCounts, from: ClipCounts): void {
  for (const k of Object.keys(to) as (keyof ClipCounts)[]) {
    if (k === "failedByStage") {
      for (const [s, n] of Object.entries(from.failedByStage)) {
        to.failedByStage[s] = (to.failedByStage[s] ?? 0) + n;
      }
    } else if (k !== "decodeAmplification") to[k] += from[k];
  }
}
