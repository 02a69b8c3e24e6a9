/**
 * `VideoClassificationLoader`, the loader a training loop holds: it runs epochs of the pipeline `loader.ts` built
 * (one iteration an epoch), delivers and accounts for their batches, saves and resumes its place, previews,
 * reports its stats and memory, and closes what it owns. `loader.ts` builds it from a plan.
 * @module
 */

import { InvalidArgumentError, PipelineFailure } from "../errors.ts";
import type { Pipeline } from "../pipeline/pipeline.ts";
import type { StageControl } from "../pipeline/stage.ts";
import type { PipelineStats } from "../pipeline/stats.ts";
import type { TaskPool } from "../pipeline/pool_lease.ts";
import type { BackendStats } from "../backend/backend_stats.ts";
import type { BackendFront } from "./front/backend_front.ts";
import type { WorkerMemory } from "./decode/clip_worker.ts";
import { nativeObjectCounts } from "../media/av_objects.ts";
import type { ClipSpec } from "./clip/clip_spec.ts";
import { isClipError } from "./clip/clip_failure.ts";
import type { ClipAccounting, ClipStats } from "./batch/clip_stats.ts";
import type { ClipProfile, ProfileStats } from "./decode/clip_profile.ts";
import type { ClipDecodeStep } from "./decode/clip_steps.ts";
import type { Batch } from "./batch/collate.ts";
import type { BatchSlots } from "./batch/batch_slots.ts";
import type { ReusedBuffers } from "./batch/batch_assembler.ts";
import type { VideoDataset } from "../dataset/dataset.ts";
import type { FrontArgs } from "./front/front.ts";
import type { LoaderPlan } from "./plan.ts";
import type { LoaderState, LoaderStates } from "./loader_state.ts";
import { type Preview, previewLoader, type PreviewOptions } from "./preview.ts";
import type { OnClipError } from "./batch/replace.ts";
import type { LaneShare } from "./front/lane_share.ts";
import type { ClipSampler } from "../dataset/sampler.ts";
import type { IndexFailure } from "../dataset/video_index.ts";

/** Loader statistics: in clips, the pipeline's per stage, the backend child's (subprocess), indexing failures. */
export interface LoaderStats {
  /** Every planned clip accounted for, per epoch and in total (see `clip_stats.ts`). */
  clips: ClipStats;
  /** The loader pipeline's per-stage rows (this process). */
  pipeline: PipelineStats;
  /** The backend child's transport and pipeline stats (`backend: "subprocess"`), else null. */
  backend: BackendStats | null;
  /** The per-clip cost breakdown (`profile: true`), else null. */
  profile: ProfileStats | null;
  /** Videos that could not be indexed (left out of every epoch). */
  indexFailures: IndexFailure[];
}

/** Where a loader's memory is: this thread's V8 heap and external memory, each decode Worker's, and RSS. */
export interface LoaderMemory {
  /** This process's resident set size, bytes (the backend child's is not included). */
  rss: number;
  /** This (main) thread: V8 heap and external (ArrayBuffer) memory, bytes, and its FFmpeg objects. */
  main: WorkerMemory;
  /** One entry per decode Worker running now. */
  workers: WorkerMemory[];
  /** Without slots: clip and batch buffers handed out again so far instead of new ones (`buffer_pool.ts`). */
  reused: { clips: number; batches: number };
}

/**
 * A running loader (made by {@link videoClassificationLoader}): iterate it once per epoch for its batches, ask it
 * for its stats, its place to resume from (`stateDict`), a preview; close it at the end (or `await using`).
 * @example Two epochs, a checkpoint of the place, the clip counts
 * ```ts
 * import { videoClassificationLoader } from "@sluice/sluice";
 *
 * await using loader = await videoClassificationLoader({
 *   dataset: "data/train",
 *   batchSize: 8,
 *   clip: { numFrames: 16, width: 112, height: 112 },
 * });
 * for (let epoch = 0; epoch < 2; epoch++) {
 *   for await (using batch of loader) {
 *     console.log(loader.epoch, batch.shape, batch.labels);
 *     await Deno.writeTextFile("place.json", JSON.stringify(loader.stateDict()));
 *   }
 * }
 * const { clips } = loader.stats();
 * console.log(`${clips.total.delivered} clips delivered, ${clips.total.failed} failed`);
 * ```
 */
