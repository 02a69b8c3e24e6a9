/**
 * Dataset preparation from code, end to end: a small synthetic source dataset (320×240, 25 fps) is transcoded to
 * the training shape (128 px high, 15 fps, a keyframe a second), packed into tar shards with sidecar indexes,
 * verified, and read back three ways: by the loader (one range read per video), sequentially (whole shards in a
 * shuffled order), and as plain bytes. The same steps are `sluice transcode`, `sluice pack`, `sluice verify`
 * and `sluice load` on the command line.
 *
 * Run: `deno run -A examples/prepare_dataset.ts [DIR]` (default: a temp dir, removed at the end).
 * @module
 */

import { makeSyntheticDataset, videoClassificationLoader } from "@sluice/sluice";
import { openShards, streamSamples } from "@sluice/sluice/dataset";
import { packShards, transcodeDataset, verifyShard } from "@sluice/sluice/prep";

const dir = Deno.args[0] ?? await Deno.makeTempDir({ prefix: "sluice-prepare-" });
try {
  makeSyntheticDataset(`${dir}/raw`, { videos: 8, classes: 2, durationSec: 2, width: 320, height: 240 });

  const t = await transcodeDataset({
    input: `${dir}/raw`,
    outDir: `${dir}/k128`,
    height: 128,
    fps: 15,
    codec: "h264",
    gop: 15,
  });
  console.log(`transcoded ${t.progress.done} videos (${t.failures.length} failed) → ${t.manifest}`);

  const p = await packShards({ manifest: t.manifest, outDir: `${dir}/shards`, shardSize: 128 * 1024 });
  console.log(`packed into ${p.shards.length} shards → ${p.setFile}`);
  for (const s of p.shards) {
    const r = await verifyShard(`${dir}/shards/${s.tar}`);
    console.log(`verify ${s.tar}: ${r.ok ? "ok" : r.problems.map((e) => e.message).join("; ")}`);
  }

  // The loader opens the shard directory like any dataset.
  await using loader = await videoClassificationLoader({
    dataset: `${dir}/shards`,
    batchSize: 4,
    clip: { numFrames: 8, width: 112, height: 112 },
    log: () => {},
  });
  for await (using batch of loader) {
    console.log(`batch ${batch.shape.join("×")}, labels ${[...batch.labels]}`);
  }

  // Sequential reading, WebDataset-style: whole shards, shuffled per epoch.
  let n = 0;
  for await (const s of streamSamples(await openShards(`${dir}/shards`), { seed: 1, epoch: 0 })) {
    if (n++ < 3) console.log(`streamed ${s.sample.key}: ${s.video.length} bytes, class ${s.meta.class}`);
  }
  console.log(`streamed ${n} samples`);
} finally {
  if (Deno.args[0] === undefined) await Deno.remove(dir, { recursive: true });
}
