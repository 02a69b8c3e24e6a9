/**
 * `videoClassificationLoader`: batches of labelled clips for training a video model, built on the pipeline
 * engine:
 *
 * ```
 * sample → fetch → demux → shuffle → decode → replace → aggregate → collate → (your training loop)
 * ```
 *
 * - The dataset is indexed once (durations, keyframes when `sampler.keyframeAligned`); the sampler then plans each
 *   epoch up front, so the pipeline prefetches as far ahead as its queues allow. Each video is opened once for
 *   all of its clips, and a seeded shuffle buffer (`sampler.shuffleBuffer`) interleaves the clips of different
 *   videos, so batches mix videos.
 * - `backend: "subprocess"` runs sample → fetch → demux → shuffle in a child Deno process
 *   (`backend_module.ts`); the parent decodes, replaces, batches and collates. `"inprocess"` (default) runs
 *   everything here.
 * - Decoding runs in a `WorkerPool` of `concurrency.decode` Workers (default: one per core), each clip made what
 *   its `ClipSpec` says (`clip_spec.ts`: frame sampling, size, resize mode, dtype, rotation). In-process, demux
 *   tasks run in the same pool (one Worker per core in all, no oversubscription).
 * - Decoding less (`decodeLess`, every switch on by default, none changes a pixel): non-reference frames no slot
 *   shows are not decoded (`decode.ts`); clips of one video whose packets overlap are served by one forward
 *   decode pass (`front.ts`, `clip_steps.ts`); when fewer clips are left than cores, a decode task gets the idle
 *   cores as FFmpeg threads (`decode_threads.ts`). `stats().clips` counts frames decoded, skipped and emitted.
 * - `decode: "auto"` uses NVDEC when `src/nvdec` says it is available, the CPU otherwise (logging one line);
 *   `"nvdec"` fails when it is not available. NVDEC clips are resized, turned, flipped, laid out and converted
 *   on the GPU, so batches look the same whichever decoder made them (default decode concurrency: the GPU's
 *   NVDEC engines). With `slots`, the batches stay in GPU memory (`batch.device`, `batch.toHost()`); without,
 *   each clip is copied to host memory once.
 * - Full batches: a clip that cannot be loaded (missing file, HTTP 404, undecodable, no frame in its window, too
 *   much padding) is a value, not a pipeline failure, so it never takes other clips with it. With
 *   `onClipError: "replace"` (default) its position is filled with a deterministic substitute from the same
 *   epoch plan (`replace.ts`); `"skip"` leaves the batch short; `"fail"` ends the epoch with the clip's error.
 *   `stats().clips` counts every planned clip, per epoch and in total: delivered, failed (with the cause),
 *   replaced, dropped, padded frames (`clip_stats.ts`).
 *
 * - Memory: every packet's buffer is freed as soon as it has been decoded (not at V8's next GC), and the loader
 *   pins glibc's mmap threshold for the process (`mmap_threshold.ts`) so freed big buffers go back to the system
 *   instead of fragmenting the malloc heaps. A clip's buffer, once copied into its batch, is decoded into again
 *   (one batch's worth are kept), and a disposed batch's buffer holds a later batch (two are kept), moved so
 *   that nothing still viewing them sees new pixels (`buffer_pool.ts`): fresh pages cost about a tenth of the
 *   CPU. Batches are `Disposable`: `for await (using batch of loader)` gives back each batch's pixels when its
 *   step ends, which keeps RSS flat at the working set; batches that are merely dropped wait for V8's next
 *   collection (a few tens of MiB at most).
 *   With `slots`, batches live in that many reused buffers of one shared mapping instead, each clip decoded
 *   straight into its place (`batch_slots.ts`): no copy after decode, and batch memory fixed at `slots`.
 *   `memoryReport()` shows where the memory is (V8 heaps of the main thread and each Worker, external memory,
 *   live FFmpeg objects).
 *
 * - Resume mid-epoch, exactly (`loader_state.ts`): `loadStateDict(stateDict())` on a new loader with the same
 *   options continues with the next batch, as the uninterrupted run, without loading the clips before it.
 *   `preview()` draws batches as a contact sheet (`preview.ts`).
 *
 * Iterate the loader (`for await (using batch of loader)`) once per epoch; `close()` it (or `await using`) at the
 * end to stop Workers and the backend child.
 * @module
 */

