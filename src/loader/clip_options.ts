/**
 * What one clip becomes, declared once: the `clip` options ({@link ClipOptions}, their table
 * {@link CLIP_OPTIONS}), {@link clipSpecOf} turning them, resolved at the loader's door, into the one `ClipSpec`
 * every decode Worker follows, and the default clip window ({@link defaultClipDuration}). See docs/clips.md.
 * @module
 */

import type { OptionMessagePart } from "../errors.ts";
import { optionError, type OptionTable, tsVocabulary } from "../options.ts";
import type { OptionsDisagreement, ResolvedOf } from "../option_types.ts";
import type { ClipDtype, ClipSpec, FrameSampling, Interpolation, ResizeMode } from "./clip/clip_spec.ts";
import type { BatchLayout } from "./batch/collate.ts";

/**
 * What one clip becomes; see docs/clips.md for exactly which frames a clip holds. Ranges and
 * defaults: {@link CLIP_OPTIONS}.
 */
export interface ClipOptions {
  /** Frames per clip. */
  numFrames: number;
  /** Output width in pixels. */
  width: number;
  /** Output height in pixels. */
  height: number;
  /**
   * How the frames are chosen inside the clip's window: `"consecutive"` (the video's own frames, one after
   * another), `"rate"` (resampled to `frameRate`), `"uniform"` (spread evenly over the window), `"stride"`
   * (every `stride`-th frame). By default `"rate"` with `frameRate`, `"stride"` with `stride`, else
   * `"consecutive"`.
   */
  sampling?: FrameSampling["kind"];
  /** `"rate"` only: frames per second. */
  frameRate?: number;
  /** `"stride"` only: take every `stride`-th frame. */
  stride?: number;
  /** How a frame becomes `width`×`height` (see `ResizeMode`). */
  resize?: ResizeMode;
  /** `"random-resized-crop"`: fraction of the frame's area, `[min, max]`. */
  scale?: [number, number];
  /** `"random-resized-crop"`: aspect ratio range, `[min, max]`. */
  ratio?: [number, number];
  /** Probability of mirroring a clip. */
  flipProbability?: number;
  /** The resize filter. */
  interpolation?: Interpolation;
  /** Sample type: bytes, or floats normalised with `mean` and `std`. */
  dtype?: ClipDtype;
  /**
   * `"float32"` only: per-channel (R, G, B) mean and standard deviation on the `[0, 1]` scale; samples are
   * `(x / 255 - mean) / std`. The defaults leave samples in `[0, 1]`: pass your model's values to normalise.
   */
  mean?: [number, number, number];
  /** See `mean`. */
  std?: [number, number, number];
  /** Apply the video's display rotation. */
  rotate?: boolean;
  /** A clip whose padding would exceed this fraction of `numFrames` fails. */
  maxPadFraction?: number;
}

/** {@link ClipOptions}, declared once. */
export const CLIP_OPTIONS = {
  numFrames: {
    kind: "integer",
    min: 1,
    max: 10_000,
    required: true,
    doc: "frames per clip",
    flag: "frames",
    python: "num_frames",
  },
  width: {
    kind: "integer",
    min: 1,
    max: 16384,
    required: true,
    doc: "clip frame width",
    flag: "width",
    python: "width",
  },
  height: {
    kind: "integer",
    min: 1,
    max: 16384,
    required: true,
    doc: "clip frame height",
    flag: "height",
    python: "height",
  },
  sampling: {
    kind: "enum",
    values: ["consecutive", "rate", "uniform", "stride"],
    defaultText: "rate with a frame rate, stride with a stride, else consecutive",
    doc: "how a clip's frames are chosen in its window",
  },
  frameRate: {
    kind: "number",
    above: 0,
    max: 1000,
    defaultText: "each video's own rate",
    doc: "resample clips to this many frames per second (sampling rate)",
    flag: "frame-rate",
    python: "frame_rate",
  },
  stride: { kind: "integer", min: 1, max: 1000, doc: "take every stride-th frame (sampling stride)" },
  resize: {
    kind: "enum",
    values: ["stretch", "short-side", "random-crop", "random-resized-crop"],
    default: "stretch",
    doc: "how a frame becomes width × height",
  },
  scale: {
    kind: "numbers",
    length: 2,
    above: 0,
    max: 1,
    range: true,
    default: [0.08, 1],
    doc: "random-resized-crop: fraction of the frame's area",
  },
  ratio: {
    kind: "numbers",
    length: 2,
    above: 0,
    range: true,
    default: [3 / 4, 4 / 3],
    doc: "random-resized-crop: aspect ratio range",
  },
  flipProbability: { kind: "number", min: 0, max: 1, default: 0, doc: "probability of mirroring a clip" },
  interpolation: {
    kind: "enum",
    values: ["bilinear", "bicubic", "area"],
    default: "bilinear",
    doc: "resize filter",
  },
  dtype: {
    kind: "enum",
    values: ["uint8", "float32"],
    default: "uint8",
    doc: "sample type: bytes, or floats (x / 255 - mean) / std",
  },
  mean: { kind: "numbers", length: 3, default: [0, 0, 0], doc: "float32: per-channel (R, G, B) mean" },
  std: {
    kind: "numbers",
    length: 3,
    above: 0,
    default: [1, 1, 1],
    doc: "float32: per-channel standard deviation",
  },
  rotate: { kind: "boolean", default: true, doc: "apply the video's display rotation" },
  maxPadFraction: {
    kind: "number",
    min: 0,
    max: 1,
    default: 0.5,
    doc: "a clip whose padding would exceed this fraction of its frames fails",
  },
} as const satisfies OptionTable;