export class VideoClassificationLoader implements AsyncIterable<Batch>, AsyncDisposable {
  /** The dataset it loads from. */
  readonly dataset: VideoDataset;
  /** The sampler planning its epochs. */
  readonly sampler: ClipSampler;
  /** What each clip becomes, defaults applied. */
  readonly spec: ClipSpec;
  /** Clips per epoch for this rank. */
  readonly clipsPerEpoch: number;
  /** Batches per epoch (fewer when `onClipError` is "skip" and every clip of a batch failed). */
  readonly batchesPerEpoch: number;
  /** Clips per batch (the last batch of an epoch may have fewer). */
  readonly batchSize: number;
  /** The decoder in use after resolving "auto". */
  readonly decoder: "cpu" | "nvdec";
  /** Where sample → fetch → demux run. */
  readonly backend: "inprocess" | "subprocess";
  /** What a failed clip becomes. */
  readonly onClipError: OnClipError;
  /** Videos that could not be indexed (left out of every epoch). */
  readonly indexFailures: IndexFailure[];
  readonly #pipeline: Pipeline<Batch>;
  readonly #backend: BackendFront | null;
  readonly #decodePool: TaskPool;
  readonly #decodeStep: ClipDecodeStep;
  readonly #accounting: ClipAccounting;
  readonly #slots: BatchSlots | null;
  readonly #buffers: ReusedBuffers | null;
  readonly #profile: ClipProfile | null;
  readonly #args: FrontArgs;
  readonly #states: LoaderStates;
  readonly #lane: LaneShare | null;
  /** Another loader of the same plan, from an epoch's start (what `preview()` draws with). */
  readonly #sibling: (firstEpoch: number) => VideoClassificationLoader;
  #epoch = 0;

  /** Use {@link videoClassificationLoader}. */
  constructor(
    init: {
      plan: LoaderPlan;
      batchSize: number;
      dropLast: boolean;
      decoder: "cpu" | "nvdec";
      backend: "inprocess" | "subprocess";
      onClipError: OnClipError;
      pipeline: Pipeline<Batch>;
      backendFront: BackendFront | null;
      decodePool: TaskPool;
      decodeStep: ClipDecodeStep;
      accounting: ClipAccounting;
      slots: BatchSlots | null;
      buffers: ReusedBuffers | null;
      profile: ClipProfile | null;
      states: LoaderStates;
      lane?: LaneShare | null;
      sibling: (firstEpoch: number) => VideoClassificationLoader;
    },
  ) {
    this.dataset = init.plan.dataset;
    this.sampler = init.plan.sampler;
    this.spec = init.plan.spec;
    this.clipsPerEpoch = init.plan.sampler.length;
    this.batchSize = init.batchSize;
    this.#epoch = init.plan.front.firstEpoch;
    this.batchesPerEpoch = init.states.batchesPerEpoch;
    this.decoder = init.decoder;
    this.backend = init.backend;
    this.onClipError = init.onClipError;
    this.indexFailures = init.plan.indexFailures;
    this.#pipeline = init.pipeline;
    this.#backend = init.backendFront;
    this.#decodePool = init.decodePool;
    this.#decodeStep = init.decodeStep;
    this.#accounting = init.accounting;
    this.#slots = init.slots;
    this.#buffers = init.buffers;
    this.#profile = init.profile;
    this.#args = init.plan.front;
    this.#states = init.states;
    this.#lane = init.lane ?? null;
    this.#sibling = init.sibling;
  }

