/** The loader exposes its pipeline's stages: names, concurrency read and changed while an epoch runs. */
import assert, { deepStrictEqual as assertEquals } from "node:assert/strict";
import { videoClassificationLoader } from "../../src/loader/loader.ts";
import { makeSyntheticDataset } from "../helpers/synthetic.ts";
import { InvalidArgumentError, MediaError } from "../../src/errors.ts";
import type { PipelineEvent } from "../../src/pipeline/hooks.ts";
import type { PipelineStats } from "../../src/pipeline/stats.ts";

async function dataset(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "sluice-stages-" });
  makeSyntheticDataset(dir, { videos: 4, classes: 2, durationSec: 1, width: 96, height: 64 });
  return dir;
}

const base = {
  batchSize: 2,
  clip: { numFrames: 4, width: 32, height: 32 },
  sampler: { seed: 1, clipsPerVideo: 2 },
  log: () => {},
};

Deno.test("loader.stage(name).setConcurrency changes a running stage; stats show it; the epoch stays whole", async () => {
  const dir = await dataset();
  try {
    await using loader = await videoClassificationLoader({
      ...base,
      dataset: dir,
      concurrency: { decode: 1 },
    });
    const names = loader.stages.map((s) => s.name);
    for (const n of ["sample", "fetch", "demux", "decode", "collate"]) {
      assert(names.includes(n), names.join(","));
    }
    assertEquals(loader.stage("decode").concurrency, 1);
    let clips = 0, batches = 0;
    for await (using batch of loader) {
      if (batches++ === 0) loader.stage("decode").setConcurrency(2);
      clips += batch.labels.length;
    }
    assertEquals(clips, loader.clipsPerEpoch);
    assertEquals(loader.stage("decode").concurrency, 2);
    assertEquals(loader.stats().pipeline.stages.find((s) => s.name === "decode")!.concurrency, 2);
    assert.throws(() => loader.stage("nope"), /no stage named "nope"/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("with the subprocess backend, the child's stages are named as the child's", async () => {
  const dir = await dataset();
  try {
    await using loader = await videoClassificationLoader({ ...base, dataset: dir, backend: "subprocess" });
    assertEquals(loader.stage("decode").name, "decode");
    assert.throws(
      () => loader.stage("demux"),
      (e) => e instanceof InvalidArgumentError && /demux run in the child process/.test(e.message),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test('concurrency "auto": the controller owns demux and decode, the decode pool grows with it, the epoch stays whole', async () => {
  const dir = await dataset();
  try {
    await using loader = await videoClassificationLoader({
      ...base,
      dataset: dir,
      sampler: { seed: 1, clipsPerVideo: 6 },
      concurrency: { demux: "auto", decode: "auto" },
      autoConcurrency: { intervalMs: 100 },
    });
    const row = (name: string) => loader.stats().pipeline.stages.find((s) => s.name === name)!;
    assertEquals([row("demux").auto, row("decode").auto, row("fetch").auto], [true, true, false]);
    assertEquals(row("decode").concurrency, 1); // the controller starts at 1
    let clips = 0;
    for (let e = 0; e < 3; e++) for await (using batch of loader) clips += batch.labels.length;
    assertEquals(clips, 3 * loader.clipsPerEpoch);
    const s = loader.stats().pipeline;
    assert(
      s.controller.stages.includes("decode") && s.controller.stages.includes("demux"),
      s.controller.stages.join(),
    );
    for (const d of s.controller.log) assert(typeof d.reason === "string" && d.reason !== ""); // each with its why
    // a number pins a stage again, and the decode pool (started at 1 Worker) grows to serve it
    loader.stage("decode").setConcurrency(3);
    assertEquals([row("decode").auto, row("decode").concurrency], [false, 3]);
    for await (using more of loader) clips += more.labels.length;
    assert((await loader.memoryReport()).workers.length >= 3);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test('concurrency: a value other than an integer from 1 to 256 or "auto" is refused by name', async () => {
  for (const bad of [0, 2.5, 300, "fast"]) {
    await assert.rejects(
      videoClassificationLoader({ ...base, dataset: "unused", concurrency: { decode: bad as number } }),
      (e) =>
        e instanceof InvalidArgumentError &&
        /concurrency\.decode must be an integer from 1 to 256 or "auto"/.test(e.message),
    );
  }
});

Deno.test("hooks: the loader's pipeline reports to LoaderOptions.hooks while it runs and as each epoch ends, both backends", async () => {
  const dir = await dataset();
  try {
    for (const backend of ["inprocess", "subprocess"] as const) {
      const reports: [PipelineStats, boolean][] = [];
      await using loader = await videoClassificationLoader({
        ...base,
        dataset: dir,
        backend,
        hooks: [{ report: (s, final) => reports.push([s, final]) }],
        reportInterval: 20,
      });
      let batches = 0;
      for (let e = 0; e < 2; e++) for await (using _ of loader) batches++;
      const finals = reports.filter(([, final]) => final).map(([s]) => s);
      assertEquals(finals.map((s) => s.epochs), [1, 2], `${backend}: one final report per epoch`);
      // The last report is the stats the loader ends with: every batch reached the consumer.
      const last = finals.at(-1)!;
      assertEquals(last.stages.at(-1)!.done, batches, backend);
      assertEquals(batches, 2 * Math.ceil(loader.clipsPerEpoch / base.batchSize));
      assertEquals(last.stages.map((r) => r.name), loader.stats().pipeline.stages.map((r) => r.name));
      if (backend === "subprocess") {
        assertEquals(last.stages[0].name, "backend");
        // The child's stats still come through the backend's own channel.
        const b = loader.stats().backend!;
        assertEquals([b.epochs, b.items], [2, 2 * loader.clipsPerEpoch]);
        assert(b.child !== null);
      }
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test('hooks: a clip that fails under onClipError "fail" reaches LoaderOptions.hooks as a failure event with its error', async () => {
  const dir = await dataset();
  try {
    const files = [...Deno.readDirSync(`${dir}/class_00`)].map((e) => `${dir}/class_00/${e.name}`).sort();
    const manifest = `${dir}/with_missing.csv`;
    Deno.writeTextFileSync(
      manifest,
      ["path,label,start,end", ...files.map((f) => `${f},0,,`), `${dir}/nope.mp4,0,0,2`].join("\n"),
    );
    const events: PipelineEvent[] = [];
    await using loader = await videoClassificationLoader({
      ...base,
      dataset: manifest,
      sampler: { seed: 4, clipsPerVideo: 1, shuffle: false },
      onClipError: "fail",
      hooks: [{ event: (e) => events.push(e) }],
    });
    let thrown: unknown;
    try {
      for await (using _ of loader) { /* the error comes with the batch holding the clip */ }
    } catch (e) {
      thrown = e;
    }
    assert(thrown instanceof MediaError && thrown.message.includes(`${dir}/nope.mp4`), String(thrown));
    const failures = events.filter((e) => e.type === "failure");
    assertEquals(failures.length, 1, JSON.stringify(events));
    const f = failures[0] as Extract<PipelineEvent, { type: "failure" }>;
    assert(f.error === thrown, "the event carries the error the loop threw");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
