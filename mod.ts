/**
 * sluice keeps GPUs fed with video: a loader that turns a dataset of video files into batches of decoded,
 * resized clips, through a pipeline of stages (sample → fetch → demux → decode → batch), each with its own
 * concurrency, calling FFmpeg and NVIDIA's decoder directly through `Deno.dlopen`.
 *
 * This entry point holds what a loader user needs: the loader and its options, batches and stats, datasets,
 * the cache loader, serving batches to trainers in other processes, the errors, and the few media calls a user
 * checks files with (`probe`, `ffmpegInfo`, `nvdecAvailable`). The building blocks live in subpath exports:
 *
 * - `@sluice/sluice/pipeline`: the pipeline engine (`PipelineBuilder`, `WorkerPool`, hooks, error transport);
 * - `@sluice/sluice/media`: probe, demux and decode on the CPU (`demuxVideo`, `decodeVideo`, `VideoPackets`);
 * - `@sluice/sluice/nvdec`: decode on the GPU (`decodeVideoNvdec`, `CudaBuffer`, `toCuda`);
 * - `@sluice/sluice/backend`: run part of a pipeline in a child process (`spawnBackend`);
 * - `@sluice/sluice/tune`: search a loader's settings for the most samples/s (`tune`, as `sluice tune`);
 * - `@sluice/sluice/prep`: prepare a dataset (transcode, pack into shards, verify, read shards, measure I/O);
 * - `@sluice/sluice/cli`: the `sluice` command line (`main`).
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

// The loader, its options, batches and stats
export {
  type LoaderMemory,
  type LoaderPlan,
  type LoaderStats,
  planLoader,
  VideoClassificationLoader,
  videoClassificationLoader,
} from "./src/loader/loader.ts";
export type { BatchingOptions, LoaderState } from "./src/loader/loader_state.ts";
export {
  type ContactSheet,
  contactSheet,
  type Preview,
  previewHtml,
  type PreviewOptions,
  type SheetOptions,
} from "./src/loader/preview.ts";
export type { RgbImage } from "./src/media/png.ts";
export { type ClipOptions } from "./src/loader/clip_options.ts";
export {
  type DecodeLessOptions,
  LOADER_OPTIONS,
  type LoaderOptions,
  type OnClipError,
  type ResolvedLoaderOptions,
  resolveLoaderOptions,
  type StageConcurrency,
} from "./src/loader/loader_options.ts";
// Options declared once: the kinds of entry of LOADER_OPTIONS and SERVER_OPTIONS
export {
  type BooleanOption,
  type CustomOption,
  type EitherOption,
  type EnumOption,
  type GroupOption,
  type IntegerOption,
  type NumberOption,
  type NumbersOption,
  type OptionBase,
  type OptionSpec,
  type OptionTable,
  type StringOption,
  type Vocabulary,
} from "./src/options.ts";
export type {
  AudioSpec,
  AudioStatus,
  ClipDtype,
  ClipOutcome,
  ClipSpec,
  FrameKind,
  FrameSampling,
  Interpolation,
  ResizeMode,
} from "./src/loader/clip_spec.ts";
export type { ClipFailure } from "./src/loader/clip_failure.ts";
export type { WorkerMemory } from "./src/loader/clip_worker.ts";
export type { NativeObjectCounts } from "./src/media/av_objects.ts";
export type { FrontArgs } from "./src/loader/front.ts";
export type { ClipCounts, ClipEpochStats, ClipStats } from "./src/loader/clip_stats.ts";
export type { PhaseStats, ProfileStats } from "./src/loader/clip_profile.ts";
export type { Batch, BatchDevice, BatchLayout, ClipMeta } from "./src/loader/collate.ts";
export { cacheLoader, type CacheLoaderOptions } from "./src/loader/cache_loader.ts";

// Datasets and sampling
export {
  datasetFromDirectory,
  datasetFromManifest,
  openDataset,
  type SkippedFile,
  type VideoDataset,
  type VideoItem,
} from "./src/dataset/dataset.ts";
export type { MemberRef } from "./src/dataset/shards/dataset.ts";
export type { MemberLocation } from "./src/dataset/shards/index_format.ts";
export { fetchBytes, type FetchLimits, type FetchOptions } from "./src/dataset/fetch.ts";
export {
  type ClipPlacement,
  type ClipRequest,
  ClipSampler,
  clipSeed,
  type ResolvedSamplerOptions,
  type SampledVideo,
  type SamplerOptions,
  type ShardRemainder,
} from "./src/dataset/sampler.ts";
export {
  type DatasetIndex,
  indexDataset,
  type IndexedVideo,
  type IndexFailure,
  type IndexOptions,
} from "./src/dataset/video_index.ts";
export { makeSyntheticDataset, type SyntheticDatasetOptions } from "./src/prep/synthetic.ts";

// Serving batches to trainers in other processes (PyTorch: python/)
export { BatchServer, serveLoader, type ServeOptions, type ServeStats } from "./src/serve/server.ts";
export type { LoaderFactory, LoaderRequest } from "./src/serve/session_host.ts";
export type { SessionStats } from "./src/serve/session_stats.ts";
export type { DataWaitStats } from "./src/serve/data_wait.ts";
export type { NodeStats } from "./src/serve/node_hub.ts";
export type { LaneShareStats } from "./src/loader/lane_share.ts";
export { SERVE_PROTOCOL_VERSION } from "./src/serve/protocol.ts";
export { SERVER_OPTIONS } from "./src/serve/options.ts";
export type { SlotRingStats } from "./src/memory/slot_ring.ts";

// Tuning targets: what a module for `sluice tune` exports (the search itself: `@sluice/sluice/tune`)
export {
  choice,
  type ChoiceParam,
  type ChoiceValue,
  type Config,
  type ConfigOf,
  int,
  type IntParam,
  type Param,
  type ParamOptions,
  type SearchSpace,
  type ValueOfParam,
} from "./src/tune/space.ts";
export { defineTuning, type TrialContext, type TrialLoader, type TuneTarget } from "./src/tune/target.ts";

// Checking files and the machine
export {
  type AudioStreamInfo,
  type MediaInfo,
  probe,
  type ProbeOptions,
  type StreamInfo,
  type VideoStreamInfo,
} from "./src/media/probe.ts";
export type { MediaInput } from "./src/media/source.ts";
export { type FfmpegInfo, ffmpegInfo } from "./src/media/ffmpeg.ts";
export { type NvdecAvailability, nvdecAvailable } from "./src/nvdec/available.ts";

// The stats a loader reports (its pipeline's and its backend child's), their text form, and the hooks that carry
// them out (`LoaderOptions.hooks`)
export { formatStats, type FormatStatsOptions } from "./src/pipeline/format_stats.ts";
export { jsonlStatsHook, type PipelineEvent, type PipelineHook } from "./src/pipeline/hooks.ts";
export type { MaxFailures, StageControl } from "./src/pipeline/stage.ts";
export type {
  ControllerDecision,
  ControllerStats,
  PipelineStats,
  QueueCounters,
  StageBound,
  StageKind,
  StageStats,
  StageTotals,
} from "./src/pipeline/stats.ts";
export type { AutoConcurrencyOptions, AutoConfig } from "./src/pipeline/auto_policy.ts";
export type { BackendStats, ChildStats } from "./src/backend/backend_stats.ts";

// Errors: one root, a class per cause; each keeps its class across Workers and processes
export {
  BackendError,
  BackendExitedError,
  BackendStalledError,
  ClipError,
  CudaError,
  DatasetError,
  EncoderNotFoundError,
  FetchError,
  type FetchPhase,
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
  type StageError,
  WorkerCrashedError,
} from "./src/errors.ts";
