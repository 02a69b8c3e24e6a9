/**
 * `sluice preview DATASET --out preview.png`: builds the loader from its flags and writes a contact sheet of its
 * first batches (a row per clip, its frames after every transform, labelled with class, file, window and frame),
 * or with `--html` a page with each clip playable (`src/loader/preview.ts`).
 * @module
 */

import { defineCommand } from "../args.ts";
import { videoClassificationLoader } from "../../loader/loader.ts";
import { previewLoader } from "../../loader/preview.ts";
import { print } from "../tty.ts";
import { asUsageError, LOADER_FLAGS, loaderOptionsOf } from "./loader_options.ts";

/** The `preview` command. */
export const previewCommand = defineCommand({
  name: "preview",
  summary: "see the batches: a contact sheet (PNG) of the loader's first batches, or an HTML page",
  description:
    "Runs the loader built from the same flags as sluice load for a few batches and draws them: one " +
    "row per clip, its frames left to right as the batch holds them (after cropping, flipping, resizing; " +
    "normalisation undone), labelled with the class, the file, the window and each frame's index in the " +
    "video (its time in seconds where the timestamps cannot tell the index); substitutes for failed clips " +
    "and held and padded frames are marked. " +
    "--html writes one self-contained page instead, each clip playable (a click pauses).",
  positionals: [{
    name: "DATASET",
    help:
      "a directory with one folder per class, a .csv or .jsonl manifest, packed shards, or an http(s) URL",
  }],
  options: {
    ...LOADER_FLAGS,
    out: {
      type: "string",
      defaultText: "preview.png (preview.html with --html)",
      help: "the file to write",
    },
    batches: { type: "integer", default: 1, min: 1, max: 64, help: "batches to show" },
    html: { type: "boolean", help: "write an HTML page with the clips playable instead of a PNG" },
  },
  examples: [
    "preview data/train --batch-size 8 --frames 8 --width 112 --height 112 --out preview.png",
    "preview train.csv --batch-size 4 --frames 16 --width 128 --height 128 --seed 3 --html --out clips.html",
  ],
  async run({ values, positionals }) {
    const out = values.out ?? (values.html ? "preview.html" : "preview.png");
    await using loader = await videoClassificationLoader(loaderOptionsOf(positionals[0], values)).catch(
      (e) => {
        throw asUsageError(e);
      },
    );
    // this loader draws them itself (loader.preview() would build another so as to leave its epochs alone)
    const preview = await previewLoader(loader, { batches: values.batches, html: values.html });
    if (values.html) await Deno.writeTextFile(out, preview.html!);
    else await Deno.writeFile(out, preview.png);
    const { width, height } = preview.image;
    print(
      Deno.stdout,
      `wrote ${out}: ${preview.clips.length} clips of ${loader.spec.numFrames} frames` +
        (values.html ? "" : `, ${width}×${height} pixels`),
    );
    return 0;
  },
});
