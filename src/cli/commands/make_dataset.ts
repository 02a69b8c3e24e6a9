/**
 * `sluice make-dataset DIR`: a synthetic labelled dataset (one folder per class), encoded in-process.
 * @module
 */

import { defaultEncoder, makeSyntheticDataset } from "../../prep/synthetic.ts";
import { defineCommand } from "../args.ts";
import { print, ProgressBar } from "../tty.ts";

/** The `make-dataset` command. */
export const makeDatasetCommand = defineCommand({
  name: "make-dataset",
  summary: "write a synthetic labelled video dataset (one folder per class) for trying the loader",
  description: "Each video shows a pattern that encodes its class and frame index, so a consumer can check " +
    "that the right frames and labels arrive. Encoded in-process through libavcodec (libx264, else VP9, else AV1).",
  positionals: [{ name: "DIR", help: "output directory (created; class_NN/video_NNNN.mp4 inside)" }],
  options: {
    videos: { type: "integer", required: true, min: 1, max: 100_000, help: "number of videos" },
    classes: { type: "integer", required: true, min: 1, max: 256, help: "number of classes (labels)" },
    duration: { type: "number", default: 4, above: 0, max: 3600, help: "seconds per video" },
    fps: { type: "number", default: 25, above: 0, max: 240, help: "frames per second" },
    width: { type: "integer", default: 320, min: 16, max: 4096, multipleOf: 2, help: "frame width" },
    height: { type: "integer", default: 240, min: 16, max: 4096, multipleOf: 2, help: "frame height" },
  },
  examples: [
    "make-dataset /tmp/ds --videos 64 --classes 8",
    "make-dataset /tmp/small --videos 8 --classes 2 --duration 1",
  ],
  run({ values, positionals }) {
    const [dir] = positionals;
    const bar = new ProgressBar(Deno.stderr, `encoding (${defaultEncoder()})`, values.videos);
    bar.update(0);
    makeSyntheticDataset(dir, {
      videos: values.videos,
      classes: values.classes,
      durationSec: values.duration,
      fps: values.fps,
      width: values.width,
      height: values.height,
      onProgress: (done) => bar.update(done),
    });
    bar.finish(values.videos);
    print(Deno.stdout, `wrote ${values.videos} videos in ${values.classes} classes under ${dir}`);
    return 0;
  },
});
