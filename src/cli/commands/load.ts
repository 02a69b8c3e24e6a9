/**
 * `sluice load DATASET`: runs the video loader, draws the live view on a terminal, prints the summary (or
 * `--json`). Ctrl-C stops it: the summary of the batches so far is printed and the exit status is 130.
 * @module
 */

import { defineCommand, UsageError } from "../args.ts";
import { formatSummary, runLoad } from "../load.ts";
import { print, terminalSize, wrapLine } from "../tty.ts";

const concurrency = (stage: string, dflt: number, defaultText?: string) => ({
  type: "integer" as const,
  default: dflt,
  min: 1,
  max: 256,
  defaultText,
  help: `${stage} tasks at once`,
});

/** The `load` command. */
export const loadCommand = defineCommand({
  name: "load",
  summary: "run the video loader over a dataset; report samples/s, per-stage stats and the bottleneck",
  description: "On a terminal a live view (fitted to its width) shows the per-stage table and the likely " +
    "bottleneck while it runs, with failure lines printed above it. At the end: samples/s, frames/s, the " +
    "per-stage tables, failures and peak RSS. Ctrl-C prints the summary so far and exits with status 130.",
  positionals: [{
    name: "DATASET",
    help:
      "a directory with one folder per class, a .csv or .jsonl manifest, packed shards (a directory with " +
      "shards.json, from sluice pack), or an http(s) URL of a manifest or shards.json",
  }],
  options: {
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
    batches: { type: "integer", min: 1, defaultText: "whole epochs", help: "stop after this many batches" },
    epochs: { type: "integer", min: 1, max: 1_000_000, defaultText: "1", help: "epochs to run" },
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
    refresh: {
      type: "integer",
      default: 500,
      min: 20,
      max: 60_000,
      help: "milliseconds between live redraws",
    },
    json: { type: "boolean", help: "print the summary as one JSON object (no live view)" },
  },
  examples: [
    "load .cache/demo/videos --batches 100 --backend subprocess",
    "load train.csv --epochs 2 --batch-size 16 --frames 16 --width 128 --height 128 --json",
  ],
  async run({ values, positionals }) {
    if (values.batches !== undefined && values.epochs !== undefined) {
      throw new UsageError("give --batches or --epochs, not both");
    }
    const ac = new AbortController();
    let sigints = 0;
    // The first Ctrl-C stops the run and prints the summary so far; a second one leaves at once.
    const onSigint = () => sigints++ === 0 ? ac.abort() : Deno.exit(130);
    Deno.addSignalListener("SIGINT", onSigint);
    try {
      const summary = await runLoad({
        dataset: positionals[0],
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
        batches: values.batches,
        epochs: values.epochs ?? 1,
        backend: values.backend,
        decode: values.decode,
        layout: values.layout,
        concurrency: {
          fetch: values["fetch-concurrency"],
          demux: values["demux-concurrency"],
          decode: values["decode-concurrency"],
        },
        live: values.json ? undefined : Deno.stderr,
        refreshMs: values.refresh,
        signal: ac.signal,
      });
      if (values.json) print(Deno.stdout, JSON.stringify(summary, null, 2));
      else if (!Deno.stdout.isTerminal()) print(Deno.stdout, formatSummary(summary));
      else {
        const width = terminalSize().columns - 1;
        print(
          Deno.stdout,
          formatSummary(summary, width).split("\n").flatMap((l) => wrapLine(l, width)).join("\n"),
        );
      }
      return summary.interrupted ? 130 : 0;
    } finally {
      Deno.removeSignalListener("SIGINT", onSigint);
    }
  },
});
