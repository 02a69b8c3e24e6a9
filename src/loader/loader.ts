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
 *   epoch plan (`replace.ts`); `"skip"` leaves the batch short; `"fail"` ends the epoch with the clip's error
 *   (the replace stage; it and the collate stage are the batch assembler, `batch_assembler.ts`).
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
import type { Pipeline } from "../pipeline/pipeline.ts";
import { BackendFront } from "./front/backend_front.ts";
import { fixMmapThreshold } from "../memory/mmap_threshold.ts";
import { BufferPool } from "../memory/buffer_pool.ts";
import type { ClipSpec } from "./clip/clip_spec.ts";
import { ClipAccounting } from "./batch/clip_stats.ts";
import { ClipProfile } from "./decode/clip_profile.ts";
import { callingPool, ClipDecodeStep } from "./decode/clip_steps.ts";
import { ThreadBudget } from "./decode/decode_threads.ts";
import type { Batch } from "./batch/collate.ts";
import { BatchSlots } from "./batch/batch_slots.ts";
import { BatchAssembler, type ReusedBuffers } from "./batch/batch_assembler.ts";
import { buildFront, CLIP_WORKER, type FrontArgs } from "./front/front.ts";
import { type LoaderPlan, planLoader } from "./plan.ts";
import { type LoaderOptions, type ResolvedLoaderOptions, resolveLoaderOptions } from "./loader_options.ts";
import { type StageConcurrency, startSize } from "../pipeline/stage.ts";
import { withProblem } from "../errors.ts";
import { LoaderStates, stateIdentity } from "./loader_state.ts";
import { Replacer } from "./batch/replace.ts";
import type { LaneShare } from "./front/lane_share.ts";
import { chooseDecoder, type DecoderKind } from "./decode/devices.ts";

export type { LoaderState } from "./loader_state.ts";
export { type LoaderMemory, type LoaderStats, VideoClassificationLoader } from "./video_loader.ts";
import { VideoClassificationLoader } from "./video_loader.ts";
export { type LoaderPlan, planLoader } from "./plan.ts";
export type { ClipOptions } from "./clip_options.ts";
export type { DecodeLessOptions, LoaderOptions, ResolvedLoaderOptions } from "./loader_options.ts";
import type { ClipBase, ClipItem, DecodedClip, FailedClip, PlacedClip } from "./clip/life.ts";

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

/**
 * A loader of `plan` (made from `o`); see {@link openLoader}. Its shape: the decode side (decoder, Workers, batch
 * memory, the decode stage), the clips' front, the batch assembler (replace, collate), and the pipeline of them.
 */
function loaderOfPlan(
  o: ResolvedLoaderOptions,
  plan: LoaderPlan,
  shared?: SharedLoaderParts,
): VideoClassificationLoader {
  fixMmapThreshold();
  const { backend, onClipError, batchSize, dropLast, layout } = o;
  const decode = openDecode(o, plan, shared, (meta, signal) => replacer.load(meta, signal));
  const { decoder, slots, buffers, profile } = decode;
  const accounting = new ClipAccounting(plan.sampler.length, o.maxFailures, o.log);
  const states = loaderStates(o, plan);
  const { front, backendFront } = clipFront(o, plan.front, decode);
  const replacer = new Replacer(plan.front, decode.pool, slots);
  const assembler = new BatchAssembler({
    onClipError,
    batchSize,
    dropLast,
    layout,
    spec: plan.spec,
    accounting,
    replacer,
    slots,
    buffers,
    profile,
  });
  const pipeline = loaderPipeline(o, plan.front.ordered ?? true, front, decode, assembler, backendFront);
  return new VideoClassificationLoader({
    plan,
    batchSize,
    dropLast,
    decoder,
    backend,
    onClipError,
    pipeline,
    backendFront,
    decodePool: decode.pool,
    decodeStep: decode.step,
    accounting,
    slots,
    buffers,
    profile,
    states,
    lane: decode.lane,
    // the same plan (no second indexing) from `firstEpoch`'s start, with its own Workers and no slots
    sibling: (firstEpoch) =>
      loaderOfPlan(
        { ...o, decode: decoder, firstEpoch, resume: undefined, slots: undefined, hooks: undefined },
        { ...plan, front: { ...plan.front, firstEpoch, resume: undefined } },
      ),
  });
}

/** The loader's decode side: what decodes its clips, where they go, and the decode stage over them. */
interface LoaderDecode {
  /** The decoder. */
  decoder: DecoderKind;
  /** The decode stage's concurrency (the option, or the decoder's default). */
  concurrency: StageConcurrency;
  /** The clip Workers (the node's lease of its pool, for a node server's rank). */
  pool: TaskPool;
  /** Thread tokens (CPU decode with `decodeLess.threads`); null: one thread a task. */
  budget: ThreadBudget | null;
  /** This loader's share of decode once across a node's ranks; null: none. */
  lane: LaneShare | null;
  /** Batch slots (the `slots` option); null: batches in their own buffers. */
  slots: BatchSlots | null;
  /** Without slots, the clip and batch buffers reused; null: new ones. */
  buffers: ReusedBuffers | null;
  /** Where decode and collate time goes (the `profile` option); null: not timed. */
  profile: ClipProfile | null;
  /** The decode stage. */
  step: ClipDecodeStep;
}

/**
 * The decode side of a loader of `plan` ({@link LoaderDecode}): chooses the decoder (naming it in the spec the
 * Workers get), starts the Worker pool (or takes the node's), and makes the batch memory and the decode stage,
 * whose clips that a shared pass failed are loaded again by `reload`.
 * @throws {InvalidArgumentError} for `decode: "nvdec"` without NVDEC, or batch slots that do not fit in memory
 */
