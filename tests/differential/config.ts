/**
 * A differential configuration: a seeded random dataset (manifest rows over shared and made videos) and random
 * loader options. Configuration `index` of run `seed` is a pure function of the two (and of the shared files
 * present), so `deno task differential --seed S --config I` replays it; a configuration is plain JSON, so a
 * mismatch's repro stores it whole.
 *
 * The options cover every sampling kind (frame rates, strides), clip durations and placements (random, uniform,
 * keyframe-aligned, manifest ranges), every resize mode, flips, both layouts, both dtypes, rotation on and off,
 * audio (rates, mono and stereo), clips per video, both backends (in-process and subprocess), ordered and not,
 * shuffle, grouping and the shuffle buffer, batch slots, the decode-less switches, skip and replace of failed
 * clips, `dropLast`, and a resume point (the epoch stopped after a batch, its state saved, a new loader resumed
 * from it).
 * @module
 */
import type { LoaderOptions } from "../../src/loader/loader_options.ts";
import { manifest } from "../helpers/media.ts";
import { caseSeed, Rng } from "../fuzz/mutate.ts";
import { drawSource, sharedPool, type SourceRef } from "./sources.ts";

/**
 * One manifest row: its video, label and (sometimes) the range its clips are drawn from, as fractions of the
 * video stream's extent (from its first frame to its end: an MPEG-TS stream starts at 1.4 s), made seconds when
 * the manifest is written.
 */
export interface Row {
  source: SourceRef;
  label: number;
  range?: [number, number];
}

/** The options a configuration gives the loader (the dataset is its manifest; `log` is the harness's). */
export type DiffOptions = Omit<LoaderOptions, "dataset" | "log" | "hooks" | "resume">;

/** One configuration; see the module docs. */
export interface DiffConfig {
  seed: number;
  index: number;
  rows: Row[];
  options: DiffOptions;
  /** Epochs run (the loader iterated this many times). */
  epochs: number;
  /** Stop epoch `epoch` after `batches` batches, save the state and go on in a new loader resumed from it. */
  resume?: { epoch: number; batches: number };
}

/** The duration of a row's video as the harness knows it before opening it. */
function duration(ref: SourceRef): number {
  if ("made" in ref) return ref.made.durationSec;
  return manifest().find((m) => m.file === ref.shared)?.duration_s ?? 1;
}

/** Configuration `index` of run `seed`. */
export function drawConfig(seed: number, index: number): DiffConfig {
  const r = new Rng(caseSeed(seed, index));
  const pool = sharedPool();
  const rows: Row[] = Array.from({ length: 1 + r.int(5) }, () => {
    const source: SourceRef = pool.length > 0 && r.chance(0.35) ? { shared: r.pick(pool) } : {
      made: drawSource(r),
    };
    const row: Row = { source, label: r.int(5) };
    if (r.chance(0.15) && duration(source) > 1) {
      const a = Math.round(r.next() * 50) / 100;
      row.range = [a, Math.round((a + (1 - a) * (0.5 + r.next() * 0.5)) * 100) / 100];
    }
    return row;
  });
  const kind = r.pick(["consecutive", "consecutive", "rate", "uniform", "stride"] as const);
  const numFrames = 1 + r.int(12);
  const clip: DiffOptions["clip"] = {
    numFrames,
    width: r.pick([16, 24, 32, 33, 40]),
    height: r.pick([16, 18, 24, 32, 35]),
    sampling: kind,
    resize: r.pick(["stretch", "short-side", "random-crop", "random-resized-crop"] as const),
    flipProbability: r.pick([0, 0.5, 1]),
    interpolation: r.pick(["bilinear", "bilinear", "bicubic", "area"] as const),
    dtype: r.chance(0.3) ? "float32" : "uint8",
    rotate: r.chance(0.8),
    maxPadFraction: r.pick([0.25, 0.5, 1]),
  };
  if (kind === "rate") clip.frameRate = r.pick([5, 10, 12.5, 24, 30]);
  if (kind === "stride") clip.stride = 2 + r.int(2);
  if (clip.dtype === "float32" && r.chance(0.5)) {
    clip.mean = [0.485, 0.456, 0.406];
    clip.std = [0.229, 0.224, 0.225];
  }
  const audio = r.chance(0.35)
    ? { sampleRate: r.pick([8000, 16000, 22050, 44100]), channels: 1 + r.int(2) }
    : undefined;
  const sampler: DiffOptions["sampler"] = {
    seed: r.int(1000),
    clipsPerVideo: 1 + r.int(3),
    placement: r.pick(["random", "uniform"] as const),
    keyframeAligned: r.chance(0.25),
    shuffle: r.chance(0.8),
    groupByVideo: r.chance(0.7),
  };
  if (r.chance(0.4)) sampler.shuffleBuffer = r.pick([0, 4, 16]);
  // Uniform sampling spreads its frames over the whole video unless given a duration (audio needs one).
  if (kind === "uniform" ? audio !== undefined || r.chance(0.5) : r.chance(0.4)) {
    sampler.clipDurationSec = r.pick([0.3, 0.5, 1, 1.5]);
  }
  const ordered = r.chance(0.85);
  const options: DiffOptions = {
    batchSize: 1 + r.int(4),
    clip,
    sampler,
    layout: r.chance(0.3) ? "BCTHW" : "BTHWC",
    backend: r.chance(0.35) ? "subprocess" : "inprocess",
    concurrency: { demux: 1 + r.int(2), decode: 1 + r.int(2) },
    ordered,
    onClipError: r.chance(0.7) ? "replace" : "skip",
    dropLast: r.chance(0.2),
    maxFailures: 1000,
  };
  if (audio !== undefined) options.audio = audio;
  if (ordered && r.chance(0.3)) options.slots = 3;
  if (r.chance(0.25)) options.decodeLess = { skip: r.chance(0.5), once: r.chance(0.5) };
  const epochs = 1 + r.int(2);
  const config: DiffConfig = { seed, index, rows, options, epochs };
  if (ordered && r.chance(0.3)) config.resume = { epoch: r.int(epochs), batches: 1 + r.int(2) };
  return config;
}