  /** The next epoch to run (0 before the first). */
  get epoch(): number {
    return this.#epoch;
  }

  /**
   * Runs one epoch (a resumed one from its resume point).
   * @returns the epoch's batches, in order; `return()` (a `break`) stops the epoch early
   */
  [Symbol.asyncIterator](): AsyncIterator<Batch> {
    const epoch = this.#epoch++;
    const slots = this.#slots;
    const resume = this.#states.begin(epoch);
    this.#accounting.begin(epoch);
    if (resume !== null) {
      this.#accounting.skipped(epoch, resume.from);
      this.#decodeStep.skipped(epoch, resume.from);
      slots?.resume(epoch, resume.batch);
    }
    const it = this.#pipeline[Symbol.asyncIterator]();
    let stopped = false; // return() was called: a next() still pending ends early, not at the epoch's end
    let yielded = resume?.batch ?? 0;
    return {
      next: async () => {
        // After the epoch's last batch only its end can come, which needs no slot.
        if (yielded < this.batchesPerEpoch) slots?.checkCredit();
        try {
          const r = await it.next();
          if (r.done) {
            if (!stopped) {
              this.#accounting.complete(epoch);
              this.#states.completed(epoch);
            }
            slots?.endEpoch();
          } else {
            yielded++;
            this.#accounting.delivered(r.value.clips);
            this.#states.delivered(r.value.clips);
            slots?.delivered(r.value);
          }
          return r;
        } catch (e) {
          slots?.endEpoch();
          // A clip's own error ("fail") or the clip budget's: more useful than the stage that relayed it.
          if (e instanceof PipelineFailure && isClipError(e.cause)) throw e.cause;
          throw e;
        }
      },
      return: async (value?: unknown) => {
        stopped = true;
        try {
          return await it.return!(value);
        } finally {
          slots?.endEpoch(); // after the Workers of the epoch stopped: nothing writes into those slots now
        }
      },
    };
  }

  /**
   * Takes back the delivery of clips handed out by this loader that never reached the training code: a relay
   * (`sluice serve`) calls it when its client discards a batch unused (e.g. one still in flight when the
   * client abandoned an epoch). Their positions count as pending again, and their epoch as not complete.
   * @param clips the clips of the batches discarded unused
   */
  undelivered(clips: Batch["clips"]): void {
    this.#accounting.delivered(clips, -1);
    this.#states.undelivered(clips);
  }

  /**
   * The consumer's place, plain JSON to save with a checkpoint: the epoch it is in and the batches of it
   * delivered (the next epoch, 0, once an epoch ran to its end), with the seed, rank, dataset fingerprint and
   * batch-shaping options they hold for (see `LoaderState`). With `after` (a batch of this loader, or its
   * clips; the first clip's `epoch` and `position` are what count): the place just after that batch, for a relay
   * whose consumer is behind the batches handed to it.
   * @param after the last batch the consumer took (or its clips), when it is behind this loader
   * @returns the state, for {@link loadStateDict} or the `resume` option of a new loader
   */
  stateDict(after?: Batch | readonly { epoch: number; position: number }[]): LoaderState {
    return this.#states.state(after === undefined || !("clips" in after) ? after : after.clips);
  }

  /**
   * Continues where `state` (from `stateDict()` of a loader with the same options) left off: the next
   * iteration runs the rest of its epoch, starting with the batch after the last one delivered, and the batches
   * are those of the uninterrupted run; the clips before are not loaded (counted as `skipped` in
   * `stats().clips`). Only before the first epoch starts.
   * @param state what `stateDict()` returned
   * @throws {InvalidArgumentError} naming the difference, for a state of another dataset, seed, rank or
   *   batch-shaping option, or once an epoch has started
   */
  loadStateDict(state: LoaderState): void {
    this.#epoch = this.#states.load(state).epoch;
    this.#backend?.restart(this.#args); // the child planned from the old arguments
  }

