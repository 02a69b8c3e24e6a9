/**
 * Preparing a dataset for training: store it at the training shape and read it fast. {@link transcodeDataset}
 * re-encodes a directory tree or manifest to one height, frame rate, codec and keyframe interval (resumable,
 * shardable across machines with {@link parseWorkShard}, joined with {@link mergeManifests});
 * {@link packShards} packs it into tar shards with sidecar indexes (WebDataset-compatible) that
 * {@link verifyShard} checks (`openShards` and `streamSamples` in `@sluice/sluice/dataset` read shards back, and
 * the loader opens a shard directory like any dataset); {@link benchIo} measures read throughput with a cold page cache. The same
 * steps are `sluice transcode`, `sluice manifest merge`, `sluice pack`, `sluice verify` and `sluice bench-io`.
 *
 * @example Transcode, pack, verify, stream
 * ```ts
 * import { makeSyntheticDataset } from "@sluice/sluice";
 * import { openShards, streamSamples } from "@sluice/sluice/dataset";
 * import { packShards, transcodeDataset, verifyShard } from "@sluice/sluice/prep";
 *
 * const dir = await Deno.makeTempDir();
 * makeSyntheticDataset(`${dir}/raw`, { videos: 8, classes: 2, durationSec: 2, width: 320, height: 240 });
 * const t = await transcodeDataset({
 *   input: `${dir}/raw`,
 *   outDir: `${dir}/k128`,
 *   height: 128, // pixels, after rotation
 *   fps: 15,
 *   codec: "h264",
 *   gop: 15, // a keyframe a second
 * });
 * const p = await packShards({ manifest: t.manifest, outDir: `${dir}/shards`, shardSize: 128 * 1024 });
 * for (const s of p.shards) console.log(s.tar, (await verifyShard(`${dir}/shards/${s.tar}`)).ok);
 * for await (const s of streamSamples(await openShards(`${dir}/shards`), { seed: 1, epoch: 0 })) {
 *   console.log(s.sample.key, s.video.length, s.meta.class);
 * }
 * ```
 * @module
 */

export {
  outputSize,
  type TranscodeOptions,
  type TranscodeResult,
  transcodeVideo,
  transcodeVideoSync,
} from "./transcode.ts";
export { ENCODERS, type EncoderSpec, type EncoderSpeed, type TargetCodec } from "./encoder.ts";
export {
  transcodeDataset,
  type TranscodeDatasetOptions,
  type TranscodeSummary,
} from "./transcode_dataset.ts";
export type { TaskOutcome } from "./transcode_worker.ts";
export type { OutputFacts } from "./output_check.ts";
export type { ProgressSnapshot } from "./progress.ts";
export { parseWorkShard, resolveWorkShard, type WorkShard } from "./work_shard.ts";
export { findShardManifests, mergeManifests, type MergeOptions, type MergeReport } from "./merge.ts";
export { type PackOptions, packShards, type PackSummary, parseByteSize } from "./pack.ts";
export { type VerifyReport, verifyShard } from "./verify_shard.ts";
export { benchIo, type BenchIoOptions, type IoPass } from "./bench_io.ts";
export { canDropPageCache, dropFromPageCache } from "./page_cache.ts";
export {
  encodeSyntheticVideo,
  type PatternReading,
  readPattern,
  type SyntheticVideoOptions,
} from "./synthetic.ts";