// ClipOptions is this table written for its readers: an option the two do not write the same (missing from one, or of
// another type) fails `deno task check` here, naming it.
const _agrees: Record<OptionsDisagreement<ClipOptions, typeof CLIP_OPTIONS>, never> = {};

/** The `clip` options as the loader's door resolves them (every default filled in). */
export type ResolvedClipOptions = ResolvedOf<typeof CLIP_OPTIONS>;

/** How the loader's door names the clip's options (as TypeScript does). */
const WORDS = tsVocabulary("loader: ");

/**
 * The `ClipSpec` of `clip` options the loader's door resolved and the batch layout: the sampling they ask for (by
 * default `"rate"` with a frame rate, `"stride"` with a stride, else `"consecutive"`).
 * @param given the clip options as given (mean and std given with uint8 samples are refused, even at their defaults)
 * @throws {InvalidArgumentError} for options that contradict each other: a frame rate or stride with another
 *   sampling, `"rate"` without a frame rate, `"stride"` without a stride, mean or std with uint8 samples
 */
export function clipSpecOf(
  c: ResolvedClipOptions,
  layout: BatchLayout,
  given?: Partial<ClipOptions>,
): ClipSpec {
  const door: OptionMessagePart = { door: WORDS.prefix };
  const kind = c.sampling ??
    (c.frameRate !== undefined ? "rate" : c.stride !== undefined ? "stride" : "consecutive");
  const fail = (option: string, value: unknown, ...says: OptionMessagePart[]) =>
    optionError(WORDS, { option: `clip.${option}`, value, says: [door, ...says] });
  const only = (k: "frameRate" | "stride", want: string) =>
    fail(
      k,
      c[k],
      { option: `clip.${k}` },
      " applies to ",
      { option: "clip.sampling" },
      ` "${want}" only (sampling is "${kind}")`,
    );
  if (c.frameRate !== undefined && kind !== "rate") throw only("frameRate", "rate");
  if (c.stride !== undefined && kind !== "stride") throw only("stride", "stride");
  let sampling: FrameSampling;
  if (kind === "rate") {
    if (c.frameRate === undefined) {
      throw fail("frameRate", undefined, { option: "clip.sampling" }, ' "rate" needs ', {
        option: "clip.frameRate",
      });
    }
    sampling = { kind, frameRate: c.frameRate };
  } else if (kind === "stride") {
    if (c.stride === undefined) {
      throw fail("stride", undefined, { option: "clip.sampling" }, ' "stride" needs ', {
        option: "clip.stride",
      });
    }
    sampling = { kind, stride: c.stride };
  } else {
    sampling = { kind };
  }
  if (c.dtype !== "float32" && (given?.mean !== undefined || given?.std !== undefined)) {
    const which = given?.mean !== undefined ? "mean" : "std";
    throw fail(
      which,
      given?.[which],
      { option: "clip.mean" },
      " and ",
      { option: "clip.std" },
      " apply to ",
      { option: "clip.dtype" },
      ' "float32" only',
    );
  }
  return {
    numFrames: c.numFrames,
    sampling,
    width: c.width,
    height: c.height,
    resize: c.resize,
    scale: [c.scale[0], c.scale[1]],
    ratio: [c.ratio[0], c.ratio[1]],
    flipProbability: c.flipProbability,
    interpolation: c.interpolation,
    planar: layout === "BCTHW",
    dtype: c.dtype,
    mean: [c.mean[0], c.mean[1], c.mean[2]],
    std: [c.std[0], c.std[1], c.std[2]],
    rotate: c.rotate,
    maxPadFraction: c.maxPadFraction,
  };
}

/**
 * The default clip window: the time `numFrames` frames take at the slowest indexed video's rate (25 fps when
 * none is known), `× stride`, or at `frameRate`; `Infinity` (the whole video) for `"uniform"` sampling.
 */
export function defaultClipDuration(spec: ClipSpec, videoRates: readonly number[]): number {
  const s = spec.sampling;
  if (s.kind === "uniform") return Infinity;
  if (s.kind === "rate") return spec.numFrames / s.frameRate;
  const known = videoRates.filter((r) => r > 0);
  const rate = known.length > 0 ? Math.min(...known) : 25;
  return spec.numFrames * (s.kind === "stride" ? s.stride : 1) / rate;
}
