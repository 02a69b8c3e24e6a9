/**
 * The loader's options as command-line options, declared once for every command that builds a loader
 * (`sluice load`, `sluice serve`), and their translation into `LoaderOptions`.
 * @module
 */

import type { LoaderOptions } from "../../loader/loader.ts";
import type { OptionValues } from "../args.ts";
import { MAX_CONCURRENCY, parseConcurrency } from "../values.ts";

const concurrency = (stage: string, dflt: number, defaultText?: string) => ({
  type: "string" as const,
  default: String(dflt),
  placeholder: "N|auto",
  defaultText,
  help:
    `${stage} tasks at once (1 to ${MAX_CONCURRENCY}), or auto: the pipeline's controller sets it while it runs`,
});

/** Options describing the loader: clip shape, sampling, backend, decoder, concurrency, layout. */
export const LOADER_OPTIONS = {
  "batch-size": { type: "integer", default: 8, min: 1, max: 4096, help: "clips per batch" },
  frames: { type: "integer", default: 8, min: 1, max: 1024, help: "frames per clip" },
  width: { type: "integer", default: 112, min: 1, max: 16384, help: "clip frame width" },
  height: { type: "integer", default: 112, min: 1, max: 16384, help: "clip frame height" },
  "frame-rate": {
    type: "number",
    above: 0,
    max: 1000,
    defaultText: "each video's own rate",
    help: "resample clips to this many frames per second",
  },
  "clips-per-video": {
    type: "integer",
    default: 1,
    min: 1,
    max: 100_000,
    help: "clips per video per epoch",
  },
  "clip-duration": {
    type: "number",
    above: 0,
    max: 86_400,
    defaultText: "the clip's length",
    help: "seconds of video each clip is taken from",
  },
  placement: { type: "enum", values: ["random", "uniform"], default: "random", help: "where clips start" },
  "keyframe-aligned": { type: "boolean", help: "start clips at keyframes (cheaper seeks)" },
  seed: { type: "integer", default: 0, min: 0, max: Number.MAX_SAFE_INTEGER, help: "sampler seed" },
  backend: {
    type: "enum",
    values: ["inprocess", "subprocess"],
    default: "inprocess",
    help: "where sample, fetch and demux run: this process or a Deno child",
  },
  decode: { type: "enum", values: ["cpu", "nvdec", "auto"], default: "cpu", help: "decoder" },
  "fetch-concurrency": concurrency("fetch", 8),
  "demux-concurrency": concurrency("demux", 1),
  "decode-concurrency": concurrency(
    "decode",
    navigator.hardwareConcurrency ?? 1,
    `the number of cores (${navigator.hardwareConcurrency ?? 1} here)`,
  ),
  layout: {
    type: "enum",
    values: ["BTHWC", "BCTHW"],
    default: "BTHWC",
    help: "batch layout: [B,T,H,W,3] or planar [B,3,T,H,W]",
  },
} as const;

/** The `LoaderOptions` the {@link LOADER_OPTIONS} values describe, for `dataset`. */
export function loaderOptionsOf(
  dataset: string,
  values: OptionValues<typeof LOADER_OPTIONS>,
): Omit<LoaderOptions, "log" | "hooks"> {
  return {
    dataset,
    batchSize: values["batch-size"],
    clip: {
      numFrames: values.frames,
      width: values.width,
      height: values.height,
      frameRate: values["frame-rate"],
    },
    sampler: {
      seed: values.seed,
      clipsPerVideo: values["clips-per-video"],
      clipDurationSec: values["clip-duration"],
      placement: values.placement,
      keyframeAligned: values["keyframe-aligned"],
    },
    backend: values.backend,
    decode: values.decode,
    layout: values.layout,
    concurrency: {
      fetch: parseConcurrency("fetch-concurrency", values["fetch-concurrency"]),
      demux: parseConcurrency("demux-concurrency", values["demux-concurrency"]),
      decode: parseConcurrency("decode-concurrency", values["decode-concurrency"]),
    },
  };
}
