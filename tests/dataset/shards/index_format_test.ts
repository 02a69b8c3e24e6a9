import assert from "node:assert/strict";
import {
  parseShardIndex,
  parseShardSet,
  sealJson,
  sha256Hex,
  type ShardIndex,
} from "../../../src/dataset/shards/index_format.ts";
import { ShardError } from "../../../src/errors.ts";

const loc = (name: string, header: number, size: number) => ({
  name,
  header,
  offset: header + 512,
  size,
  sha256: sha256Hex(new Uint8Array(size)),
});

function index(): ShardIndex {
  return {
    format: "sluice-shard-index",
    version: 1,
    shard: "shard-000000.tar",
    size: 4096,
    classes: ["a", "b"],
    samples: [{
      key: "x/v0",
      video: loc("x/v0.mp4", 0, 1000),
      meta: loc("x/v0.json", 2048, 20),
      label: 1,
      start: 0,
      end: 2.5,
      keyframes: [0, 1, 2],
      frameRate: 15,
    }],
  };
}

/** Seals a modified index (a valid checksum over invalid content: the field checks must catch it). */
function resealed(edit: (i: ShardIndex) => void): string {
  const i = index();
  edit(i);
  return sealJson(i);
}

Deno.test("shard index: sealed JSON reads back equal", () => {
  assert.deepEqual(parseShardIndex(sealJson(index()), "i.json"), index());
});

Deno.test("shard index: any changed character fails the checksum, naming the index", () => {
  const text = sealJson(index());
  const i = text.indexOf("2.5");
  const damaged = text.slice(0, i) + "3.5" + text.slice(i + 3);
  assert.throws(
    () => parseShardIndex(damaged, "i.json"),
    (e) => e instanceof ShardError && /checksum/.test(e.message) && e.shard === "i.json",
  );
  assert.throws(() => parseShardIndex(text.slice(0, 50), "i.json"), /not JSON/);
});

Deno.test("shard index: fields are validated even under a valid checksum", () => {
  const cases: [string, (i: ShardIndex) => void][] = [
    ["outside the shard", (i) => i.samples[0].video.size = 5000],
    ["not a class index", (i) => i.samples[0].label = 2],
    ["member name", (i) => i.samples[0].video.name = "../../etc/passwd"],
    ["overlaps", (i) => i.samples[0].meta.header = 100],
    ["keyframes out of order", (i) => i.samples[0].keyframes = [1, 0]],
    ["start/end", (i) => i.samples[0].end = 0],
    ["sha256", (i) => i.samples[0].video.sha256 = "zz"],
    ["version", (i) => i.version = 2],
  ];
  for (const [why, edit] of cases) {
    assert.throws(
      () => parseShardIndex(resealed(edit), "i.json"),
      (e) => e instanceof ShardError && e.message.includes(why),
      why,
    );
  }
});

Deno.test("shard set: round trip, and an invalid entry is refused", () => {
  const set = {
    format: "sluice-shard-set" as const,
    version: 1,
    classes: ["a"],
    shards: [{
      tar: "s.tar",
      index: "s.idx.json",
      size: 10,
      samples: 1,
      indexSha256: sha256Hex(new Uint8Array(1)),
    }],
  };
  assert.deepEqual(parseShardSet(sealJson(set), "set.json"), set);
  set.shards[0].tar = "/abs.tar";
  assert.throws(() => parseShardSet(sealJson(set), "set.json"), /shard entry 0 is invalid/);
});
