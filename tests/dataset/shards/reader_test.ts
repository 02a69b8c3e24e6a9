import assert from "node:assert/strict";
import {
  openShards,
  readSampleMeta,
  readSampleVideo,
  shardOrder,
  streamSamples,
} from "../../../src/dataset/shards/reader.ts";
import { ShardError } from "../../../src/errors.ts";
import { hasFfmpegCliSync } from "../../helpers/media.ts";
import { serveDir } from "../../helpers/http_server.ts";
import { makePacked } from "./shard_fixture.ts";
import { withTempDir } from "../../helpers/temp_dir.ts";

const noCli = !hasFfmpegCliSync();
if (noCli) {
  console.log("reader_test: ffmpeg CLI not found (test clips are made with it): shard reader tests skipped");
}

const withDir = <T>(fn: (dir: string) => Promise<T>) => withTempDir("sluice-shards-", fn);

Deno.test({
  name: "shards over HTTP: range reads by index and whole-shard streaming give the source bytes",
  ignore: noCli,
  fn: () =>
    withDir(async (dir) => {
      const p = await makePacked(dir, 5);
      await using server = serveDir(dir);
      const set = await openShards(`${server.base}shards/shards.json`);
      assert.ok(set.shards.every((s) => s.tar.startsWith(server.base)));
      let i = 0;
      for (const shard of set.shards) {
        for (const sample of shard.index.samples) {
          assert.deepEqual(await readSampleVideo(shard, sample), await Deno.readFile(p.videos[i]));
          assert.equal((await readSampleMeta(shard, sample)).caption, `clip ${i}`);
          i++;
        }
      }
      // One range request per video and per metadata read; the indexes and the set once each.
      const tarHits = [...server.hits].filter(([k]) => k.endsWith(".tar")).reduce((n, [, v]) => n + v, 0);
      assert.equal(tarHits, 10);
      const streamed = [];
      for await (const s of streamSamples(set, { seed: 3 })) streamed.push(s);
      assert.equal(streamed.length, 5);
      for (const s of streamed) {
        const k = Number(String(s.meta.caption).split(" ")[1]);
        assert.deepEqual(s.video, await Deno.readFile(p.videos[k]));
      }
    }),
});

Deno.test({
  name: "streamSamples visits shards in a seeded order per epoch, samples in shard order",
  ignore: noCli,
  fn: () =>
    withDir(async (dir) => {
      await makePacked(dir, 6, 40 * 1024);
      const set = await openShards(`${dir}/shards`);
      const n = set.shards.length;
      assert.ok(n >= 3, `${n} shards`);
      const visit = async (epoch: number) => {
        const keys: string[] = [];
        for await (const s of streamSamples(set, { seed: 7, epoch })) keys.push(s.sample.key);
        return keys;
      };
      const e0 = await visit(0), e0again = await visit(0);
      assert.deepEqual(e0, e0again);
      assert.deepEqual([...e0].sort(), set.shards.flatMap((s) => s.index.samples.map((x) => x.key)).sort());
      const expectedOrder = shardOrder(n, { seed: 7, epoch: 0 });
      assert.deepEqual(e0, expectedOrder.flatMap((k) => set.shards[k].index.samples.map((x) => x.key)));
      // Over several epochs the order changes (with 3+ shards, 8 epochs all alike would be a broken shuffle).
      const orders = new Set(
        [0, 1, 2, 3, 4, 5, 6, 7].map((e) => shardOrder(n, { seed: 7, epoch: e }).join()),
      );
      assert.ok(orders.size > 1);
      // Parts split the shards between ranks, each exactly once.
      const parts = [0, 1].map((index) => shardOrder(n, { seed: 7, epoch: 0, part: { index, count: 2 } }));
      assert.deepEqual([...parts[0], ...parts[1]].sort(), expectedOrder.slice().sort());
    }),
});

Deno.test({
  name: "a truncated shard: reads of the cut member name the shard and the member; earlier ones still read",
  ignore: noCli,
  fn: () =>
    withDir(async (dir) => {
      await makePacked(dir, 4, 1 << 30);
      const set = await openShards(`${dir}/shards`);
      const shard = set.shards[0];
      const victim = shard.index.samples[2];
      await Deno.truncate(shard.tar, victim.video.offset + 100);
      await assert.doesNotReject(readSampleVideo(shard, shard.index.samples[1]));
      await assert.rejects(
        readSampleVideo(shard, victim),
        (e) =>
          e instanceof ShardError && e.shard === shard.tar && e.member === victim.video.name &&
          /truncated/.test(e.message),
      );
      await assert.rejects(
        readSampleVideo(shard, shard.index.samples[3]), // starts past the end
        (e) => e instanceof ShardError && e.member === shard.index.samples[3].video.name,
      );
      await assert.rejects(
        (async () => {
          for await (const _ of streamSamples(set)) { /* consume */ }
        })(),
        (e) => e instanceof ShardError && e.member === victim.video.name,
      );
      // Over HTTP the same.
      await using server = serveDir(dir);
      const remote = await openShards(`${server.base}shards/shards.json`);
      await assert.rejects(
        readSampleVideo(remote.shards[0], remote.shards[0].index.samples[3]),
        (e) => e instanceof ShardError && e.member === shard.index.samples[3].video.name,
      );
    }),
});

Deno.test({
  name: "a flipped byte in a member fails its checksum on read (unless verification is off)",
  ignore: noCli,
  fn: () =>
    withDir(async (dir) => {
      await makePacked(dir, 2, 1 << 30);
      const set = await openShards(`${dir}/shards`);
      const shard = set.shards[0], sample = shard.index.samples[1];
      const bytes = await Deno.readFile(shard.tar);
      bytes[sample.video.offset + 1000] ^= 0x40;
      await Deno.writeFile(shard.tar, bytes);
      await assert.rejects(readSampleVideo(shard, sample), (e) =>
        e instanceof ShardError && /checksum/.test(e.message) && e.member === sample.video.name);
      const raw = await readSampleVideo(shard, sample, { verify: false });
      assert.equal(raw.length, sample.video.size);
    }),
});

Deno.test({
  name: "openShards refuses an index replaced behind the set's back",
  ignore: noCli,
  fn: () =>
    withDir(async (dir) => {
      const p = await makePacked(dir, 4, 40 * 1024);
      const [a, b] = p.summary.shards;
      await Deno.copyFile(`${p.out}/${b.index}`, `${p.out}/${a.index}`);
      await assert.rejects(openShards(p.out), (e) => e instanceof ShardError && /checksum/.test(e.message));
    }),
});
