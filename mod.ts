/**
 * sluice: keeps GPUs fed with video. A pipeline of stages (sample → fetch → demux → decode → resize → batch),
 * each with its own concurrency, calling FFmpeg and NVIDIA's decoder directly through `Deno.dlopen`.
 *
 * This module only re-exports; behaviour lives in `src/`, bindings in `ffi/`.
 * @module
 */

// Errors, and how they keep their class across Workers and processes
export {
  deserializeError,
  type ErrorClass,
  InvalidArgumentError,
  LibraryNotFoundError,
  LibraryVersionError,
  MediaError,
  ProtocolError,
  registerErrorClass,
  type SerializedError,
  type SerializedValue,
  serializeError,
  SluiceError,
} from "./src/errors.ts";

// FFmpeg libraries
export { type FfmpegInfo, ffmpegInfo } from "./src/media/ffmpeg.ts";

// Subprocess backend
export {
  BackendSource,
  type BackendStats,
  type ChildStats,
  spawnBackend,
  type SpawnBackendOptions,
} from "./src/backend/spawn.ts";
export { BackendError, BackendExitedError, BackendStalledError } from "./src/errors.ts";
export { PROTOCOL_VERSION } from "./src/backend/protocol.ts";

// Probing and demuxing
export {
  type AudioStreamInfo,
  type MediaInfo,
  probe,
  type ProbeOptions,
  type StreamInfo,
  type VideoStreamInfo,
} from "./src/media/probe.ts";
export { type DemuxOptions, demuxVideo, type TimeWindow } from "./src/media/demux.ts";
export {
  type CodecInfo,
  inWindow,
  NOPTS,
  ptsToSeconds,
  VideoPackets,
  type VideoPacketsInit,
} from "./src/media/packets.ts";
export { PACKETS_FORMAT_VERSION } from "./src/media/packet_format.ts";
export type { MediaInput } from "./src/media/source.ts";
export {
  type NvdecAvailability,
  nvdecAvailable,
  nvdecConcurrency,
  selectDecoder,
} from "./src/nvdec/available.ts";
export { decodeVideoNvdec, type NvdecOptions, releaseDecoderNvdec } from "./src/nvdec/decoder.ts";
export { CudaBuffer, CudaFrames, type NvdecPixelFormat } from "./src/nvdec/cuda_buffer.ts";
export { toCuda } from "./src/nvdec/to_cuda.ts";
export { CudaError, NvdecUnsupportedError } from "./src/errors.ts";

// CPU decoding
export { type DecodeOptions, decodeVideo, releaseDecoder } from "./src/media/decode.ts";
export type { SamplingOptions } from "./src/media/frame_select.ts";
export type { CropRect } from "./src/media/crop.ts";
export {
  frameAt,
  type PixelFormat,
  type PlaneLayout,
  transferables,
  type VideoFrames,
} from "./src/media/frames.ts";

// Datasets, samplers and loaders
export {
  datasetFromDirectory,
  datasetFromManifest,
  openDataset,
  type SkippedFile,
  type VideoDataset,
  type VideoItem,
} from "./src/data/dataset.ts";
export { fetchBytes, type FetchOptions } from "./src/data/fetch.ts";
export {
  type ClipPlacement,
  type ClipRequest,
  ClipSampler,
  clipSeed,
  type ResolvedSamplerOptions,
  type SampledVideo,
  type SamplerOptions,
  type ShardRemainder,
} from "./src/data/sampler.ts";
export {
  type DatasetIndex,
  indexDataset,
  type IndexedVideo,
  type IndexFailure,
  type IndexOptions,
} from "./src/data/video_index.ts";
export {
  type LoaderMemory,
  type LoaderPlan,
  type LoaderStats,
  planLoader,
  VideoClassificationLoader,
  videoClassificationLoader,
} from "./src/data/loader.ts";
export {
  type ClipOptions,
  type DecodeLessOptions,
  type LoaderOptions,
  type OnClipError,
  type StageConcurrency,
} from "./src/data/loader_options.ts";
export type {
  ClipDtype,
  ClipOutcome,
  ClipSpec,
  FrameSampling,
  Interpolation,
  ResizeMode,
} from "./src/data/clip_spec.ts";
export type { ClipFailure } from "./src/data/clip_failure.ts";
export type { FrontArgs } from "./src/data/front.ts";
export type { ClipCounts, ClipEpochStats, ClipStats } from "./src/data/clip_stats.ts";
export {
  type Batch,
  type BatchLayout,
  type ClipBase,
  type ClipMeta,
  collate,
  type DecodedClip,
  type FilledClip,
} from "./src/data/collate.ts";
export { cacheLoader, type CacheLoaderOptions } from "./src/data/cache_loader.ts";
export {
  encodeSyntheticVideo,
  makeSyntheticDataset,
  type PatternReading,
  readPattern,
  type SyntheticDatasetOptions,
  type SyntheticVideoOptions,
} from "./src/data/synthetic.ts";
export { DatasetError, FetchError, type FetchPhase } from "./src/errors.ts";

