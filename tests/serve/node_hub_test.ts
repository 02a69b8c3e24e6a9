/**
 * The node hub's ranks (lanes): each rank's batches are exactly its own loader's (pixels, labels, clips), while
 * the clips the sampler dealt to different ranks are demuxed once and decoded in shared passes; a rank whose
 * consumer stalls holds up no other rank; a rank that leaves mid-epoch lets the others finish.
 */
import assert from "node:assert/strict";
import type { Batch } from "../../src/loader/batch/collate.ts";
import { type LoaderOptions, videoClassificationLoader } from "../../src/loader/loader.ts";
import { lazyDataset } from "../helpers/synthetic.ts";
import { NodeHub } from "../../src/serve/node_hub.ts";
import { resolveLoaderOptions } from "../../src/loader/loader_options.ts";
import { hasFfmpegCliSync } from "../helpers/media.ts";

const dataset = lazyDataset("sluice-node-hub-", {
  videos: 8,
  classes: 2,
  durationSec: 2,
  width: 96,
  height: 64,
});

const options = async (): Promise<LoaderOptions> => ({
  dataset: await dataset(),
  batchSize: 2,
  clip: { numFrames: 4, width: 32, height: 32 },
  sampler: { seed: 3, clipsPerVideo: 4 },
  log: () => {},
});

/** What a batch is, for comparing: its pixels' digest, labels and clips (the decode accounting aside). */
async function digest(b: Batch): Promise<string> {
  const d = b.toHost() as ArrayBufferView<ArrayBuffer>;
  const h = await crypto.subtle.digest("SHA-256", new Uint8Array(d.buffer, d.byteOffset, d.byteLength));
  const clips = b.clips.map((
    c,
  ) => [c.path, c.start, c.end, c.epoch, c.position, c.seed, c.pts, c.frameIndex]);
  return JSON.stringify([[...new Uint8Array(h)], [...b.labels], clips]);
}

/** Every batch of `epochs` epochs of a loader, as digests, each batch disposed once read. */
async function run(loader: { epoch: number } & AsyncIterable<Batch>, epochs: number): Promise<string[]> {
  const out: string[] = [];
  for (let e = 0; e < epochs; e++) {
    for await (using b of loader) out.push(await digest(b));
  }
  return out;
}

const ignore = !hasFfmpegCliSync();

Deno.test({
  name: "node hub: 4 ranks get their own loaders' batches byte for byte, sharing demux and decode passes",
  ignore,
  async fn() {
    const opts = await options();
    const want: string[][] = [];
    let soloDecoded = 0;
    for (let r = 0; r < 4; r++) {
      await using solo = await videoClassificationLoader({
        ...opts,
        sampler: { ...opts.sampler, rank: r, worldSize: 4 },
        concurrency: { decode: 1 },
        slots: 3,
      });
      want.push(await run(solo, 2));
      soloDecoded += solo.stats().clips.total.decodedFrames;
    }
    await using hub = await NodeHub.open(resolveLoaderOptions(opts), { cpuBudget: 2, slots: 3 });
    const lanes = await Promise.all(
      [0, 1, 2, 3].map((rank) => hub.factory({ rank, worldSize: 4, firstEpoch: 0 })),
    );
    try {
      const got = await Promise.all(lanes.map((l) => run(l, 2)));
      for (let r = 0; r < 4; r++) assert.deepEqual(got[r], want[r], `rank ${r}`);
      const s = hub.stats();
      assert.equal(s.ranks, 4);
      // 8 videos × 4 clips, one per rank: most of each video's clips are cut by one rank's demux for the others.
      assert.ok(s.shares.claimed >= 8, `clips demuxed for another rank: ${s.shares.claimed}`);
      assert.ok(s.shares.passes > 0, `no pass decoded clips of several ranks: ${JSON.stringify(s.shares)}`);
      assert.equal(s.shares.outstanding, 0);
      // and fewer frames decoded than the ranks' own loaders decode for the same clips
      const decoded = lanes.reduce((n, l) => n + l.stats().clips.total.decodedFrames, 0);
      assert.ok(decoded < soloDecoded, `frames decoded: ${decoded} in node mode, ${soloDecoded} alone`);
    } finally {
      for (const l of lanes) await l.close();
    }
    assert.equal(hub.stats().ranks, 0);
  },
});

Deno.test({
  name: "node hub: a rank that stalls holds its own slots only; the others finish their epoch",
  ignore,
  async fn() {
    const opts = await options();
    await using hub = await NodeHub.open(resolveLoaderOptions(opts), { cpuBudget: 2, slots: 2 });
    const [stalled, ...others] = await Promise.all(
      [0, 1, 2].map((rank) => hub.factory({ rank, worldSize: 3, firstEpoch: 0 })),
    );
    const want = await Promise.all([1, 2].map(async (r) => {
      await using solo = await videoClassificationLoader({
        ...opts,
        sampler: { ...opts.sampler, rank: r, worldSize: 3 },
        concurrency: { decode: 1 },
        slots: 2,
      });
      return await run(solo, 1);
    }));
    try {
      // Rank 0 takes two batches, keeps them (every slot it has) and never asks again.
      const it = stalled[Symbol.asyncIterator]();
      const held = [(await it.next()).value as Batch, (await it.next()).value as Batch];
      const got = await Promise.race([
        Promise.all(others.map((l) => run(l, 1))),
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error("the others stalled")), 120_000)),
      ]);
      assert.deepEqual(got, want);
      for (const b of held) b[Symbol.dispose]();
      await it.return?.();
    } finally {
      for (const l of [stalled, ...others]) await l.close();
    }
  },
});

Deno.test({
  name: "node hub: a rank leaving mid-epoch lets the others finish, with their own batches",
  ignore,
  async fn() {
    const opts = await options();
    await using hub = await NodeHub.open(resolveLoaderOptions(opts), { cpuBudget: 2, slots: 2 });
    const lanes = await Promise.all([0, 1].map((rank) => hub.factory({ rank, worldSize: 2, firstEpoch: 0 })));
    await using solo = await videoClassificationLoader({
      ...opts,
      sampler: { ...opts.sampler, rank: 1, worldSize: 2 },
      concurrency: { decode: 1 },
      slots: 2,
    });
    const want = await run(solo, 1);
    const it = lanes[0][Symbol.asyncIterator]();
    (await it.next()).value[Symbol.dispose]();
    const other = run(lanes[1], 1);
    await lanes[0].close(); // gone mid-epoch, its claims and parked results with it
    assert.deepEqual(await other, want);
    await lanes[1].close();
    assert.equal(hub.stats().shares.outstanding, 0);
  },
});