import { InvalidArgumentError } from "../errors.ts";
import { PipelineBuilder, resolvedBuildOptions } from "../pipeline/builder.ts";
import { WorkerPool } from "../pipeline/worker_pool.ts";
import type { TaskPool } from "../pipeline/pool_lease.ts";
import { BackendFront } from "./backend_front.ts";
import { releaseBuffers } from "../pipeline/transfer.ts";
import { fixMmapThreshold } from "../memory/mmap_threshold.ts";
import { BufferPool } from "../memory/buffer_pool.ts";
import { clipFailureError, isFailedClip } from "./clip_failure.ts";
import type { ClipSpec } from "./clip_spec.ts";
import { ClipAccounting } from "./clip_stats.ts";
import { ClipProfile } from "./clip_profile.ts";
import { threadMs } from "../media/spans.ts";
import { callingPool, ClipDecodeStep } from "./clip_steps.ts";
import { ThreadBudget } from "./decode_threads.ts";
import { type Batch, collate } from "./collate.ts";
import { BatchSlots } from "./batch_slots.ts";
import { buildFront, CLIP_WORKER } from "./front.ts";
import { type LoaderPlan, planLoader } from "./plan.ts";
import { type LoaderOptions, type ResolvedLoaderOptions, resolveLoaderOptions } from "./loader_options.ts";
import { startSize } from "../pipeline/stage.ts";
import { withProblem } from "../errors.ts";
import { LoaderStates, stateIdentity } from "./loader_state.ts";
import { Replacer } from "./replace.ts";
import type { LaneShare } from "./lane_share.ts";
import { chooseDecoder } from "./decode/devices.ts";

export type { LoaderState } from "./loader_state.ts";
export { type LoaderMemory, type LoaderStats, VideoClassificationLoader } from "./video_loader.ts";
import { clipError, type ReusedBuffers, VideoClassificationLoader } from "./video_loader.ts";
export { type LoaderPlan, planLoader } from "./plan.ts";
export type { ClipOptions } from "./clip_options.ts";
export type { DecodeLessOptions, LoaderOptions, ResolvedLoaderOptions } from "./loader_options.ts";
import type { ClipItem, DecodedClip, FailedClip, PlacedClip } from "./clip/life.ts";

/**
 * What the loaders of a node's ranks share (the node server, `src/serve/node_hub.ts`): given to
 * {@link videoClassificationLoader}, the loader uses them instead of planning and pooling on its own.
 */
export interface SharedLoaderParts {
  /** The plan, the dataset opened and indexed once for the node, this loader's sampler (its shard) in it. */
  plan: LoaderPlan;
  /** The node's pool (this loader's lease of it: closing the loader leaves the pool to the others). */
  pool: TaskPool;
  /** The node pool's thread tokens (CPU decode with `decodeLess.threads`). */
  budget: ThreadBudget | null;
  /** This loader's share of decode once across ranks (closed with the loader; unused for NVDEC). */
  lane: LaneShare | null;
}

/**
 * Batches of labelled clips for training a video model: opens and indexes the dataset, plans each epoch's clips
 * with a seeded sampler, and builds the pipeline sample → fetch → demux → decode → batch, each stage with its
 * own concurrency (decoding in a pool of Workers, one per core by default, or on the GPU with
 * `decode: "nvdec"`). A clip that cannot be loaded is replaced by default (`onClipError`), so batches are full;
 * every planned clip is accounted for in `stats().clips`. docs/loader.md is the guide; {@link LoaderOptions}
 * says every option. The options are checked and defaulted once, here (`resolveLoaderOptions`).
 * @param opts the dataset, `batchSize`, `clip` (frames and size) and the other {@link LoaderOptions}
 * @returns the loader, ready to iterate
 * @throws {InvalidArgumentError} for an option out of range or unknown (naming the closest one), options that
 *   contradict each other, or when no video of the dataset could be indexed
 * @throws {DatasetError} for a dataset that cannot be read
 * @example Load batches of clips for training
 * ```ts
 * import { videoClassificationLoader } from "@sluice/sluice";
 *
 * await using loader = await videoClassificationLoader({
 *   dataset: "data/train", // one sub-directory per class, or a CSV/JSONL manifest, or shards
 *   batchSize: 8,
 *   clip: { numFrames: 16, width: 112, height: 112 },
 *   sampler: { seed: 0, clipsPerVideo: 4 },
 * });
 * for await (using batch of loader) {
 *   // batch.data: uint8 [B, T, H, W, 3]; batch.labels: one class index per clip
 *   console.log(batch.shape, batch.labels);
 * }
 * ```
 */
