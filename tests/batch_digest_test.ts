/** scripts/batch_digest.ts: what `--compare` reports between two runs (the runs themselves: `deno task digest`). */
import assert from "node:assert/strict";
import {
  type BatchDigest,
  compareDigests,
  type ConfigDigest,
  DIGEST_FORMAT,
  type DigestFile,
  inputsChanged,
} from "../scripts/batch_digest.ts";

const batch = (index: number, more: Partial<BatchDigest> = {}): BatchDigest => ({
  epoch: 0,
  index,
  shape: [2, 1, 4, 4, 3],
  data: `data${index}`,
  pixels: [`p${index}a`, `p${index}b`],
  labels: `labels${index}`,
  audio: null,
  clips: `clips${index}`,
  clipValues: [{ path: "<demo>/a.mp4", pts: [0, 0.04] }, { path: "<demo>/b.mp4", pts: [1, 1.04] }],
  ...more,
});
const config = (batches: BatchDigest[], more: Partial<ConfigDigest> = {}): ConfigDigest => ({
  options: { batchSize: 2 },
  batches,
  digest: batches.map((b) => b.data).join(),
  ...more,
});
const file = (configs: Record<string, ConfigDigest>, inputs: Record<string, string> = {}): DigestFile => ({
  format: DIGEST_FORMAT,
  videos: 12,
  env: { deno: "2.9.6", ffmpegLibDir: null },
  inputs,
  configs,
});

Deno.test("batch digest: identical runs have no difference; a configuration run only once is not compared", () => {
  const before = file({ demo: config([batch(0), batch(1)]), other: config([batch(0)]) });
  assert.deepEqual(compareDigests(before, file({ demo: config([batch(0), batch(1)]) })), []);
});

Deno.test("batch digest: the first differing batch is named with what differs in it", () => {
  const before = file({ a: config([batch(0), batch(1)]), b: config([batch(0)]), c: config([batch(0)]) });
  const moved = batch(1, {
    clips: "other",
    clipValues: [{ path: "<demo>/a.mp4", pts: [0, 0.04] }, { path: "<demo>/b.mp4", pts: [1, 1.08] }],
  });
  const after = file({
    a: config([batch(0), moved]),
    b: config([batch(0, { data: "x", pixels: ["p0a", "x"] })]),
    c: config([batch(0, { labels: "x" })]),
    d: config([batch(0)]),
  });
  assert.deepEqual(compareDigests(before, after), [
    "a: batch 1 (epoch 0, index 1): clips[1].pts[1]: 1.04 → 1.08",
    "b: batch 0 (epoch 0, index 0): pixels of clips[1]",
    "c: batch 0 (epoch 0, index 0): labels",
    "d: not in the earlier file",
  ]);
});

Deno.test("batch digest: fewer batches, a new failure, changed options and another --videos are differences", () => {
  const before = file({ a: config([batch(0), batch(1)]), b: config([batch(0)]), c: config([batch(0)]) });
  const after = file({
    a: config([batch(0)]),
    b: config([], { error: "MediaError: boom" }),
    c: config([batch(0)], { options: { batchSize: 3 } }),
  });
  assert.deepEqual(compareDigests(before, after), [
    "a: 1 batches, was 2",
    "b: failed: (no error) → MediaError: boom",
    "c: its options differ (the script changed?): .batchSize: 2 → 3",
  ]);
  assert.deepEqual(compareDigests(before, { ...before, videos: 5 }), [
    "--videos 5, was 12: rerun with the same",
  ]);
});

Deno.test("batch digest: runs over different bytes of the same video are told apart from changed batches", () => {
  const before = file({}, { "<demo>/a.mp4": "1", "<demo>/b.mp4": "2" });
  assert.deepEqual(inputsChanged(before, file({}, { "<demo>/a.mp4": "1", "<demo>/c.mp4": "3" })), []);
  assert.deepEqual(inputsChanged(before, file({}, { "<demo>/a.mp4": "1", "<demo>/b.mp4": "9" })), [
    "<demo>/b.mp4",
  ]);
});
