/**
 * The per-clip cost breakdown (issue 23 item 2): `ClipProfile` adds phase times and divides by clips (hand
 * computed); a loader with `profile: true` times every phase of every clip, on the Workers and on the main thread,
 * with both backends (the demux phases cross from the backend child with the clips); without it, no spans and
 * `stats().profile` is null; the batches are the same either way.
 */
import assert from "node:assert/strict";
import { type LoaderOptions, videoClassificationLoader } from "../../src/loader/loader.ts";
import { ClipProfile, formatProfile, PHASES } from "../../src/loader/decode/clip_profile.ts";
import { lap, startSpans, takeSpans, threadMs } from "../../src/media/spans.ts";
import type { Batch } from "../../src/loader/batch/collate.ts";
import { generateClip, hasFfmpegCliSync } from "../helpers/media.ts";
import { sameBytes } from "../helpers/decode_oracles.ts";

const CLI = hasFfmpegCliSync();

Deno.test("ClipProfile: phase times per clip, worker and main sums", () => {
  const p = new ClipProfile();
  p.add({ decode: 6, open: 2 });
  p.add({ decode: 2 });
  p.addMain("place", 1);
  p.addMain("collate", 3);
  p.count(4);
  const s = p.stats();
  assert.equal(s.clips, 4);
  assert.deepEqual(s.phases.map((x) => x.phase), PHASES.map(([n]) => n));
  assert.equal(s.phases.find((x) => x.phase === "decode")!.msPerClip, 2);
  assert.equal(s.phases.find((x) => x.phase === "open")!.totalMs, 2);
  assert.equal(s.workerMsPerClip, 2.5);
  // the main thread's CPU since the profile started, place and collate included (the rest is "pipeline")
  const pipeline = s.phases.find((x) => x.phase === "pipeline")!.msPerClip;
  assert.ok(pipeline >= 0);
  assert.ok(Math.abs(s.mainMsPerClip - (1 + pipeline)) < 1e-9);
  assert.match(formatProfile(s), /decode\s+worker\s+2\.000/);
});

Deno.test("spans: laps add to the open span only", () => {
  lap("x"); // nothing open: ignored
  assert.equal(takeSpans(), null);
  startSpans();
  lap("a");
  lap("b");
  lap("a");
  const t = takeSpans()!;
  assert.deepEqual(Object.keys(t).sort(), ["a", "b"]);
  assert.ok(t.a >= 0 && t.b >= 0);
  // the thread's CPU clock, not the wall clock: a 100 ms sleep spends (almost) none
  const t1 = threadMs();
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);
  assert.ok(threadMs() - t1 < 50, "a sleep spends no CPU");
  lap("c");
  assert.equal(takeSpans(), null);
});

let datasetDir: Promise<string> | undefined;
function dataset(): Promise<string> {
  datasetDir ??= (async () => {
    const dir = await Deno.makeTempDir({ prefix: "sluice-profile-" });
    await Deno.mkdir(`${dir}/a`);
    for (const [i, source] of ["testsrc2", "mandelbrot"].entries()) {
      const path = await generateClip({ width: 96, height: 64, fps: 25, durationSec: 4, gop: 25, source });
      await Deno.copyFile(path, `${dir}/a/v${i}.mp4`);
    }
    globalThis.addEventListener("unload", () => Deno.removeSync(dir, { recursive: true }));
    return dir;
  })();
  return datasetDir;
}

async function run(o: Partial<LoaderOptions>) {
  await using loader = await videoClassificationLoader({
    dataset: await dataset(),
    batchSize: 2,
    clip: { numFrames: 6, width: 32, height: 24 },
    sampler: { clipsPerVideo: 3, seed: 3 },
    concurrency: { decode: 2 },
    log: () => {},
    ...o,
  });
  const batches: Batch[] = [];
  for await (const b of loader) batches.push(b);
  return { batches, stats: loader.stats() };
}

for (const backend of ["inprocess", "subprocess"] as const) {
  Deno.test({
    name: `loader profile (${backend}): every phase timed per clip; off: none; same batches`,
    ignore: !CLI,
    sanitizeResources: false,
    fn: async () => {
      const on = await run({ profile: true, backend });
      const off = await run({ backend });
      assert.equal(off.stats.profile, null);
      const p = on.stats.profile!;
      // every clip of the epoch decoded (a pass serving several counts each)
      assert.equal(p.clips, on.stats.clips.total.delivered);
      assert.equal(p.clips, 6);
      for (const s of p.phases) {
        if (s.phase === "place") assert.equal(s.totalMs, 0, "no batch slots: nothing placed");
        else if (s.phase === "audio") assert.equal(s.totalMs, 0, "no audio option: no audio decoded");
        else assert.ok(s.totalMs > 0, `phase ${s.phase} timed: ${JSON.stringify(s)}`);
      }
      assert.ok(p.workerMsPerClip > 0 && p.mainMsPerClip > 0);
      assert.equal(on.batches.length, off.batches.length);
      for (const [i, b] of on.batches.entries()) {
        assert.deepEqual(b.clips, off.batches[i].clips);
        assert.ok(sameBytes(b.data as Uint8Array, off.batches[i].data as Uint8Array));
        for (const c of b.clips) assert.equal("phases" in c, false, "phase times stay out of the metadata");
      }
    },
  });
}
