/**
 * The front half's order: tasks start in the order their first clips leave the shuffle buffer, so an epoch's
 * first batch waits only for its own videos; the clips still leave in the buffer's order (`epochOrder`).
 */
import assert from "node:assert/strict";
import { planLoader } from "../../src/loader/plan.ts";
import { resolveLoaderOptions } from "../../src/loader/loader_options.ts";
import { epochSource } from "../../src/loader/front/front.ts";
import { epochOrder } from "../../src/dataset/epoch_order.ts";
import { makeSyntheticDataset } from "../helpers/synthetic.ts";

Deno.test("front: tasks start in the order of their first clip's output index (2 clips a video, a 64-clip buffer)", async () => {
  const dir = Deno.makeTempDirSync({ prefix: "sluice-front-" });
  try {
    makeSyntheticDataset(dir, { videos: 40, classes: 4, durationSec: 1, fps: 25, width: 32, height: 24 });
    const plan = await planLoader(resolveLoaderOptions({
      dataset: dir,
      batchSize: 8,
      clip: { numFrames: 2, width: 16, height: 16 },
      sampler: { seed: 3, clipsPerVideo: 2 },
      log: () => {},
    }));
    assert.equal(plan.sampler.options.shuffleBuffer, 64);
    for (const epoch of [0, 1]) {
      const order = epochOrder(plan.sampler, epoch);
      const tasks = [...epochSource({ ...plan.front, firstEpoch: epoch })];
      const firsts = tasks.map((t) => Math.min(...t.clips.map((c) => order[c.position])));
      assert.deepEqual(firsts, [...firsts].sort((a, b) => a - b), `epoch ${epoch}: ascending`);
      assert.equal(firsts[0], 0, "the first task holds the epoch's first clip");
      assert.equal(tasks.flatMap((t) => t.clips).length, plan.sampler.length, "every clip, once");
      // In plan order, the first task (plan position 0) holds a clip that leaves later than the first.
      assert.ok(order[0] > 0, `epoch ${epoch}: plan position 0 leaves at ${order[0]}`);
    }
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
