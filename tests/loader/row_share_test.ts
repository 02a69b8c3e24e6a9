/**
 * Decode once across rows (issue 23 item 4): rows of one file (one dataset item each), spread across the epoch
 * by the shuffle, share decode passes: the same seed gives the same batches byte for byte with sharing on and
 * off, in-process and with the subprocess backend; clips are shared and fewer frames decoded; every planned clip
 * is accounted for. A clip whose shared pass failed it gets a pass of its own (`ClipDecodeStep`'s `reload`).
 */
import assert from "node:assert/strict";
import type { LoaderOptions } from "../../src/loader/loader.ts";
import { ClipDecodeStep, decodeClipItem } from "../../src/loader/decode/clip_steps.ts";
import { demuxClips } from "../../src/loader/decode/clip_worker.ts";
import { CLIP_WORKER } from "../../src/loader/front/front.ts";
import { WorkerPool } from "../../src/pipeline/worker_pool.ts";
import { assertSameBatches, gopVideos, runEpochs } from "./same_batches.ts";
import { clipBase, testSpec } from "../helpers/clip_spec.ts";
import { generateClip, hasFfmpegCliSync } from "../helpers/media.ts";
import { sameBytes } from "../helpers/decode_oracles.ts";
import type { ClipPackets, DecodedClip, VideoTask } from "../../src/loader/clip/life.ts";

const CLI = hasFfmpegCliSync();

const B = 4;

/** 3 videos of 6 s, 25 fps, keyframes at 0 and 4 s; a manifest of 4 rows per video, all in the first GOP. */
let manifestFile: Promise<string> | undefined;
function manifest(): Promise<string> {
  manifestFile ??= (async () => {
    const dir = await Deno.makeTempDir({ prefix: "sluice-rows-" });
    globalThis.addEventListener("unload", () => Deno.removeSync(dir, { recursive: true }));
    const rows = ["path,label,start,end"];
    const videos = await gopVideos(dir, ["testsrc2", "mandelbrot", "smptebars"]);
    for (const [i, v] of videos.entries()) {
      for (const [s, e] of [[0, 1], [0.5, 1.5], [1.5, 2.5], [2.5, 3.5]]) rows.push(`${v},${i},${s},${e}`);
    }
    Deno.writeTextFileSync(`${dir}/rows.csv`, rows.join("\n"));
    return `${dir}/rows.csv`;
  })();
  return manifestFile;
}

Deno.test({
  name: "rows of one file share decode passes: same batches on and off, in-process and subprocess",
  ignore: !CLI,
  async fn() {
    const opts: LoaderOptions = {
      dataset: await manifest(),
      batchSize: B,
      clip: { numFrames: 6, width: 32, height: 24 },
      sampler: { seed: 3 },
      concurrency: { decode: 2 },
      log: () => {},
    };
    const [on, off, sub] = [
      await runEpochs(opts, 2),
      await runEpochs({ ...opts, decodeLess: { once: false } }, 2),
      await runEpochs({ ...opts, backend: "subprocess" }, 2),
    ];
    assertSameBatches(on.batches, off.batches, "rows shared vs not");
    assertSameBatches(on.batches, sub.batches, "rows shared in-process vs subprocess");
    assert.deepEqual(on.total, sub.total);
    // One clip per row: every pass that serves several clips serves rows of one file.
    assert.ok(
      on.batches.flatMap((b) => b.clips).every((c, _, all) =>
        all.filter((d) => d.video === c.video && d.epoch === c.epoch).length === 1
      ),
    );
    assert.equal(off.total.sharedClips, 0);
    assert.ok(on.total.sharedClips > 0, "rows of one GOP served by one pass");
    assert.ok(
      on.total.decodeAmplification < off.total.decodeAmplification,
      `amplification ${on.total.decodeAmplification} vs ${off.total.decodeAmplification}`,
    );
    assert.equal(on.total.emittedFrames, off.total.emittedFrames);
  },
});

Deno.test({
  name: "a clip whose shared pass failed it is loaded on its own (reload), else it fails with the pass",
  ignore: !CLI,
  async fn() {
    const path = await generateClip({ width: 96, height: 64, fps: 25, durationSec: 3, gop: 250 });
    const spec = testSpec({ numFrames: 6, width: 32, height: 24 });
    const leader = clipBase(path, 0.4, 0.9, 0, 5), follower = clipBase(path, 0.6, 1.1, 1, 6);
    // The leader's task with the follower's row as an extra window: one pass for both.
    const task: VideoTask = {
      epoch: 0,
      video: 0,
      path,
      clips: [leader],
      extras: [follower],
      spec,
      share: { order: [0, 1], horizon: 4 },
    };
    const pass = () => {
      const [item] = demuxClips(task).value as ClipPackets[];
      assert.deepEqual(item.shared?.map((s) => s.meta.position), [1]);
      // its packets lost: the pass fails every clip it serves
      delete item.packets;
      item.failure = "lost";
      return item;
    };
    const served: ClipPackets = { meta: follower, spec, servedBy: 0 };
    const pool = new WorkerPool(CLIP_WORKER, { size: 1 });
    const signal = new AbortController().signal;
    const own = async (meta: typeof follower) => {
      const [item] = demuxClips({ ...task, clips: [meta], extras: undefined, share: undefined })
        .value as ClipPackets[];
      return await decodeClipItem(pool, item, signal);
    };
    const reloaded: number[] = [];
    const step = new ClipDecodeStep(pool, {
      reload: (meta) => (reloaded.push(meta.position), own(meta)),
    });
    assert.ok("failed" in await step.decode(pass(), signal));
    const got = await step.decode(served, signal) as DecodedClip;
    const alone = await own(follower) as DecodedClip;
    assert.deepEqual(reloaded, [1]);
    assert.ok(sameBytes(got.data as Uint8Array, alone.data as Uint8Array));
    const without = new ClipDecodeStep(pool);
    await without.decode(pass(), signal);
    const failed = await without.decode({ ...served }, signal);
    assert.ok("failed" in failed && /lost/.test(failed.failed.error), JSON.stringify(failed));
    await pool.close();
  },
});
