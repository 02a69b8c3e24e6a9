/**
 * The loader decoding less (issue 14): with every `decodeLess` switch on, the same seed gives the same batches,
 * byte for byte and clip for clip, as with every switch off, in-process and with the subprocess backend; clips
 * of one video in one GOP are served by one pass; stats count frames decoded, skipped and emitted; where each
 * clip lands (batch, slot) is known at plan time (`epochOrder`); an epoch left early leaves nothing waiting.
 */
import assert from "node:assert/strict";
import { type LoaderOptions, videoClassificationLoader } from "../../src/loader/loader.ts";
import { epochOrder } from "../../src/dataset/epoch_order.ts";
import type { Batch } from "../../src/loader/batch/collate.ts";
import { assertSameBatches, gopVideos, runEpochs } from "./same_batches.ts";
import { hasFfmpegCliSync } from "../helpers/media.ts";

const CLI = hasFfmpegCliSync();

const B = 4;

/** 4 videos of 6 s, 25 fps, B-pyramid, keyframes at 0 and 4 s, in one class directory. */
let datasetDir: Promise<string> | undefined;
function dataset(): Promise<string> {
  datasetDir ??= (async () => {
    const dir = await Deno.makeTempDir({ prefix: "sluice-decodeless-" });
    await Deno.mkdir(`${dir}/a`);
    await gopVideos(`${dir}/a`, ["testsrc2", "mandelbrot", "testsrc", "smptebars"]);
    globalThis.addEventListener("unload", () => Deno.removeSync(dir, { recursive: true }));
    return dir;
  })();
  return datasetDir;
}

function options(dir: string, o: Partial<LoaderOptions> = {}): LoaderOptions {
  return {
    dataset: dir,
    batchSize: B,
    clip: { numFrames: 6, width: 32, height: 24 },
    sampler: { clipsPerVideo: 3, seed: 7 },
    concurrency: { decode: 2 },
    log: () => {},
    ...o,
  };
}

Deno.test({
  name: "decodeLess: same seed, same batches with every switch on and off, in-process and subprocess",
  ignore: !CLI,
  async fn() {
    const dir = await dataset();
    const on = await runEpochs(options(dir), 2);
    const off = await runEpochs(
      options(dir, { decodeLess: { skip: false, once: false, threads: false } }),
      2,
    );
    const sub = await runEpochs(options(dir, { backend: "subprocess" }), 2);
    assertSameBatches(on.batches, off.batches, "on vs off");
    assertSameBatches(on.batches, sub.batches, "in-process vs subprocess");
    assert.deepEqual(on.total, sub.total);
    // 24 clips of 6 frames: the same frames emitted; fewer decoded.
    assert.equal(on.total.emittedFrames, 24 * 6);
    assert.equal(off.total.emittedFrames, on.total.emittedFrames);
    assert.equal(off.total.skippedFrames, 0);
    assert.equal(off.total.sharedClips, 0);
    assert.ok(on.total.skippedFrames > 0);
    assert.ok(on.total.sharedClips > 0, "clips of one GOP served by one pass");
    assert.ok(
      on.total.decodeAmplification < off.total.decodeAmplification * 0.75,
      `amplification ${on.total.decodeAmplification} vs ${off.total.decodeAmplification}`,
    );
    assert.equal(off.total.decodeAmplification, off.total.decodedFrames / off.total.emittedFrames);
    const perClip = on.batches.flatMap((b) => b.clips).reduce((n, c) => n + c.decodedFrames, 0);
    assert.equal(perClip, on.total.decodedFrames, "per-clip shares add up to the frames decoded");
  },
});

Deno.test({
  name:
    "decodeLess: each clip's batch and slot are known at plan time (epochOrder); onceMemory bounds sharing",
  ignore: !CLI,
  async fn() {
    const dir = await dataset();
    await using loader = await videoClassificationLoader(options(dir, { decodeLess: { onceMemory: 0 } }));
    const batches: Batch[] = [];
    for await (const b of loader) batches.push(b);
    const plan = loader.sampler.epoch(0);
    const byPosition = epochOrder(loader.sampler, 0);
    for (const [bi, b] of batches.entries()) {
      for (const [i, c] of b.clips.entries()) {
        assert.equal(byPosition[c.position], bi * B + i, `clip at position ${c.position}`);
        assert.equal(plan[c.position].start, c.start);
      }
    }
    // No memory for clips decoded ahead of their turn: nothing shared.
    assert.equal(loader.stats().clips.total.sharedClips, 0);
  },
});

Deno.test({
  name: "decodeLess: an epoch left after one batch leaves no pass waiting; the next epoch is whole",
  ignore: !CLI,
  async fn() {
    const dir = await dataset();
    const whole = await runEpochs(options(dir, { firstEpoch: 1 }));
    await using loader = await videoClassificationLoader(options(dir));
    for await (const _ of loader) break;
    const next: Batch[] = [];
    for await (const b of loader) next.push(b);
    assertSameBatches(next, whole.batches, "epoch 1 after a stopped epoch 0");
  },
});
