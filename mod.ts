/**
 * sluice keeps GPUs fed with video: a loader that turns a dataset of video files into batches of decoded,
 * resized clips, through a pipeline of stages (sample → fetch → demux → decode → batch), each with its own
 * concurrency, calling FFmpeg and NVIDIA's decoder directly through `Deno.dlopen`.
 *
 * This entry point holds what a loader user needs: the loader and its options, batches and their clips' metadata,
 * the loader's stats and the hooks that carry them out, datasets, the cache loader, serving batches to trainers
 * in other processes, and the errors. The building blocks live in subpath exports:
 *
 * - `@sluice/sluice/loader`: planning a loader (`planLoader`), its option table (`LOADER_OPTIONS`), contact
 *   sheets, the memory and profile reports;
 * - `@sluice/sluice/dataset`: indexing, the seeded sampler (`ClipSampler`), fetching (`fetchBytes`), reading
 *   shard sets (`openShards`, `streamSamples`);
 * - `@sluice/sluice/pipeline`: the pipeline engine (`PipelineBuilder`, `WorkerPool`, error transport) and the
 *   per-stage stats' shapes;
 * - `@sluice/sluice/media`: probe, demux and decode on the CPU (`probe`, `demuxVideo`, `decodeVideo`);
 * - `@sluice/sluice/nvdec`: decode on the GPU (`decodeVideoNvdec`, `nvdecAvailable`);
 * - `@sluice/sluice/backend`: run part of a pipeline in a child process (`spawnBackend`);
 * - `@sluice/sluice/serve`: loader factories and the counters of a batch server;
 * - `@sluice/sluice/tune`: search a loader's settings for the most samples/s (`tune`, `defineTuning`, as
 *   `sluice tune`);
 * - `@sluice/sluice/prep`: prepare a dataset (transcode, pack into shards, verify, measure I/O);
 * - `@sluice/sluice/cli`: the `sluice` command line (`main`).
 *
 * Each name has one home: a type a signature here mentions but a loader user rarely writes (the per-stage
 * stats, the clip spec) is exported by the subpath it belongs to. docs/migration.md lists what moved.
 *
 * @example Load batches of clips for training
 * ```ts
 * import { videoClassificationLoader } from "@sluice/sluice";
 *
 * // A directory with one sub-directory per class (`sluice make-dataset data --videos 16 --classes 4` makes one).
 * await using loader = await videoClassificationLoader({
 *   dataset: "data",
 *   batchSize: 8,
 *   clip: { numFrames: 16, width: 112, height: 112 },
 *   sampler: { seed: 0, clipsPerVideo: 4 },
 * });
 * for await (using batch of loader) {
 *   // batch.data: uint8 [B, T, H, W, 3]; batch.labels: one class index per clip
 *   console.log(batch.shape, batch.labels);
 * }
 * console.log(loader.stats().clips.total);
 * ```
 * @module
 */

// The loader, its options and stats
export {
  type LoaderStats,
  VideoClassificationLoader,
  videoClassificationLoader,
} from "./src/loader/loader.ts";
export type { ClipOptions } from "./src/loader/clip_options.ts";
export type { DecodeLessOptions, LoaderOptions } from "./src/loader/loader_options.ts";
export type { OnClipError } from "./src/loader/batch/replace.ts";
export type { LoaderState } from "./src/loader/loader_state.ts";
export type { Preview, PreviewOptions } from "./src/loader/preview.ts";
export { cacheLoader, type CacheLoaderOptions } from "./src/loader/cache_loader.ts";

// Batches and what each clip became
export type { Batch, BatchDevice, BatchLayout } from "./src/loader/batch/collate.ts";
export type { ClipBase, ClipFailure, ClipMeta } from "./src/loader/clip/life.ts";
export type { ClipOutcome, FrameKind } from "./src/loader/clip/clip_spec.ts";
export type { ClipCounts, ClipEpochStats, ClipStats } from "./src/loader/batch/clip_stats.ts";

