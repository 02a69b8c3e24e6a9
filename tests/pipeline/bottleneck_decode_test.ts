// The stats table on a real decode pipeline (demux on the main thread, decode in a WorkerPool) names the stage
// that is deliberately throttled, and not the genuinely expensive decode stage beside it.
import assert from "node:assert/strict";
import { PipelineBuilder } from "../../src/pipeline/builder.ts";
import { WorkerPool } from "../../src/pipeline/worker_pool.ts";
import { formatStats } from "../../src/pipeline/format_stats.ts";
import { demuxVideo } from "../../src/media/demux.ts";
import type { VideoFrames } from "../../src/media/frames.ts";
import { generateClip, hasFfmpegCliSync } from "../helpers/media.ts";

const CLI = hasFfmpegCliSync();

Deno.test({
  name: "stats: on a real demux → decode (WorkerPool) pipeline, a throttled stage is named the bottleneck",
  ignore: !CLI,
  fn: async () => {
    const clip = await generateClip({ width: 320, height: 240, durationSec: 4, gop: 25 });
    const windows = Array.from(
      { length: 24 },
      (_, i): [number, number] => [(i % 6) * 0.5, (i % 6) * 0.5 + 0.5],
    );
    const pool = new WorkerPool(new URL("../../src/media/decode_worker.ts", import.meta.url), { size: 2 });
    // Start both Workers first: under `deno test` a Worker's start-up (type-checking its module) takes seconds,
    // which would make decode the bottleneck of this short run for reasons that have nothing to do with decoding.
    await Promise.all([pool.call("release"), pool.call("release")]);
    let frames = 0;
    const p = new PipelineBuilder()
      .addSource(windows, { name: "windows" })
      .pipe((w: [number, number]) => demuxVideo(clip, { window: w }), { name: "demux", concurrency: 1 })
      .pipe<VideoFrames>("decode", { name: "decode", executor: pool })
      .pipe(async (f: VideoFrames) => {
        await new Promise((r) => setTimeout(r, 40)); // the deliberate throttle
        return f.shape[0];
      }, { name: "augment", concurrency: 1 })
      .build();
    for await (const n of p) frames += n as number;
    const stats = p.stats();
    // Frames sit at k/25 s: [0, 0.5) holds k = 0..12 (13), [0.5, 1) holds k = 13..24 (12), and so on.
    assert.equal(frames, 4 * 3 * (13 + 12), "every frame of every window arrived");
    assert.equal(stats.bottleneck, "augment", formatStats(stats));
    assert.match(formatStats(stats), /^bottleneck: augment \(busy \d+%, input queue full/m);
  },
});
