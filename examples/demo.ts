/**
 * `deno task demo`: makes a small synthetic labelled dataset once (cached under `.cache/demo/`, a few seconds,
 * encoded in-process through libavcodec), then runs the video loader with the subprocess backend for a few hundred
 * clips and prints the summary: samples/s, frames/s, the per-stage table, the bottleneck and peak RSS.
 * Needs no GPU and no network. `deno task demo --help` lists the options.
 * @module
 */

import { parseArgs } from "node:util";
import { makeSyntheticDataset } from "@sluice/sluice";
import { main } from "@sluice/sluice/cli";

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
  const line = (d: number) => `\rmaking the demo dataset: ${d}/${DEMO_DATASET.videos} videos`;
  const out = (text: string) => Deno.stderr.writeSync(new TextEncoder().encode(text));
  makeSyntheticDataset(`${dir}/videos`, { ...DEMO_DATASET, onProgress: (d) => out(line(d)) });
  out(`${line(DEMO_DATASET.videos)}\n`);
  Deno.writeTextFileSync(marker, want);
  return `${dir}/videos`;
}

const USAGE = `deno task demo [--epochs N] [--json]: load a synthetic dataset (made once under .cache/demo/)
with the subprocess backend and report
  --epochs N   epochs of 64 clips of 8 frames at 112x112 (1 to 1000, default 5)
  --json       print the summary as one JSON object`;

/** Runs the demo: `sluice load` with the demo's settings (the same live view, summary, --json and Ctrl-C). */
async function demo(args: string[]): Promise<number> {
  let values: { epochs?: string; json?: boolean; help?: boolean };
  try {
    ({ values } = parseArgs({
      args,
      options: {
        epochs: { type: "string" },
        json: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
    }));
  } catch (e) {
    console.error(`deno task demo: ${(e as Error).message}\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const epochs = Number(values.epochs ?? 5);
  if (!Number.isInteger(epochs) || epochs < 1 || epochs > 1000) {
    console.error(`deno task demo: --epochs must be an integer from 1 to 1000, got "${values.epochs}"`);
    return 2;
  }
  return await main([
    "load",
    ensureDemoDataset(),
    ...["--batch-size", "8", "--frames", "8", "--width", "112", "--height", "112"],
    ...["--seed", "0", "--clips-per-video", "4", "--backend", "subprocess"],
    ...["--epochs", String(epochs), ...(values.json ? ["--json"] : [])],
  ]);
}

if (import.meta.main) Deno.exit(await demo(Deno.args));
