/**
 * Batch slots (`slots` loader option, `src/loader/batch/batch_slots.ts`): decode Workers write clips by address into
 * their place in a memfd slot, and the batches are byte for byte those of the copying loader (the oracle),
 * across epochs, both backends, with failed clips replaced or skipped, planar and float layouts, and a partial
 * last batch. A consumer holding every slot gets an error, not reused memory; `cacheLoader` copies what it keeps.
 */
import assert from "node:assert/strict";
import { type LoaderOptions, videoClassificationLoader } from "../../src/loader/loader.ts";
import type { Batch } from "../../src/loader/batch/collate.ts";
import { BatchSlots, slotOf } from "../../src/loader/batch/batch_slots.ts";
import type { ClipSpec } from "../../src/loader/clip/clip_spec.ts";
import { ClipSampler } from "../../src/dataset/sampler.ts";
import { availableMemory } from "../../src/memory/available.ts";
import { cacheLoader } from "../../src/loader/cache_loader.ts";
import { demuxClips } from "../../src/loader/decode/clip_worker.ts";
import { CLIP_WORKER } from "../../src/loader/front/front.ts";
import { mixedDataset } from "./mixed_dataset.ts";
import { WorkerPool } from "../../src/pipeline/worker_pool.ts";
import { SharedMemory } from "../../src/memory/shm.ts";
import { InvalidArgumentError } from "../../src/errors.ts";
import { clipBase, testSpec } from "../helpers/clip_spec.ts";
import type { ClipFailure, ClipPackets, VideoTask } from "../../src/loader/clip/life.ts";

let datasetDir: Promise<{ dir: string; manifest: string }> | undefined;
/** 5 synthetic videos, plus a manifest that adds a missing and a truncated file (clips that fail). */
function dataset(): Promise<{ dir: string; manifest: string }> {
  datasetDir ??= mixedDataset("sluice-slots-");
  return datasetDir;
}

