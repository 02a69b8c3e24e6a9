/**
 * `sluice load DATASET`: runs the video loader, draws the live view on a terminal, prints the summary (or
 * `--json`), and appends the loader pipeline's stats to a JSONL file with `--stats-jsonl` (or the
 * `SLUICE_STATS_JSONL` environment variable). Ctrl-C stops it: the summary of the batches so far is printed and
 * the exit status is 130.
 * @module
 */

import { jsonlStatsHook } from "../../pipeline/hooks.ts";
import { defineCommand, UsageError } from "../args.ts";
import { formatSummary, runLoad } from "../load.ts";
import { print, terminalSize, wrapLine } from "../tty.ts";
import { asUsageError, LOADER_FLAGS, loaderOptionsOf } from "./loader_options.ts";

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
    ...LOADER_FLAGS,
    batches: { type: "integer", min: 1, defaultText: "whole epochs", help: "stop after this many batches" },
    epochs: { type: "integer", min: 1, max: 1_000_000, defaultText: "1", help: "epochs to run" },
    refresh: {
      type: "integer",
      default: 500,
      min: 20,
      max: 60_000,
      help: "milliseconds between live redraws",
    },
    json: { type: "boolean", help: "print the summary as one JSON object (no live view)" },
    "stats-jsonl": {
      type: "string",
      defaultText: "$SLUICE_STATS_JSONL if set, else none",
      help: "append the loader pipeline's stats to this file, one JSON line per report (every 10 s, and at " +
        "the end of each epoch)",
    },
  },
  examples: [
    "load .cache/demo/videos --batch-size 8 --frames 8 --width 112 --height 112 --batches 100 --backend subprocess",
    "load train.csv --epochs 2 --batch-size 16 --frames 16 --width 128 --height 128 --json",
    "load train.csv --epochs 3 --stats-jsonl stats.jsonl",
  ],
  async run({ values, positionals }) {
    if (values.batches !== undefined && values.epochs !== undefined) {
      throw new UsageError("give --batches or --epochs, not both");
    }
    const ac = new AbortController();
    const onSigint = ctrlCHandler(() => ac.abort(), () => Deno.exit(130));
    Deno.addSignalListener("SIGINT", onSigint);
    const statsJsonl = values["stats-jsonl"] ?? envStatsJsonl();
    try {
      const summary = await runLoad({
        ...loaderOptionsOf(positionals[0], values),
        hooks: statsJsonl === undefined ? [] : [jsonlStatsHook(statsJsonl)],
        batches: values.batches,
        epochs: values.epochs ?? 1,
        live: values.json ? undefined : Deno.stderr,
        refreshMs: values.refresh,
        signal: ac.signal,
      }).catch((e) => {
        throw asUsageError(e);
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

/** SIGINTs this close to the first are one Ctrl-C delivered twice (see {@link ctrlCHandler}). */
export const SAME_CTRL_C_MS = 1000;

/**
 * The `load` command's SIGINT handler: the first Ctrl-C calls `stop` (the run ends and prints its summary so
 * far); another, {@link SAME_CTRL_C_MS} or more after it, calls `leave` (exit at once). One sooner is the same
 * Ctrl-C delivered twice: under `deno task` this process gets the terminal's (it is in the foreground process
 * group) and then the one `deno task` forwards, 1-10 ms apart; taken for a second Ctrl-C, it left without the
 * summary whenever the two were not merged into one event.
 * @param now the clock, ms
 * @returns the listener for `Deno.addSignalListener("SIGINT", ...)`
 */
export function ctrlCHandler(stop: () => void, leave: () => void, now = () => performance.now()): () => void {
  let first: number | null = null;
  return () => {
    const t = now();
    if (first === null) {
      first = t;
      stop();
    } else if (t - first >= SAME_CTRL_C_MS) leave();
  };
}

/** The JSONL path from the `SLUICE_STATS_JSONL` environment variable, if set (and readable). */
function envStatsJsonl(): string | undefined {
  try {
    return Deno.env.get("SLUICE_STATS_JSONL") || undefined;
  } catch {
    return undefined; // no --allow-env: no JSONL
  }
}
