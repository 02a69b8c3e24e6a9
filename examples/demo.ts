/**
 * `deno task demo`: makes a small synthetic labelled dataset once (cached under `.cache/demo/`, a few seconds,
 * encoded in-process through libavcodec), then runs the video loader with the subprocess backend for a few hundred
 * clips and prints the summary: samples/s, frames/s, the per-stage table, the bottleneck and peak RSS.
 * Needs no GPU and no network.
 *
 * Options: `--epochs N` (default 5), `--json`.
 * @module
 */

import { parseArgs } from "node:util";
import { makeSyntheticDataset } from "../src/data/synthetic.ts";
import { formatSummary, runLoad } from "../src/cli/load.ts";
import { print, ProgressBar } from "../src/cli/tty.ts";

/** The demo dataset's shape; a change here regenerates the cache. */
export const DEMO_DATASET = { videos: 16, classes: 4, durationSec: 4, fps: 25, width: 320, height: 240 };

/** Where the demo dataset lives. */
export const DEMO_DIR: string = decodeURIComponent(new URL("../.cache/demo", import.meta.url).pathname);

/** Makes the demo dataset unless a complete one with the same shape is cached; returns its directory. */
export function ensureDemoDataset(dir = DEMO_DIR): string {
  const marker = `${dir}/.complete.json`;
  const want = JSON.stringify(DEMO_DATASET);
  try {
    if (Deno.readTextFileSync(marker) === want) return `${dir}/videos`;
  } catch {
    // not made yet
  }
  try {
    Deno.removeSync(dir, { recursive: true });
  } catch {
    // nothing to remove
  }
  return makeFresh(dir, marker, want);
}

function makeFresh(dir: string, marker: string, want: string): string {
  Deno.mkdirSync(`${dir}/videos`, { recursive: true });
  const bar = new ProgressBar(Deno.stderr, "making the demo dataset", DEMO_DATASET.videos);
  makeSyntheticDataset(`${dir}/videos`, { ...DEMO_DATASET, onProgress: (d) => bar.update(d) });
  bar.finish(DEMO_DATASET.videos);
  Deno.writeTextFileSync(marker, want);
  return `${dir}/videos`;
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: { epochs: { type: "string" }, json: { type: "boolean" } },
  });
  const dataset = ensureDemoDataset();
  const summary = await runLoad({
    dataset,
    batchSize: 8,
    clip: { numFrames: 8, width: 112, height: 112 },
    sampler: { seed: 0, clipsPerVideo: 4 },
    backend: "subprocess",
    epochs: Number(values.epochs ?? 5),
    live: values.json ? undefined : Deno.stderr,
  });
  print(Deno.stdout, values.json ? JSON.stringify(summary, null, 2) : formatSummary(summary));
}
