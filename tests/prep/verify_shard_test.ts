import assert from "node:assert/strict";
import { verifyShard } from "../../src/prep/verify_shard.ts";
import { openShards } from "../../src/dataset/shards/reader.ts";
import { hasFfmpegCliSync } from "../helpers/media.ts";
import { serveDir } from "../helpers/http_server.ts";
import { makePacked } from "../dataset/shards/shard_fixture.ts";
import { withTempDir } from "../helpers/temp_dir.ts";

const noCli = !hasFfmpegCliSync();
if (noCli) {
  console.log("verify_shard_test: ffmpeg CLI not found (test clips are made with it): tests skipped");
}

function withShard<T>(fn: (tar: string, dir: string) => Promise<T>): Promise<T> {
  return withTempDir("sluice-verify-", async (dir) => {
    const p = await makePacked(dir, 4, 1 << 30);
    return await fn(`${p.out}/${p.summary.shards[0].tar}`, dir);
  });
}

const test = (name: string, fn: () => Promise<void>) => Deno.test({ name, ignore: noCli, fn });

test("verify: an intact shard passes, every member checked (also over HTTP)", () =>
  withShard(async (tar, dir) => {
    const r = await verifyShard(tar);
    assert.deepEqual(r.problems.map((p) => p.message), []);
    assert.equal(r.ok, true);
    assert.equal(r.verifiedMembers, 8);
    await using server = serveDir(dir);
    const remote = await verifyShard(`${server.base}shards/shard-000000.tar`);
    assert.equal(remote.ok, true);
    assert.equal(remote.verifiedMembers, 8);
  }));

test("verify: a flipped byte in a video is caught and named", () =>
  withShard(async (tar) => {
    const set = await openShards(tar);
    const m = set.shards[0].index.samples[2].video;
    const bytes = await Deno.readFile(tar);
    bytes[m.offset + Math.floor(m.size / 2)] ^= 1;
    await Deno.writeFile(tar, bytes);
    const r = await verifyShard(tar);
    assert.equal(r.ok, false);
    assert.equal(r.problems.length, 1);
    assert.equal(r.problems[0].member, m.name);
    assert.match(r.problems[0].message, /checksum mismatch/);
    assert.equal(r.verifiedMembers, 7);
  }));

test("verify: a flipped byte in a tar header is caught", () =>
  withShard(async (tar) => {
    const set = await openShards(tar);
    const m = set.shards[0].index.samples[1].meta;
    const bytes = await Deno.readFile(tar);
    bytes[m.header + 3] ^= 1; // the member's name
    await Deno.writeFile(tar, bytes);
    const r = await verifyShard(tar);
    assert.equal(r.ok, false);
    assert.match(r.problems[0].message, /tar header at byte \d+ is damaged/);
  }));

test("verify: a truncated shard is an error naming the shard and the member", () =>
  withShard(async (tar) => {
    const set = await openShards(tar);
    const m = set.shards[0].index.samples[3].video;
    await Deno.truncate(tar, m.offset + 10);
    const r = await verifyShard(tar);
    assert.equal(r.ok, false);
    const cut = r.problems.find((p) => /truncated/.test(p.message))!;
    assert.equal(cut.shard, tar);
    assert.equal(cut.member, m.name);
    assert.ok(cut.message.startsWith(`${tar}: member ${m.name}: truncated`), cut.message);
    assert.equal(r.verifiedMembers, 6); // everything before the cut still checks out
  }));

test("verify: a damaged index is reported, naming the index", () =>
  withShard(async (tar) => {
    const idx = tar.replace(/\.tar$/, ".idx.json");
    const text = await Deno.readTextFile(idx);
    await Deno.writeTextFile(idx, text.replace('"label":1', '"label":0'));
    const r = await verifyShard(tar);
    assert.equal(r.ok, false);
    assert.equal(r.problems[0].shard, idx);
    assert.match(r.problems[0].message, /checksum mismatch/);
  }));

test("verify: bytes appended after the archive are reported", () =>
  withShard(async (tar) => {
    const f = await Deno.open(tar, { append: true });
    await f.write(new Uint8Array(512).fill(7));
    f.close();
    const r = await verifyShard(tar);
    assert.equal(r.ok, false);
    assert.match(r.problems[0].message, /512 bytes more/);
  }));
