/**
 * `deno task demo`: makes a small synthetic labelled dataset once (cached under `.cache/demo/`, a few seconds,
 * encoded in-process through libavcodec), then runs the video loader with the subprocess backend for a few hundred
 * clips and prints the summary: samples/s, frames/s, the per-stage table, the bottleneck and peak RSS.
 * Needs no GPU and no network. `deno task demo --help` lists the options.
 * @module
 */

import { makeSyntheticDataset } from "@sluice/sluice";
import { defineCommand, main, ProgressBar, runCommand } from "@sluice/sluice/cli";

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

/** The demo as a command: its options, defaults and ranges give `--help` and the usage errors. */
const demo = defineCommand({
  name: "",
  summary: "load a synthetic dataset (made once under .cache/demo/) with the subprocess backend and report",
  positionals: [],
  options: {
    epochs: {
      type: "integer",
      default: 5,
      min: 1,
      max: 1000,
      help: "epochs of 64 clips of 8 frames at 112x112",
    },
    json: { type: "boolean", help: "print the summary as one JSON object" },
  },
  examples: ["--epochs 2", "--json"],
  run({ values }) {
    // `sluice load` with the demo's settings: the same live view, summary, --json and Ctrl-C handling.
    return main([
      "load",
      ensureDemoDataset(),
      ...["--batch-size", "8", "--frames", "8", "--width", "112", "--height", "112"],
      ...["--seed", "0", "--clips-per-video", "4", "--backend", "subprocess"],
      ...["--epochs", String(values.epochs), ...(values.json ? ["--json"] : [])],
    ]);
  },
});

if (import.meta.main) Deno.exit(await runCommand(demo, Deno.args, { program: "deno task demo" }));