export async function videoClassificationLoader(opts: LoaderOptions): Promise<VideoClassificationLoader> {
  return await openLoader(resolveLoaderOptions(opts));
}

/**
 * {@link videoClassificationLoader} of options resolved at a door (`resolveLoaderOptions`: the server's, the
 * command line's), and a node server's rank (`shared`: the node's plan, pool and shares).
 */
export async function openLoader(
  o: ResolvedLoaderOptions,
  shared?: SharedLoaderParts,
): Promise<VideoClassificationLoader> {
  return loaderOfPlan(o, shared?.plan ?? await planLoader(o), shared);
}

/** A loader of `plan` (made from `o`); see {@link openLoader}. */
function loaderOfPlan(
  o: ResolvedLoaderOptions,
  plan: LoaderPlan,
  shared?: SharedLoaderParts,
): VideoClassificationLoader {
  const log = o.log;
  fixMmapThreshold();
  const { front: args, spec } = plan;
  const device = o.device;
  const dev = chooseDecoder(o.decode, device, log, nvdecUnavailable);
  const decoder = dev.kind;
  // the decode Workers' decoder and NVDEC device (set before the spec travels to the backend child)
  spec.decoder = decoder;
  spec.device = device;
  const cores = navigator.hardwareConcurrency ?? 1;
  const ordered = args.ordered ?? true;
  const { backend, onClipError, batchSize, dropLast, layout } = o;
  const decodeConcurrency = o.concurrency.decode ?? dev.defaultConcurrency(device);
  const decodeSize = startSize(decodeConcurrency); // an "auto" stage's pool grows as it claims more
  const decodePool: TaskPool = shared?.pool ?? new WorkerPool(CLIP_WORKER, {
    size: backend === "subprocess" ? decodeSize : Math.max(decodeSize, startSize(args.concurrency.demux)),
  });
  const dl = o.decodeLess;
  if (!dev.sharesPasses) args.shareHorizon = 0;
  const lane = dev.sharesPasses ? shared?.lane ?? null : null;
  if (!dev.sharesPasses) shared?.lane?.close();
  const budget = dev.threadBudget && dl.threads
    ? shared?.budget ?? new ThreadBudget(() => decodePool.size)
    : null;
  const slots = o.slots === undefined
    ? null
    : new BatchSlots(o.slots, spec, batchSize, layout, plan.sampler, {
      device: dev.deviceSlots ? device : null,
      // decoding ahead of the consumer: its buffer, the batches the decode tasks in flight span, one assembling
      lookahead: o.bufferSize +
        Math.ceil(
          (typeof decodeConcurrency === "number" ? decodeConcurrency : 2 * cores) /
            batchSize,
        ) + 1,
    });
  const profile = o.profile ? new ClipProfile() : null;
  const buffers = slots === null && dev.reusesClipBuffers ? reusedBuffers(spec, batchSize) : null;
  const decodeStep = new ClipDecodeStep(decodePool, {
    skipUnshown: dl.skip,
    threads: budget,
    perEpoch: plan.sampler.length,
    slots,
    profile,
    buffers: buffers?.clips,
    reload: (meta, signal) => replacer.load(meta, signal),
  });
  lane?.connect({ expect: (meta, result, recycle) => decodeStep.expectResult(meta, result, recycle) });
  const accounting = new ClipAccounting(plan.sampler.length, o.maxFailures, log);
  const identity = stateIdentity(args, plan.dataset.root, { batchSize, dropLast, layout, onClipError });
  const states = new LoaderStates(args, identity, plan.sampler);
  if (o.resume !== undefined) states.load(o.resume, o.firstEpoch); // before the child gets `args`
  let front: PipelineBuilder<ClipItem>;
  let backendFront: BackendFront | null = null;
  if (backend === "subprocess") {
    const bufferSize = Math.max(o.bufferSize, 2 * (decodeConcurrency === "auto" ? cores : decodeConcurrency));
    backendFront = new BackendFront(args, bufferSize, log);
    front = new PipelineBuilder().addSource(backendFront, { name: "backend", continuous: true });
  } else {
    front = buildFront(args, decodePool, budget, lane);
  }
  const replacer = new Replacer(args, decodePool, slots);
  const place = async (x: DecodedClip | FailedClip, signal: AbortSignal): Promise<PlacedClip> => {
    if (!isFailedClip(x)) return { clip: x, failures: [] };
    if (onClipError === "replace") return await replacer.replace(x.failed, signal);
    if (onClipError === "skip") return { clip: null, failures: [x.failed] };
    try {
      accounting.collated(x.failed.epoch, [{ clip: null, failures: [x.failed] }], false, true);
    } catch (e) {
      throw clipError(e);
    }
    throw clipError(clipFailureError(x.failed));
  };
  const collateBatch = (placed: PlacedClip[]): Batch | undefined => {
    if (profile === null) return collateNow(placed);
    const t0 = threadMs();
    try {
      return collateNow(placed);
    } finally {
      profile.addMain("collate", threadMs() - t0);
    }
  };
  const collateNow = (placed: PlacedClip[]): Batch | undefined => {
    const first = placed[0];
    const epoch = first.clip?.meta.epoch ?? first.failures[0].epoch;
    const clips = placed.flatMap((s) => s.clip === null ? [] : [s.clip]);
    const drop = dropLast && placed.length < batchSize;
    // A clip's data is its own buffer, or a view of its place in a batch slot with its own ArrayBuffer object:
    // releasing it frees the buffer or detaches that view only.
    let batch: Batch | undefined;
    try {
      accounting.collated(epoch, placed, drop);
      if (slots !== null) batch = slots.collate(placed, clips, drop);
      else if (!drop && clips.length > 0) {
        batch = collate(clips, spec.numFrames, layout, undefined, buffers?.batches);
      }
    } catch (e) {
      if (slots !== null && batch === undefined) {
        try {
          slots.collate(placed, [], true); // gives its slot back
        } catch { /* the slot went back already */ }
      }
      throw clipError(e);
    } finally {
      // in the batch now: decode the next clips into them, or free them now (not at the next GC)
      if (buffers !== null) { for (const c of clips) buffers.clips.give(c.data.buffer); }
      else releaseBuffers(clips.map((c) => c.data));
    }
    return batch;
  };
  const pipeline = front
    .pipe((item: ClipItem, ctx) => decodeStep.decode(item, ctx.signal), {
      name: "decode",
      executor: callingPool(decodePool),
      concurrency: decodeConcurrency,
      ordered,
    })
    .pipe((x: DecodedClip | FailedClip, ctx) => place(x, ctx.signal), {
      name: "replace",
      concurrency: decodeConcurrency,
      ordered,
      maxFailures: 0,
    })
    .aggregate(batchSize, { name: "aggregate" })
    .pipe(collateBatch, { name: "collate", maxFailures: 0 })
    .addSink({ bufferSize: o.bufferSize })
    // A dead, stalled or broken backend child ends the loop with its own error (BackendExitedError, ...).
    .build(resolvedBuildOptions({
      autoConcurrency: o.autoConcurrency,
      hooks: o.hooks,
      reportInterval: o.reportInterval,
      log,
      signal: backendFront?.failure,
    }));
  return new VideoClassificationLoader({
    plan,
    batchSize,
    dropLast,
    decoder,
    backend,
    onClipError,
    pipeline,
    backendFront,
    decodePool,
    decodeStep,
    accounting,
    slots,
    buffers,
    profile,
    states,
    lane,
    // the same plan (no second indexing) from `firstEpoch`'s start, with its own Workers and no slots
    sibling: (firstEpoch) =>
      loaderOfPlan(
        { ...o, decode: decoder, firstEpoch, resume: undefined, slots: undefined, hooks: undefined },
        { ...plan, front: { ...plan.front, firstEpoch, resume: undefined } },
      ),
  });
}

/**
 * Without batch slots: the clip buffers (one batch's worth) and batch buffers (two) the loader reuses rather than
 * map fresh pages for every clip and batch (`buffer_pool.ts`).
 */
function reusedBuffers(spec: ClipSpec, batchSize: number): ReusedBuffers {
  const clipBytes = spec.numFrames * 3 * spec.width * spec.height * (spec.dtype === "float32" ? 4 : 1);
  return { clips: new BufferPool(clipBytes, batchSize), batches: new BufferPool(batchSize * clipBytes, 2) };
}

/** The error of `decode: "nvdec"` where NVDEC is not available (`reason`), naming the option. */
function nvdecUnavailable(reason: string): InvalidArgumentError {
  const rest = ` "nvdec" requested but NVDEC is not available: ${reason}`;
  return withProblem(new InvalidArgumentError(`loader: decode${rest}`), {
    option: "decode",
    value: "nvdec",
    says: ["loader: ", { option: "decode" }, rest],
  });
}