// Serving batches to trainers in other processes (PyTorch: python/)
export {
  BatchServer,
  type LoaderFactory,
  type LoaderRequest,
  serveLoader,
  type ServeOptions,
  type ServeStats,
  type SessionStats,
} from "./src/serve/server.ts";
export { SERVE_PROTOCOL_VERSION } from "./src/serve/protocol.ts";
export type { SlotRingStats } from "./src/serve/slot_ring.ts";
export { ServeError } from "./src/errors.ts";

// Pipelines
export {
  type AggregateOptions,
  type AutoConcurrencyOptions,
  type BuildOptions,
  type Clock,
  collectTransferables,
  CONSUMER,
  type ControllerDecision,
  type ControllerStats,
  type Executor,
  formatStats,
  type FormatStatsOptions,
  jsonlStatsHook,
  LatencySketch,
  mainThread,
  type MaxFailures,
  type Output,
  type PipeFn,
  Pipeline,
  PipelineBuilder,
  type PipelineEvent,
  type PipelineHook,
  type PipelineStats,
  type PipeOptions,
  type QueueCounters,
  realClock,
  SinkBuilder,
  type SinkOptions,
  type SourceOptions,
  type StageBound,
  type StageControl,
  type StageKind,
  type StageStats,
  type TaskContext,
  TRANSFER,
  transferable,
  type Transferring,
  WorkerPool,
  type WorkerPoolOptions,
} from "./src/pipeline/mod.ts";
export { PipelineFailure, PipelineStoppedError, type StageError, WorkerCrashedError } from "./src/errors.ts";

// Dataset preparation: transcode, shards, cold-cache measurement
export { EncoderNotFoundError, ShardError } from "./src/errors.ts";
export {
  outputSize,
  type TranscodeOptions,
  type TranscodeResult,
  transcodeVideo,
  transcodeVideoSync,
} from "./src/prep/transcode.ts";
export { ENCODERS, type EncoderSpec, type EncoderSpeed, type TargetCodec } from "./src/prep/encoder.ts";
export {
  transcodeDataset,
  type TranscodeDatasetOptions,
  type TranscodeSummary,
} from "./src/prep/transcode_dataset.ts";
export type { TaskOutcome } from "./src/prep/transcode_worker.ts";
export type { OutputFacts } from "./src/prep/output_check.ts";
export type { ProgressSnapshot } from "./src/prep/progress.ts";
export { parseWorkShard, resolveWorkShard, type WorkShard } from "./src/prep/work_shard.ts";
export { findShardManifests, mergeManifests, type MergeOptions, type MergeReport } from "./src/prep/merge.ts";
export { type PackOptions, packShards, type PackSummary, parseByteSize } from "./src/prep/pack.ts";
export { type VerifyReport, verifyShard } from "./src/prep/verify_shard.ts";
export {
  type OpenedShard,
  type OpenedShards,
  openShards,
  readMember,
  readSampleMeta,
  readSampleVideo,
  shardOrder,
  type ShardReadOptions,
  type StreamedSample,
  type StreamOptions,
  streamSamples,
} from "./src/shards/reader.ts";
export type {
  MemberLocation,
  ShardEntry,
  ShardIndex,
  ShardSample,
  ShardSet,
} from "./src/shards/index_format.ts";
export {
  type MemberRef,
  type ShardDataset,
  shardDataset,
  type ShardVideoItem,
} from "./src/shards/dataset.ts";
export { benchIo, type BenchIoOptions, type IoPass } from "./src/prep/bench_io.ts";
export { canDropPageCache, dropFromPageCache } from "./src/prep/page_cache.ts";

// Tuning (`sluice tune`)
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
export type { StageWindow, TrialMetrics } from "./src/tune/measure.ts";
export type { TrialOutcome, TrialRequest, TrialRunner } from "./src/tune/runner.ts";
export type {
  Curve,
  CurvePoint,
  Evaluated,
  Move,
  SearchOptions,
  SearchResult,
  TrialPhase,
  TrialRecord,
} from "./src/tune/search.ts";
export { tune, type TuneOptions, type TuneResult } from "./src/tune/tune.ts";