  /** The stages of its pipeline in this process, source first (with the subprocess backend: from `backend` on). */
  get stages(): readonly StageControl[] {
    return this.#pipeline.stages;
  }

  /**
   * The stage called `name`, to read or change its concurrency while the loader runs
   * (`loader.stage("decode").setConcurrency(4)`). With the subprocess backend, sample → fetch → demux run in the
   * child: their concurrency is set when the loader is made (`concurrency`).
   * @param name the stage's name: `"sample"`, `"fetch"`, `"demux"`, `"decode"`, …
   * @returns the stage's control
   * @throws {InvalidArgumentError} when this process runs no stage of that name
   */
  stage(name: string): StageControl {
    try {
      return this.#pipeline.stage(name);
    } catch (e) {
      if (this.backend !== "subprocess" || !(e instanceof InvalidArgumentError)) throw e;
      throw new InvalidArgumentError(
        `${e.message}; with the subprocess backend, sample, fetch and demux run in the child process: set their ` +
          "concurrency with the loader's `concurrency` option",
      );
    }
  }

  /**
   * A contact sheet of the first `batches` batches (default 1; with `html`, also a page with each clip playable)
   * of the epoch the next iteration runs, from its start: see `preview.ts`. A loader of its own (same plan, its
   * own Workers) draws them, so this loader's epochs are left as they are (the next iteration runs that epoch).
   * @param opts how many batches, and whether to write the page too
   * @returns the sheet (PNG and pixels), the clips in its rows, and the page when asked
   */
  async preview(opts?: PreviewOptions): Promise<Preview> {
    await using other = this.#sibling(this.#epoch);
    return await previewLoader(other, opts);
  }

  /**
   * Current statistics. `unconsumed`: clips of batches handed out by this loader that have not reached the
   * training code yet (a relay's, on their way to its client): `clips` counts them as pending in this snapshot,
   * as {@link undelivered} would, without changing the loader's own accounting.
   * @param unconsumed clips handed out that have not reached the training code yet
   * @returns the clip counts, the pipeline's per-stage rows, the backend child's and the profile's
   */
  stats(unconsumed: Batch["clips"] = []): LoaderStats {
    return {
      clips: this.#accounting.stats(unconsumed),
      pipeline: this.#pipeline.stats(),
      backend: this.#backend?.stats() ?? null,
      profile: this.#profile?.stats() ?? null,
      indexFailures: this.indexFailures,
    };
  }

  /**
   * Where this process's memory is (diagnostics, e.g. `bench/rss_epochs.ts`): this thread's V8 heap, external
   * memory and FFmpeg objects, and the same for each decode Worker (each answers after its current task).
   * @param gc collect every heap first (needs `--v8-flags=--expose-gc`)
   * @returns RSS, this thread's and each Worker's memory, and the buffers reused
   */
  async memoryReport(gc = false): Promise<LoaderMemory> {
    const workers = await this.#decodePool.callEach<WorkerMemory>("memoryReport", [gc]);
    if (gc) (globalThis as { gc?: () => void }).gc?.();
    const { rss, heapTotal, heapUsed, external } = Deno.memoryUsage();
    const reused = { clips: this.#buffers?.clips.reused ?? 0, batches: this.#buffers?.batches.reused ?? 0 };
    return { rss, main: { heapTotal, heapUsed, external, native: nativeObjectCounts() }, workers, reused };
  }

  /** Stops the pipeline, its Workers (a node's: its calls) and the backend child. Idempotent. */
  async close(): Promise<void> {
    this.#lane?.close(); // no rank claims its clips any more; what waited for it is dropped
    await this.#pipeline.stop();
    await this.#decodePool.close();
    await this.#backend?.close();
    this.#slots?.[Symbol.dispose](); // after the Workers: none writes into the mapping any more
    this.#buffers?.clips.clear();
    this.#buffers?.batches.clear();
  }

  /** Same as {@link close}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}
