/**
 * Resuming mid-epoch (`loader.stateDict()` / `loadStateDict()`, the `resume` option; `src/loader/loader_state.ts`).
 * The oracle is the uninterrupted run of the same loader: after resuming from the state it saved after batch k,
 * the rest of its batches are byte for byte the same (SHA-256 of the pixels; labels and each clip's identity),
 * failed clips' substitutes included; the clips before the resume point are never decoded (the decode stage
 * sees only the rest, and the frames decoded are the rest's); states of another dataset, rank or batch-shaping
 * option are refused with the difference named.
 */
import assert from "node:assert/strict";
import {
  type LoaderOptions,
  type LoaderState,
  planLoader,
  type VideoClassificationLoader,
  videoClassificationLoader,
} from "../../src/loader/loader.ts";
import type { Batch } from "../../src/loader/batch/collate.ts";
import { datasetFingerprint } from "../../src/loader/loader_state.ts";
import { makeSyntheticDataset } from "../helpers/synthetic.ts";
import { mixedDataset, mixedRows } from "./mixed_dataset.ts";
import { InvalidArgumentError } from "../../src/errors.ts";
import type { ClipMeta } from "../../src/loader/clip/life.ts";
import { resolveLoaderOptions } from "../../src/loader/loader_options.ts";

const B = 3;

interface Dataset {
  dir: string;
  /** 5 videos, plus a missing and a truncated file whose clips fail (and are replaced). */
  manifest: string;
  /** The same with one label changed. */
  relabelled: string;
}

let made: Promise<Dataset> | undefined;
function dataset(): Promise<Dataset> {
  made ??= (async () => {
    const { dir, manifest, files } = await mixedDataset("sluice-resume-");
    Deno.writeTextFileSync(`${dir}/relabelled.csv`, mixedRows(dir, files, (i) => i === 0));
    return { dir, manifest, relabelled: `${dir}/relabelled.csv` };
  })();
  return made;
}

async function options(o: Partial<LoaderOptions> = {}, sampler: LoaderOptions["sampler"] = {}) {
  return {
    dataset: (await dataset()).manifest,
    batchSize: B,
    clip: { numFrames: 4, width: 32, height: 24 },
    concurrency: { decode: 2 },
    log: () => {},
    ...o,
    sampler: { seed: 0, clipsPerVideo: 2, rank: 0, worldSize: 1, ...sampler },
  } satisfies LoaderOptions;
}