// Datasets
export { datasetFromDirectory, datasetFromManifest, openDataset } from "./src/dataset/dataset.ts";
export type { VideoDataset, VideoItem } from "./src/dataset/items.ts";
export type { SamplerOptions } from "./src/dataset/sampler.ts";
export { makeSyntheticDataset, type SyntheticDatasetOptions } from "./src/prep/synthetic.ts";

// The stats a loader reports, their text form, and the hooks that carry them out (`LoaderOptions.hooks`)
export { formatStats } from "./src/pipeline/format_stats.ts";
export { jsonlStatsHook, type PipelineEvent, type PipelineHook } from "./src/pipeline/hooks.ts";
export type { PipelineStats } from "./src/pipeline/stats.ts";

// Serving batches to trainers in other processes (PyTorch: python/; more in `@sluice/sluice/serve`)
export { BatchServer, serveLoader, type ServeOptions, type ServeStats } from "./src/serve/server.ts";

// Errors: one root, a class per cause; each keeps its class across Workers and processes
export {
  BackendError,
  BackendExitedError,
  BackendStalledError,
  ClipError,
  ClipIntegrityError,
  CudaError,
  DatasetError,
  EncoderNotFoundError,
  FetchError,
  InvalidArgumentError,
  LibraryNotFoundError,
  LibraryVersionError,
  MediaError,
  NvdecUnsupportedError,
  type OptionMessagePart,
  type OptionProblem,
  PipelineFailure,
  PipelineStoppedError,
  ProtocolError,
  ServeError,
  ShardError,
  SluiceError,
  WorkerCrashedError,
} from "./src/errors.ts";

// Types the names above refer to: the parts of the loader's members, options and stats, which a user meets
// through those names and rarely imports by name. They are public so that the root documents itself whole
// (`deno doc --lint mod.ts`), and this is each one's only home; tests/public_api_test.ts keeps this block
// exactly the types the names above reach.
export type { BackendStats, ChildStats } from "./src/backend/backend_stats.ts";
export type { FetchOptions } from "./src/dataset/fetch.ts";
export type { IndexedVideo, MemberRef, SkippedFile } from "./src/dataset/items.ts";
export {
  type ClipPlacement,
  type ClipRequest,
  ClipSampler,
  type ResolvedSamplerOptions,
  type SampledVideo,
  type ShardRemainder,
} from "./src/dataset/sampler.ts";
export type { MemberLocation } from "./src/dataset/shards/index_format.ts";
export type { IndexFailure } from "./src/dataset/video_index.ts";
export type { FetchPhase, StageError } from "./src/errors.ts";
export type { PhaseStats, ProfileStats } from "./src/loader/decode/clip_profile.ts";
export type { ClipDtype, ClipSpec, Interpolation } from "./src/loader/clip/clip_spec.ts";
export type { WorkerMemory } from "./src/loader/decode/clip_worker.ts";
export type { LaneShareStats } from "./src/loader/front/lane_share.ts";
export type { LoaderMemory } from "./src/loader/loader.ts";
export type { BatchingOptions } from "./src/loader/loader_state.ts";
export type { ContactSheet } from "./src/loader/preview.ts";
export type { AudioSpec, AudioStatus } from "./src/media/audio_window.ts";
export type { NativeObjectCounts } from "./src/media/av_objects.ts";
export type { ResizeMode } from "./src/media/crop.ts";
export type { FrameSampling } from "./src/media/frame_select.ts";
export type { RgbImage } from "./src/media/png.ts";
export type { SlotRingStats } from "./src/memory/slot_ring.ts";
export type { AutoConcurrencyOptions } from "./src/pipeline/auto_policy.ts";
export type { FormatStatsOptions } from "./src/pipeline/format_stats.ts";
export type { MaxFailures, StageConcurrency, StageControl } from "./src/pipeline/stage.ts";
export type {
  ControllerDecision,
  ControllerStats,
  QueueCounters,
  StageBound,
  StageKind,
  StageStats,
  StageTotals,
} from "./src/pipeline/stats.ts";
export type { DataWaitStats } from "./src/serve/data_wait.ts";
export type { NodeStats } from "./src/serve/node_stats.ts";
export type { LoaderFactory, LoaderRequest } from "./src/serve/session_host.ts";
export type { SessionStats } from "./src/serve/session_stats.ts";
