/**
 * `planLoader`: what the loader decides before it builds its pipeline (the dataset opened and indexed, the videos
 * left out, the sampler, the clip spec, the front half's arguments), shared by the loader and hand-built
 * pipelines.
 * @module
 */

import { errorText, fmtSec, InvalidArgumentError } from "../errors.ts";
import type { ClipSpec } from "./clip/clip_spec.ts";
import { openDataset, type VideoDataset } from "../dataset/dataset.ts";
import { ClipSampler, type SampledVideo } from "../dataset/sampler.ts";
import { type IndexFailure, indexVideos } from "../dataset/video_index.ts";
import type { FrontArgs } from "./front/front.ts";
import { audioSpecOf, type ResolvedLoaderOptions } from "./loader_options.ts";
import { defaultClipDuration } from "./clip_options.ts";

/**
 * What the loader decides before it builds its pipeline: the dataset, the videos left out, the sampler, the clip
 * spec and the front half's arguments. {@link planLoader} makes it; the loader and hand-built pipelines (see
 * `examples/video_classification.ts`) start from it.
 */
export interface LoaderPlan {
  /** The dataset, opened. */
  dataset: VideoDataset;
  /** Videos that could not be indexed (left out of every epoch). */
  indexFailures: IndexFailure[];
  /** The sampler planning the epochs over the indexed videos. */
  sampler: ClipSampler;
  /** What each clip becomes, defaults applied. */
  spec: ClipSpec;
  /** The front half's arguments (in this process, or for the backend child). */
  front: FrontArgs;
}

/**
 * Opens and indexes the dataset (logging skipped files and videos left out) and plans the loader; see
 * {@link LoaderPlan}. The options were resolved at a door (`resolveLoaderOptions`) and are not checked again.
 * @param o the loader's options, resolved
 * @returns the plan: the dataset, the sampler over the indexed videos, the clip spec, the front's arguments
 * @throws {DatasetError} for a dataset that cannot be read
 * @throws {InvalidArgumentError} when no video could be indexed
 */
export async function planLoader(o: ResolvedLoaderOptions): Promise<LoaderPlan> {
  const log = o.log;
  const dataset = typeof o.dataset === "string" ? await openDataset(o.dataset) : o.dataset;
  const skipped = dataset.skipped ?? [];
  for (const s of skipped.slice(0, 10)) log(`sluice: dataset: skipped ${s.path}: ${s.reason}`);
  if (skipped.length > 10) {
    log(`sluice: dataset: ${skipped.length - 10} more files skipped (dataset.skipped)`);
  }
  const index = await indexVideos(dataset, { keyframes: o.sampler.keyframeAligned, fetch: o.fetch });
  for (const f of index.failures) log(`sluice: skipping ${f.path}: ${errorText(f.error, f.path)}`);
  const kept = index.videos.flatMap((v, i) => v === null ? [] : [i]);
  if (kept.length === 0) {
    throw new InvalidArgumentError(`${dataset.root}: no video of the dataset could be indexed`);
  }
  const ranges: SampledVideo[] = kept.map((i) => {
    const v = index.videos[i]!;
    return v.keyframes
      ? { start: v.start, end: v.end, keyframes: v.keyframes }
      : { start: v.start, end: v.end };
  });
  const rates = kept.map((i) => index.videos[i]!.frameRate);
  const spec: ClipSpec = { ...o.spec };
  const clipDurationSec = o.sampler.clipDurationSec ?? defaultClipDuration(spec, rates);
  if (o.audio !== undefined) spec.audio = audioSpecOf(o.audio, clipDurationSec);
  const sampler = ClipSampler.fromResolved(ranges, { ...o.sampler, clipDurationSec });
  warnUncovered(spec, clipDurationSec, rates, log);
  const front: FrontArgs = {
    items: kept.map((i) => dataset.items[i]),
    ranges,
    datasetIndex: kept,
    sampler: { ...sampler.options },
    firstEpoch: o.firstEpoch,
    spec,
    concurrency: { fetch: o.concurrency.fetch, demux: o.concurrency.demux },
    fetch: o.fetch,
    ordered: o.ordered,
    shareHorizon: shareHorizon(spec, o),
    profile: o.profile,
  };
  return { dataset, indexFailures: index.failures, sampler, spec, front };
}

/**
 * How far apart (in the epoch's output) two clips decoded in one pass may be: as many clips as
 * `decodeLess.onceMemory` holds (0 when `decodeLess.once` is off, or the order is not kept).
 */
function shareHorizon(spec: ClipSpec, o: ResolvedLoaderOptions): number {
  if (!o.decodeLess.once || !o.ordered) return 0;
  const clipBytes = spec.numFrames * 3 * spec.width * spec.height * (spec.dtype === "float32" ? 4 : 1) +
    (spec.audio === undefined ? 0 : spec.audio.channels * spec.audio.samples * 4);
  return Math.floor(o.decodeLess.onceMemory / clipBytes);
}

/**
 * Logs one line when consecutive or strided frames cover much less of the window than it spans (e.g. 8 frames
 * at 25 fps in 4 s windows hold 0.32 s of video): the clip's `span` says what they cover.
 */
function warnUncovered(spec: ClipSpec, windowSec: number, rates: number[], log: (m: string) => void): void {
  const s = spec.sampling;
  if (s.kind !== "consecutive" && s.kind !== "stride") return;
  const known = rates.filter((r) => r > 0);
  if (known.length === 0 || !Number.isFinite(windowSec)) return;
  const fps = Math.max(...known);
  const covered = spec.numFrames * (s.kind === "stride" ? s.stride : 1) / fps;
  if (covered >= windowSec / 2) return;
  const [window, rate] = [fmtSec(windowSec), fmtSec(fps)];
  log(
    `sluice: ${spec.numFrames} ${s.kind} frames cover ${covered.toFixed(2)} s of each ${window} s window ` +
      `(at ${rate} fps): use sampling "uniform" or "rate" to spread them over the window`,
  );
}