async function sha256(bytes: Uint8Array): Promise<string> {
  const d = await crypto.subtle.digest("SHA-256", bytes.slice());
  return [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

function bytesOf(b: Batch): Uint8Array {
  return new Uint8Array(b.data.buffer, b.data.byteOffset, b.data.byteLength);
}

/** What a clip is, whoever decoded it (decode-once counters left out: who decodes which may differ). */
function identity(c: ClipMeta): string {
  const { decodedFrames: _d, skippedFrames: _s, passClips: _p, ...rest } = c;
  return JSON.stringify(rest);
}

/** One batch as the test compares it. */
interface Seen {
  bytes: Uint8Array;
  labels: number[];
  clips: ClipMeta[];
  /** `loader.stateDict()` right after the consumer took it (JSON round trip, as a checkpoint file holds it). */
  state: LoaderState;
}

/** Iterates `epochs` epochs, copying each batch (then disposing it: slots are reused). */
async function collect(loader: VideoClassificationLoader, epochs = 1): Promise<Seen[]> {
  const seen: Seen[] = [];
  for (let e = 0; e < epochs; e++) {
    for await (using b of loader) {
      seen.push({
        bytes: bytesOf(b).slice(),
        labels: [...b.labels],
        clips: structuredClone(b.clips),
        state: JSON.parse(JSON.stringify(loader.stateDict())),
      });
    }
  }
  return seen;
}

async function digest(batches: Seen[]): Promise<string> {
  const all = new Uint8Array(batches.reduce((n, b) => n + b.bytes.length, 0));
  let at = 0;
  for (const b of batches) {
    all.set(b.bytes, at);
    at += b.bytes.length;
  }
  return await sha256(all);
}

/** Asserts that `got` are `want`'s batches byte for byte, with the same labels and clips. */
async function assertSameBatches(got: Seen[], want: Seen[], what: string): Promise<void> {
  assert.equal(got.length, want.length, `${what}: batches`);
  assert.equal(await digest(got), await digest(want), `${what}: SHA-256 of the batches`);
  for (const [i, g] of got.entries()) {
    assert.deepEqual(g.labels, want[i].labels, `${what}: labels of batch ${i}`);
    assert.deepEqual(g.clips.map(identity), want[i].clips.map(identity), `${what}: clips of batch ${i}`);
  }
}

interface Resumed {
  seen: Seen[];
  loader: VideoClassificationLoader;
}

/** A new loader resumed from `state`, by `loadStateDict` or by the `resume` option, run for `epochs`. */
async function resume(
  opts: LoaderOptions,
  state: LoaderState,
  how: "load" | "option",
  epochs = 1,
): Promise<Resumed> {
  const loader = await videoClassificationLoader(how === "option" ? { ...opts, resume: state } : opts);
  if (how === "load") loader.loadStateDict(state);
  assert.equal(loader.epoch, state.epoch);
  return { seen: await collect(loader, epochs), loader };
}

/**
 * The resumed run's accounting: the skipped positions are the resume point's, every position accounted for,
 * and the decode stage (and the backend child) saw only the clips after it.
 */
function assertSkipped(loader: VideoClassificationLoader, skipped: number, what: string): void {
  const s = loader.stats();
  const e = s.clips.epochs[0];
  assert.equal(e.skipped, skipped, `${what}: skipped`);
  assert.ok(e.complete && e.pending === 0, `${what}: complete`);
  assert.equal(e.planned, e.delivered + e.failed + e.dropped + e.skipped, `${what}: planned adds up`);
  const decode = s.pipeline.stages.find((r) => r.name === "decode")!;
  assert.equal(decode.tasksIn, loader.clipsPerEpoch - skipped, `${what}: clips that reached decode`);
  if (s.backend !== null) {
    assert.equal(s.backend.items, loader.clipsPerEpoch - skipped, `${what}: child items`);
  }
}

Deno.test("resumed after batch 1, the middle and the last batch (seeds 0-4, both backends): the uninterrupted run's batches, nothing before decoded", async () => {
  let straddled = 0, substitutesFromBefore = 0;
  for (const backend of ["inprocess", "subprocess"] as const) {
    for (let seed = 0; seed < 5; seed++) {
      const opts = await options({ backend }, { seed });
      await using whole = await videoClassificationLoader(opts);
      const full = await collect(whole);
      const n = whole.batchesPerEpoch;
      assert.equal(full.length, n);
      assert.ok(whole.stats().clips.total.replaced > 0, "some clips fail and are replaced");
      full.forEach((b, i) => assert.deepEqual([b.state.epoch, b.state.batches], [0, i + 1]));
      for (const k of [1, Math.floor(n / 2), n - 1]) {
        const what = `${backend}, seed ${seed}, after batch ${k}`;
        const how = (seed + k) % 2 === 0 ? "load" : "option";
        const { seen, loader } = await resume(opts, full[k - 1].state, how);
        await using _ = loader;
        await assertSameBatches(seen, full.slice(k), what);
        assertSkipped(loader, k * B, what);
        assert.deepEqual(loader.stateDict().epoch, 1, `${what}: the epoch ran to its end`);
        // what the comparison covered: decode-once groups cut by the resume point, substitutes from before it
        const rest = full.slice(k).flatMap((b) => b.clips), got = seen.flatMap((b) => b.clips);
        if (got.some((c, i) => c.passClips !== rest[i].passClips)) straddled++;
        const before = new Set(full.slice(0, k).flatMap((b) => b.clips).map((c) => `${c.path}@${c.start}`));
        if (got.some((c) => c.replaces !== undefined && before.has(`${c.path}@${c.start}`))) {
          substitutesFromBefore++;
        }
      }
    }
  }
  assert.ok(straddled > 0, "some resume point cut a decode-once group");
  assert.ok(substitutesFromBefore > 0, "some substitute was a clip from before the resume point");
});

Deno.test('resuming with "skip", dropLast, slots, "auto" concurrency, a small or no shuffle buffer, planar float32, DDP rank 1 of 2', async () => {
  const variants: [string, Partial<LoaderOptions>, LoaderOptions["sampler"]][] = [
    ["skip", { onClipError: "skip" }, { seed: 3 }],
    ["dropLast", { dropLast: true }, { seed: 1 }],
    ["slots", { slots: 2 }, { seed: 2 }],
    ["slots, subprocess", { slots: 2, backend: "subprocess" }, { seed: 4 }],
    ["auto", { concurrency: { decode: "auto", demux: "auto", fetch: "auto" } }, { seed: 2 }],
    ["shuffle buffer 3", {}, { seed: 0, shuffleBuffer: 3 }],
    ["no shuffle buffer", {}, { seed: 0, shuffleBuffer: 0 }],
    ["planar float32", { layout: "BCTHW", clip: { numFrames: 4, width: 32, height: 24, dtype: "float32" } }, {
      seed: 1,
    }],
    ["rank 1 of 2", {}, { seed: 2, rank: 1, worldSize: 2 }],
  ];
  for (const [name, o, sampler] of variants) {
    const opts = await options(o, sampler);
    await using whole = await videoClassificationLoader(opts);
    const full = await collect(whole);
    if (name === "skip") assert.ok(full.some((b) => b.clips.length < B), "skip: short batches");
    for (const k of [Math.floor(full.length / 2), full.length - 1]) {
      const what = `${name}, after batch ${k}`;
      const { seen, loader } = await resume(opts, full[k - 1].state, "load");
      await using _ = loader;
      await assertSameBatches(seen, full.slice(k), what);
      assertSkipped(loader, k * B, what);
    }
  }
});

Deno.test("the frames decoded after resuming are exactly the rest of the epoch's (decode once off)", async () => {
  const opts = await options({ decodeLess: { once: false } }, { seed: 4 });
  await using whole = await videoClassificationLoader(opts);
  const full = await collect(whole);
  const frames = (batches: Seen[]) =>
    batches.flatMap((b) => b.clips).reduce((n, c) => n + c.decodedFrames, 0);
  assert.equal(frames(full), whole.stats().clips.total.decodedFrames);
  for (const k of [1, 2, full.length - 1]) {
    const { seen, loader } = await resume(opts, full[k - 1].state, "load");
    await using _ = loader;
    await assertSameBatches(seen, full.slice(k), `after batch ${k}`);
    assert.equal(loader.stats().clips.total.decodedFrames, frames(full.slice(k)), `after batch ${k}`);
    assert.ok(loader.stats().clips.total.decodedFrames < frames(full));
  }
});

Deno.test("resuming in a later epoch runs the rest of it, then the next epochs as the uninterrupted run", async () => {
  for (const backend of ["inprocess", "subprocess"] as const) {
    const opts = await options({ backend }, { seed: 1 });
    await using whole = await videoClassificationLoader(opts);
    const full = await collect(whole, 3);
    const per = whole.batchesPerEpoch;
    assert.deepEqual(whole.stateDict().epoch, 3);
    assert.deepEqual(whole.stateDict().batches, 0);
    // in epoch 1 after 2 batches; and at an epoch's end (all its batches delivered)
    for (const at of [per + 2, per - 1, 2 * per - 1]) {
      const state = full[at - 1].state;
      const epochs = 3 - state.epoch;
      // by the resume option too, once, with no firstEpoch: the state's epoch is the first (a resolved default of
      // 0 once refused every state of a later epoch: "firstEpoch is 0 but the resume state is in epoch 1")
      for (const how of at === per + 2 ? ["load", "option"] as const : ["load"] as const) {
        const { seen, loader } = await resume(opts, state, how, epochs);
        await using _ = loader;
        await assertSameBatches(seen, full.slice(at), `${backend}, ${how}, after batch ${at} of 3 epochs`);
      }
    }
  }
});

Deno.test("stateDict is the consumer's place: before, during, after a break, at an epoch's end; undelivered batches go back", async () => {
  const opts = await options({ firstEpoch: 2 }, { seed: 3 });
  await using loader = await videoClassificationLoader(opts);
  const at = () => [loader.stateDict().epoch, loader.stateDict().batches];
  assert.deepEqual(at(), [2, 0]);
  const kept: Batch[] = [];
  for await (const b of loader) {
    kept.push(b);
    assert.deepEqual(at(), [2, kept.length]);
    assert.deepEqual(loader.stateDict(kept[0]).batches, 1, "the place after a given batch");
    if (kept.length === 3) break;
  }
  assert.deepEqual(at(), [2, 3], "after a break: where the consumer stopped");
  loader.undelivered(kept[2].clips);
  assert.deepEqual(at(), [2, 2], "a batch taken back");
  loader.undelivered(kept[1].clips);
  assert.deepEqual(at(), [2, 1]);
  assert.throws(
    () => loader.loadStateDict(loader.stateDict()),
    (e: unknown) => e instanceof InvalidArgumentError && /before the first epoch starts/.test(e.message),
  );
  const it = loader[Symbol.asyncIterator]();
  assert.deepEqual(at(), [3, 0], "a new epoch started");
  while (!(await it.next()).done) { /* the whole epoch */ }
  assert.deepEqual(at(), [4, 0], "an epoch run to its end: the next one");
  assert.equal(
    JSON.stringify(JSON.parse(JSON.stringify(loader.stateDict()))),
    JSON.stringify(loader.stateDict()),
  );
});

Deno.test("a state saved by a process killed mid-epoch resumes in another process", async () => {
  const opts = await options({}, { seed: 2 });
  await using whole = await videoClassificationLoader(opts);
  const full = await collect(whole);
  const dir = await Deno.makeTempDir({ prefix: "sluice-resume-child-" });
  try {
    const script = `${dir}/train.ts`, stateFile = `${dir}/state.json`;
    const loaderUrl = new URL("../../src/loader/loader.ts", import.meta.url).href;
    const { log: _log, ...plain } = opts;
    Deno.writeTextFileSync(
      script,
      `import { videoClassificationLoader } from ${JSON.stringify(loaderUrl)};
const loader = await videoClassificationLoader({ ...${JSON.stringify(plain)}, log: () => {} });
let n = 0;
for await (using _ of loader) {
  if (++n === 2) {
    Deno.writeTextFileSync(${JSON.stringify(stateFile)}, JSON.stringify(loader.stateDict()));
    console.log("saved");
    await new Promise(() => {}); // a training step that never ends: killed here
  }
}`,
    );
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", script],
      stdout: "piped",
      stderr: "null",
    }).spawn();
    const reader = child.stdout.getReader();
    let out = "";
    while (!out.includes("saved")) {
      const r = await reader.read();
      if (r.done) break;
      out += new TextDecoder().decode(r.value);
    }
    child.kill("SIGKILL");
    await child.status;
    reader.releaseLock();
    await child.stdout.cancel();
    const state = JSON.parse(Deno.readTextFileSync(stateFile));
    assert.deepEqual(state, full[1].state, "the child's state is this process's");
    const { seen, loader } = await resume(opts, state, "option");
    await using _ = loader;
    await assertSameBatches(seen, full.slice(2), "resumed in another process");
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("a state of another dataset, rank, seed or batch-shaping option is refused, naming the difference", async () => {
  const { relabelled } = await dataset();
  const opts = await options({}, { seed: 1 });
  await using source = await videoClassificationLoader(opts);
  const state = (await collect(source))[1].state;
  const refused = async (o: Partial<LoaderOptions>, sampler: LoaderOptions["sampler"], re: RegExp) => {
    const options_ = { ...(await options(o, { seed: 1, ...sampler })) };
    await using loader = await videoClassificationLoader(options_);
    assert.throws(
      () => loader.loadStateDict(state),
      (e: unknown) => e instanceof InvalidArgumentError && re.test(e.message),
      JSON.stringify([o, sampler]),
    );
    await assert.rejects(
      () => videoClassificationLoader({ ...options_, resume: state }),
      (e: unknown) => e instanceof InvalidArgumentError && re.test(e.message),
    );
  };
  await refused({ dataset: relabelled }, {}, /another dataset \(7 indexed videos, .*this loader's has 7/);
  await refused({ batchSize: 4 }, {}, /batching\.batchSize: the state's 3, this loader's 4/);
  await refused(
    { clip: { numFrames: 4, width: 40, height: 24 } },
    {},
    /batching\.clip\.width: the state's 32, this loader's 40/,
  );
  await refused({}, { seed: 2 }, /seed: the state's 1, this loader's 2/);
  await refused({}, { clipsPerVideo: 3 }, /batching\.sampler\.clipsPerVideo: the state's 2, this loader's 3/);
  await refused(
    { onClipError: "skip" },
    {},
    /batching\.onClipError: the state's "replace", this loader's "skip"/,
  );
  await refused({ dropLast: true }, {}, /batching\.dropLast/);
  await refused({}, { rank: 1, worldSize: 2 }, /the state is rank 0 of 1's; this loader is rank 1 of 2/);
  await refused({ ordered: false }, {}, /resuming needs ordered output/);
  // a state that is not one, or lies beyond the epoch
  await using loader = await videoClassificationLoader(opts);
  for (
    const [bad, re] of [
      [{ ...state, batches: 6 }, /6 batches of epoch 0 were delivered; an epoch has 5/],
      [{ ...state, version: 9 }, /version 9; this sluice reads version 1/],
      [{ epoch: 0 }, /not a loader state/],
      ["state.json", /not a loader state/],
    ] as const
  ) {
    assert.throws(
      () => loader.loadStateDict(bad as LoaderState),
      (e: unknown) => e instanceof InvalidArgumentError && re.test(e.message),
      JSON.stringify(bad),
    );
  }
  await assert.rejects(
    () => videoClassificationLoader({ ...opts, firstEpoch: 1, resume: state }),
    (e: unknown) =>
      e instanceof InvalidArgumentError &&
      /firstEpoch is 1 but the resume state is in epoch 0/.test(e.message),
  );
});

Deno.test("the device a loader decodes on is no part of its state: a state resumes on another device (LOCAL_RANK)", async () => {
  const opts = await options({}, { seed: 3 });
  await using whole = await videoClassificationLoader(opts);
  const full = await collect(whole);
  const state = full[1].state;
  assert.equal("device" in state.batching.clip, false);
  const { seen, loader } = await resume({ ...opts, device: 1 }, state, "load");
  await using _ = loader;
  await assertSameBatches(seen, full.slice(2), "resumed with device 1");
  // a state that names the device it was saved on resumes too
  const named = { ...state, batching: { ...state.batching, clip: { ...state.batching.clip, device: 0 } } };
  const again = await resume({ ...opts, device: 1 }, named, "option");
  await using __ = again.loader;
  await assertSameBatches(again.seen, full.slice(2), "a state naming device 0, resumed with device 1");
});

Deno.test("the dataset fingerprint: the same files indexed the same way, wherever the dataset is; not mtimes", async () => {
  const a = await Deno.makeTempDir({ prefix: "sluice-fp-a-" });
  const b = await Deno.makeTempDir({ prefix: "sluice-fp-b-" });
  try {
    makeSyntheticDataset(a, { videos: 3, classes: 2, durationSec: 1, fps: 25, width: 64, height: 48 });
    for (const c of ["class_00", "class_01"]) {
      Deno.mkdirSync(`${b}/${c}`);
      for (const e of Deno.readDirSync(`${a}/${c}`)) {
        Deno.copyFileSync(`${a}/${c}/${e.name}`, `${b}/${c}/${e.name}`);
      }
    }
    const fingerprint = async (dir: string, keyframeAligned = false) => {
      const plan = await planLoader(resolveLoaderOptions({
        dataset: dir,
        batchSize: 2,
        clip: { numFrames: 2, width: 16, height: 16 },
        sampler: { keyframeAligned },
        log: () => {},
      }));
      return datasetFingerprint(plan.front, plan.dataset.root);
    };
    const fa = await fingerprint(a);
    assert.match(fa, /^[0-9a-f]{64}$/);
    assert.equal(await fingerprint(a), fa, "stable");
    assert.equal(await fingerprint(b), fa, "a copy elsewhere");
    const first = `${a}/class_00/${[...Deno.readDirSync(`${a}/class_00`)].map((e) => e.name).sort()[0]}`;
    Deno.utimeSync(first, new Date(2001, 1, 1), new Date(2001, 1, 1));
    assert.equal(await fingerprint(a), fa, "mtimes do not count");
    assert.notEqual(await fingerprint(a, true), fa, "indexed keyframes count");
    Deno.renameSync(first, first.replace("class_00", "class_01"));
    assert.notEqual(await fingerprint(a), fa, "a video in another class");
  } finally {
    Deno.removeSync(a, { recursive: true });
    Deno.removeSync(b, { recursive: true });
  }
});