async function sha(bytes: Uint8Array): Promise<string> {
  const d = await crypto.subtle.digest("SHA-256", bytes.slice());
  return [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** A batch as comparable values: its pixels' hash, shape, labels and clip metadata. */
async function digest(b: Batch): Promise<string> {
  const bytes = new Uint8Array(b.data.buffer, b.data.byteOffset, b.data.byteLength);
  return JSON.stringify([await sha(bytes), b.dtype, b.shape, [...b.labels], b.clips]);
}

interface Run {
  digests: string[];
  slotBacked: number;
  replaced: number;
  failed: number;
}

/** Two epochs, each batch digested then disposed (`using`). */
async function options(opts: Partial<LoaderOptions>): Promise<LoaderOptions> {
  return {
    dataset: (await dataset()).manifest,
    batchSize: 3,
    clip: { numFrames: 4, width: 32, height: 24 },
    sampler: { seed: 5, clipsPerVideo: 2 },
    concurrency: { decode: 2 },
    log: () => {},
    ...opts,
  };
}

async function run(opts: Partial<LoaderOptions>): Promise<Run> {
  await using loader = await videoClassificationLoader(await options(opts));
  const digests: string[] = [];
  let slotBacked = 0;
  for (let e = 0; e < 2; e++) {
    for await (using b of loader) {
      digests.push(await digest(b));
      if (slotOf(b) !== undefined) slotBacked++;
    }
  }
  const { replaced, failed } = loader.stats().clips.total;
  return { digests, slotBacked, replaced, failed };
}

Deno.test("Workers write a clip by address into a memfd: the bytes are the copying path's, nothing comes back", async () => {
  const { dir } = await dataset();
  const path = `${dir}/class_00/${[...Deno.readDirSync(`${dir}/class_00`)].map((e) => e.name).sort()[0]}`;
  const spec = testSpec({ numFrames: 5, width: 40, height: 30 });
  const task: VideoTask = { epoch: 0, video: 0, path, clips: [clipBase(path, 0.2, 1.2, 0, 77)], spec };
  const item = () => (demuxClips(task).value as ClipPackets[])[0];
  const clipBytes = 5 * 40 * 30 * 3;
  await using pool = new WorkerPool(CLIP_WORKER, { size: 1 });
  const ctx = { signal: new AbortController().signal, stage: "decode" };
  using shm = new SharedMemory("sluice-test-slots", 3 * clipBytes);
  const [copied] = await pool.run("decodeClip", item(), ctx) as { data: Uint8Array }[];
  assert.equal(copied.data.length, clipBytes);
  const at = 2 * clipBytes - 100; // any place: not page-aligned
  const [placed] = await pool.run("decodeClip", {
    ...item(),
    dest: { address: shm.address + BigInt(at), length: clipBytes },
  }, ctx) as { data: Uint8Array; outcome: unknown }[];
  assert.equal(placed.data.length, 0, "the pixels stay where they were written");
  assert.deepEqual(shm.bytes.subarray(at, at + clipBytes), copied.data);
  assert.ok(shm.bytes.subarray(0, at).every((b) => b === 0), "nothing written before the place");
  await assert.rejects(
    () => pool.run("decodeClip", { ...item(), dest: { address: shm.address, length: clipBytes + 1 } }, ctx),
    (e: unknown) => e instanceof InvalidArgumentError && /takes 18000 bytes/.test(e.message),
  );
});

Deno.test("slots give the copying loader's batches byte for byte: 2 epochs, both backends, failed clips replaced, a partial last batch", async () => {
  const want = await run({});
  assert.ok(want.replaced > 0 && want.failed > 0, "the dataset has clips that fail and are replaced");
  assert.equal(want.digests.length % 2, 0);
  const perEpoch = want.digests.length / 2;
  assert.ok(JSON.parse(want.digests[perEpoch - 1])[2][0] < 3, "the last batch of an epoch is partial");
  for (const backend of ["inprocess", "subprocess"] as const) {
    const got = await run({ slots: 2, backend });
    assert.deepEqual(got.digests, want.digests, backend);
    assert.equal(got.slotBacked, got.digests.length);
  }
});

Deno.test('slots with "skip" (gaps closed in the slot), planar layout and float32, failed first clips: the copying loader\'s batches', async () => {
  for (
    const o of [
      { onClipError: "skip" },
      { layout: "BCTHW", clip: { numFrames: 4, width: 32, height: 24, dtype: "float32" } },
      // every failed clip is the first of its batch, and decode runs ahead: its slot is still taken in turn
      { batchSize: 1 },
      { batchSize: 1, onClipError: "skip" },
    ] as Partial<LoaderOptions>[]
  ) {
    const want = await run(o);
    const got = await run({ ...o, slots: 3 });
    assert.deepEqual(got.digests, want.digests, JSON.stringify(o));
    assert.equal(got.slotBacked, got.digests.length);
  }
});

Deno.test("a consumer holding every slot gets a clear error, never reused memory; a disposed batch reads empty", async () => {
  await using loader = await videoClassificationLoader(await options({ slots: 2 }));
  const it = loader[Symbol.asyncIterator]();
  const a = (await it.next()).value as Batch, b = (await it.next()).value as Batch;
  const before = await digest(b);
  await assert.rejects(
    () => it.next(),
    (e: unknown) => e instanceof InvalidArgumentError && /all 2 batch slots are held/.test(e.message),
  );
  a[Symbol.dispose]();
  assert.equal(a.data.length, 0);
  const c = (await it.next()).value as Batch;
  assert.equal(await digest(b), before, "the held batch is intact");
  assert.equal(slotOf(c)!.slot, 0, "the third batch reuses the slot given back");
  b[Symbol.dispose]();
  c[Symbol.dispose]();
  await it.return!();
});

Deno.test("cacheLoader keeps copies of slot batches: the replay is the batches first seen", async () => {
  await using loader = await videoClassificationLoader(await options({ slots: 2 }));
  const seen: string[] = [];
  for await (using b of cacheLoader(loader, { numCached: 3, stopAfter: 7 })) seen.push(await digest(b));
  assert.deepEqual(seen.slice(3), [...seen.slice(0, 3), seen[0]]);
});

/** Batch slots of `slots` × `batchSize` clips of `spec` over `videos` one-clip videos (unshuffled plan). */
function slotsOf(
  slots: number,
  spec: ClipSpec,
  batchSize: number,
  lookahead?: number,
  videos = 12,
): BatchSlots {
  const sampler = new ClipSampler(Array.from({ length: videos }, () => ({ start: 0, end: 10 })), {
    shuffle: false,
    clipDurationSec: 1,
  });
  return new BatchSlots(
    slots,
    spec,
    batchSize,
    "BTHWC",
    sampler,
    lookahead === undefined ? {} : { lookahead },
  );
}

Deno.test("decoding ahead is bounded by lookahead, not slots: a batch further ahead of the consumer gets no slot yet", async () => {
  // Issue 30 item 5: with many slots, clips of batches far ahead (decode once serves them early) took slots,
  // so a slow trainer's server had all of its slots' pages touched.
  using slots = slotsOf(16, testSpec({ numFrames: 1, width: 8, height: 8 }), 1, 3);
  const meta = (position: number) => clipBase("v.mp4", 0, 1, position, 0);
  for (const p of [0, 1, 2]) assert.ok(slots.tryPlace(meta(p)) !== undefined, `batch ${p} is within reach`);
  assert.equal(slots.tryPlace(meta(3)), undefined, "batch 3 is 3 ahead of the consumer's next (0)");
  assert.equal(slots.ring.stats().inUse, 3);
  let placed = false;
  const later = slots.place(meta(3)).then((d) => (placed = true, d));
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(placed, false, "it waits for the consumer, whatever slots are free");
  // batch 0 leaves (dropped here, as a batch of failed clips is): batch 3 is in reach
  const failed = { ...meta(0), stage: "decode", error: "x", attempt: 0 } as unknown as ClipFailure;
  slots.collate([{ clip: null, failures: [failed] }], [], true);
  assert.ok((await later).length > 0);
  assert.equal(slots.ring.stats().inUse, 3);
});

Deno.test("a ring larger than the memory left is refused naming slots, batchSize, numFrames, height, width and their costs", () => {
  // Issue 30 item 5: 1024 slots of 38 MB were accepted on a 23 GB machine; larger products said "batch size must
  // be a positive byte count, got 527765581332480000" or a bare "mmap failed (errno 12)".
  const free = availableMemory();
  if (free === null) return; // no /proc/meminfo: nothing to check against
  const huge = testSpec({ numFrames: 10000, width: 16384, height: 16384 });
  assert.throws(
    () => slotsOf(1024, huge, 65536),
    (e: Error) =>
      e instanceof InvalidArgumentError &&
      e.message.startsWith(
        "loader: slots (1024) × batchSize (65536) × clip.numFrames (10000) × clip.height (16384) × clip.width " +
          "(16384) × 3 channels × 1 byte (uint8) need 468.8 EiB of batch slots, more than the ",
      ) &&
      /one more of slots costs 468\.8 PiB \(a slot\), of batchSize 7\.3 PiB .* of clip\.numFrames 48\.0 PiB, of clip\.height 29\.3 PiB, of clip\.width 29\.3 PiB/
        .test(e.message) &&
      !/\d{12}/.test(e.message),
  );
  // 8 slots of a quarter of what is left: twice too much; 1 of an eighth fits
  const row = 1024 * 3 * 4 * 1000; // a row of 1000 float32 frames 1024 wide
  const spec = (part: number) =>
    testSpec({ numFrames: 1000, width: 1024, height: Math.ceil(free.bytes / part / row), dtype: "float32" });
  assert.throws(
    () => slotsOf(8, spec(4), 1),
    /float32\) need .* of batch slots, more than the .* \(.*\)\. Lower/,
  );
  using fits = slotsOf(1, spec(8), 1);
  assert.equal(fits.ring.slots, 1);
});
