/**
 * `sluice load` frames/s against the practical ceiling of this machine: two `ffmpeg -threads 1` processes
 * decoding and scaling the same clips (bilinear to 112×112 RGB24), measured in the same run.
 *
 * The loader is set up so that its clips are exactly the demo videos cut into keyframe-aligned 1-second pieces
 * (uniform placement, 4 clips per 4-second video, 25 frames per clip, GOP 25): every frame it decodes is a frame it
 * delivers, which is also what ffmpeg does. Each ffmpeg process decodes half of the videos (concat demuxer),
 * repeated to the same number of epochs. Both sides decode every frame once per epoch; the ratio is
 * `loader frames/s ÷ ffmpeg frames/s`. Run: `deno run -A bench/loader_vs_ffmpeg.ts [--epochs N] [--json]`.
 * @module
 */

import { parseArgs } from "node:util";
import { runLoad } from "../src/cli/load.ts";
import { DEMO_DATASET, ensureDemoDataset } from "../examples/demo.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: { epochs: { type: "string" }, json: { type: "boolean" } },
});
const epochs = Number(values.epochs ?? 5);
const dataset = ensureDemoDataset();
const files: string[] = [];
for await (const d of Deno.readDir(dataset)) {
  for await (const f of Deno.readDir(`${dataset}/${d.name}`)) files.push(`${dataset}/${d.name}/${f.name}`);
}
files.sort();

async function ffmpegPair(): Promise<{ frames: number; seconds: number }> {
  const dir = await Deno.makeTempDir({ prefix: "sluice-bench-" });
  try {
    const halves = [files.filter((_, i) => i % 2 === 0), files.filter((_, i) => i % 2 === 1)];
    const t0 = performance.now();
    const outs = await Promise.all(halves.map(async (half, h) => {
      const list = `${dir}/list${h}.txt`;
      const lines = Array.from({ length: epochs }, () => half.map((f) => `file '${f}'`)).flat();
      await Deno.writeTextFile(list, lines.join("\n") + "\n");
      const out = await new Deno.Command("ffmpeg", {
        args: [
          "-hide_banner",
          "-nostats",
          "-threads",
          "1",
          "-filter_threads",
          "1",
          "-f",
          "concat",
          "-safe",
          "0",
          "-i",
          list,
          "-vf",
          "scale=112:112:flags=bilinear",
          "-f",
          "rawvideo",
          "-pix_fmt",
          "rgb24",
          "-y",
          "-",
        ],
        stdout: "piped",
        stderr: "piped",
      }).output();
      if (out.code !== 0) {
        throw new Error(`ffmpeg failed: ${new TextDecoder().decode(out.stderr).slice(-500)}`);
      }
      return out.stdout.length / (112 * 112 * 3);
    }));
    return { frames: outs[0] + outs[1], seconds: (performance.now() - t0) / 1000 };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const clipsPerVideo = DEMO_DATASET.durationSec;
const loaderRun = (backend: "inprocess" | "subprocess") =>
  runLoad({
    dataset,
    batchSize: 8,
    clip: { numFrames: DEMO_DATASET.fps, width: 112, height: 112 },
    sampler: { seed: 0, clipsPerVideo, clipDurationSec: 1, placement: "uniform", keyframeAligned: true },
    backend,
    epochs,
    log: () => {},
  });

const ff = await ffmpegPair();
const sub = await loaderRun("subprocess");
const inproc = await loaderRun("inprocess");
const ff2 = await ffmpegPair();
const ffFps = Math.max(ff.frames / ff.seconds, ff2.frames / ff2.seconds);
const result = {
  epochs,
  ffmpeg: {
    frames: ff.frames,
    framesPerSec: [ff.frames / ff.seconds, ff2.frames / ff2.seconds],
    best: ffFps,
  },
  subprocess: { frames: sub.frames, framesPerSec: sub.framesPerSec, ratio: sub.framesPerSec / ffFps },
  inprocess: { frames: inproc.frames, framesPerSec: inproc.framesPerSec, ratio: inproc.framesPerSec / ffFps },
};
if (values.json) console.log(JSON.stringify(result, null, 2));
else {
  console.log(`2 x ffmpeg -threads 1 (best of 2 runs): ${ffFps.toFixed(0)} frames/s (${ff.frames} frames)`);
  for (const [name, r] of [["subprocess", result.subprocess], ["inprocess", result.inprocess]] as const) {
    console.log(
      `sluice load, ${name} backend: ${r.framesPerSec.toFixed(0)} frames/s (${r.frames} frames) → ` +
        `ratio ${r.ratio.toFixed(2)}`,
    );
  }
}