function openDecode(
  o: ResolvedLoaderOptions,
  plan: LoaderPlan,
  shared: SharedLoaderParts | undefined,
  reload: (meta: ClipBase, signal: AbortSignal) => Promise<DecodedClip | FailedClip>,
): LoaderDecode {
  const { front: args, spec } = plan;
  const { device, batchSize } = o;
  const dev = chooseDecoder(o.decode, device, o.log, nvdecUnavailable);
  // the decode Workers' decoder and NVDEC device (set before the spec travels to the backend child)
  spec.decoder = dev.kind;
  spec.device = device;
  const concurrency = o.concurrency.decode ?? dev.defaultConcurrency(device);
  const decodeSize = startSize(concurrency); // an "auto" stage's pool grows as it claims more
  const pool: TaskPool = shared?.pool ?? new WorkerPool(CLIP_WORKER, {
    size: o.backend === "subprocess" ? decodeSize : Math.max(decodeSize, startSize(args.concurrency.demux)),
  });
  if (!dev.sharesPasses) args.shareHorizon = 0;
  const lane = dev.sharesPasses ? shared?.lane ?? null : null;
  if (!dev.sharesPasses) shared?.lane?.close();
  const budget = dev.threadBudget && o.decodeLess.threads
    ? shared?.budget ?? new ThreadBudget(() => pool.size)
    : null;
  const slots = o.slots === undefined
    ? null
    : new BatchSlots(o.slots, spec, batchSize, o.layout, plan.sampler, {
      device: dev.deviceSlots ? device : null,
      lookahead: slotLookahead(o, concurrency),
    });
  const profile = o.profile ? new ClipProfile() : null;
  const buffers = slots === null && dev.reusesClipBuffers ? reusedBuffers(spec, batchSize) : null;
  const step = new ClipDecodeStep(pool, {
    skipUnshown: o.decodeLess.skip,
    threads: budget,
    perEpoch: plan.sampler.length,
    slots,
    profile,
    buffers: buffers?.clips,
    reload,
  });
  lane?.connect({ expect: (meta, result, recycle) => step.expectResult(meta, result, recycle) });
  return { decoder: dev.kind, concurrency, pool, budget, lane, slots, buffers, profile, step };
}

/**
 * How many batches beyond the consumer's next one may hold a batch slot: decoding ahead of the consumer fills its
 * buffer, the batches the decode tasks in flight span, and one assembling.
 */
function slotLookahead(o: ResolvedLoaderOptions, decodeConcurrency: StageConcurrency): number {
  const cores = navigator.hardwareConcurrency ?? 1;
  return o.bufferSize +
    Math.ceil((typeof decodeConcurrency === "number" ? decodeConcurrency : 2 * cores) / o.batchSize) + 1;
}

/** The loader's resume states of `plan`, the `resume` option's loaded (before the backend child gets the plan). */
function loaderStates(o: ResolvedLoaderOptions, plan: LoaderPlan): LoaderStates {
  const { batchSize, dropLast, layout, onClipError } = o;
  const identity = stateIdentity(plan.front, plan.dataset.root, { batchSize, dropLast, layout, onClipError });
  const states = new LoaderStates(plan.front, identity, plan.sampler);
  if (o.resume !== undefined) states.load(o.resume, o.firstEpoch);
  return states;
}

/**
 * The pipeline's start, up to the clips to decode: sample → fetch → demux → shuffle here (demux on the decode
 * Workers), or, with `backend: "subprocess"`, in a backend child (`backendFront`, null here).
 */
function clipFront(
  o: ResolvedLoaderOptions,
  args: FrontArgs,
  decode: LoaderDecode,
): { front: PipelineBuilder<ClipItem>; backendFront: BackendFront | null } {
  if (o.backend !== "subprocess") {
    return { front: buildFront(args, decode.pool, decode.budget, decode.lane), backendFront: null };
  }
  const cores = navigator.hardwareConcurrency ?? 1;
  const bufferSize = Math.max(o.bufferSize, 2 * (decode.concurrency === "auto" ? cores : decode.concurrency));
  const backendFront = new BackendFront(args, bufferSize, o.log);
  const front = new PipelineBuilder().addSource(backendFront, { name: "backend", continuous: true });
  return { front, backendFront };
}

/**
 * The loader's pipeline: `front`, then the stages decode → replace → aggregate → collate (the batch
 * assembler's), into a sink of the `bufferSize` batches.
 */
function loaderPipeline(
  o: ResolvedLoaderOptions,
  ordered: boolean,
  front: PipelineBuilder<ClipItem>,
  decode: LoaderDecode,
  assembler: BatchAssembler,
  backendFront: BackendFront | null,
): Pipeline<Batch> {
  return front
    .pipe((item: ClipItem, ctx) => decode.step.decode(item, ctx.signal), {
      name: "decode",
      executor: callingPool(decode.pool),
      concurrency: decode.concurrency,
      ordered,
    })
    .pipe((x: DecodedClip | FailedClip, ctx) => assembler.place(x, ctx.signal), {
      name: "replace",
      concurrency: decode.concurrency,
      ordered,
      maxFailures: 0,
    })
    .aggregate(o.batchSize, { name: "aggregate" })
    .pipe((placed: PlacedClip[]) => assembler.collate(placed), { name: "collate", maxFailures: 0 })
    .addSink({ bufferSize: o.bufferSize })
    // A dead, stalled or broken backend child ends the loop with its own error (BackendExitedError, ...).
    .build(resolvedBuildOptions({
      autoConcurrency: o.autoConcurrency,
      hooks: o.hooks,
      reportInterval: o.reportInterval,
      log: o.log,
      signal: backendFront?.failure,
    }));
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
