import assert from "node:assert/strict";
import { type LoaderOptions, videoClassificationLoader } from "../../src/loader/loader.ts";
import type { Batch } from "../../src/loader/batch/collate.ts";
import type { ClipStats } from "../../src/loader/batch/clip_stats.ts";
import { assertAccounted } from "./accounting.ts";
import { clipSeed, type SamplerOptions } from "../../src/dataset/sampler.ts";
import { encodeSyntheticVideo, makeSyntheticDataset, readPattern } from "../helpers/synthetic.ts";
import { InvalidArgumentError, MediaError, PipelineFailure } from "../../src/errors.ts";
import { generateClip, hasFfmpegCliSync, oracleCli, runCli, sharedMedia } from "../helpers/media.ts";
import { probeFrameTimes } from "../helpers/decode_oracles.ts";
import { serveDir } from "../helpers/http_server.ts";

const FPS = 25, W = 64, H = 48, T = 6;

/** A small synthetic dataset shared by the tests of this file (6 videos of 2 s, 3 classes). */
let datasetDir: Promise<string> | undefined;
function dataset(): Promise<string> {
  datasetDir ??= (async () => {
    const dir = await Deno.makeTempDir({ prefix: "sluice-loader-" });
    makeSyntheticDataset(dir, { videos: 6, classes: 3, durationSec: 2, fps: FPS, width: 96, height: 64 });
    globalThis.addEventListener("unload", () => Deno.removeSync(dir, { recursive: true }));
    return dir;
  })();
  return datasetDir;
}

/** Options of a loader over `dataset`: batches of `batchSize` clips of T frames of W×H, one decode Worker. */
function options(
  dataset: string,
  batchSize: number,
  sampler: SamplerOptions,
  o: Partial<LoaderOptions> = {},
): LoaderOptions {
  return {
    dataset,
    batchSize,
    sampler: { rank: 0, worldSize: 1, ...sampler },
    clip: { numFrames: T, width: W, height: H },
    concurrency: { decode: 1 },
    ...o,
  };
}

interface Run {
  batches: Batch[];
  /** Per-stage task failures (clip failures are values, so these stay empty). */
  failed: Record<string, number>;
  clips: ClipStats;
}

async function runEpochs(opts: LoaderOptions, epochs = 1): Promise<Run> {
  await using loader = await videoClassificationLoader({ log: () => {}, ...opts });
  const batches: Batch[] = [];
  for (let e = 0; e < epochs; e++) for await (const b of loader) batches.push(b);
  const failed: Record<string, number> = {};
  for (const s of loader.stats().pipeline.stages) if (s.failed > 0) failed[s.name] = s.failed;
  const clips = loader.stats().clips;
  assertAccounted(clips, batches, loader.clipsPerEpoch, epochs, opts.dropLast ?? false);
  return { batches, failed, clips };
}

/** Checks every frame of every clip against the pattern drawn into it; returns the clips seen. */
function checkBatches(batches: Batch[], planar = false, frameRate?: number): string[] {
  // Resampled clips show, in slot k (pts = start + k/rate), the latest frame whose time rounds to a slot <= k.
  const tol = frameRate === undefined ? 1e-6 : 0.5 / frameRate + 1e-6;
  const seen: string[] = [];
  for (const b of batches) {
    const [B] = b.shape;
    assert.deepEqual(b.shape, planar ? [B, 3, T, H, W] : [B, T, H, W, 3]);
    assert.equal(b.data.length, B * T * H * W * 3);
    for (let i = 0; i < B; i++) {
      const c = b.clips[i];
      assert.equal(b.labels[i], c.label);
      for (let t = 0; t < T; t++) {
        const r = planar
          ? readPattern(b.data as Uint8Array, W, H, (i * 3 * T + t) * W * H, T * W * H)
          : readPattern(b.data as Uint8Array, W, H, (i * T + t) * W * H * 3);
        assert.ok(r !== null, `clip ${i} frame ${t} carries a pattern`);
        assert.equal(r.label, c.label, `${c.path}: label drawn in the frame`);
        const time = r.frameIndex / FPS;
        assert.ok(
          Math.abs(time - c.pts[t]) <= tol,
          `${c.path} frame ${t}: drawn time ${time} ~ pts ${c.pts[t]}`,
        );
        // On screen during the window: the first frame may be presented before its start.
        assert.ok(
          time > c.start - 1 / FPS - 1e-6 && time < c.end,
          `${c.path}: ${time} in [${c.start}, ${c.end})`,
        );
      }
      seen.push(`${c.video}:${c.start.toFixed(4)}`);
    }
  }
  return seen;
}

function digest(batches: Batch[]): string[] {
  return batches.map((b) =>
    JSON.stringify({
      l: [...b.labels],
      c: b.clips.map((c) => [c.label, c.start, c.end, c.pts, c.frameIndex, c.frameKind]),
      s: sum(b.data as Uint8Array),
    })
  );
}

function sum(a: Uint8Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i += 7) s = (s * 31 + a[i]) >>> 0;
  return s;
}

Deno.test("every batch element holds the label and time range the sampler asked for (packed and planar)", async () => {
  const ds = await dataset();
  const base: LoaderOptions = options(ds, 4, { seed: 3, clipsPerVideo: 2 });
  const { batches } = await runEpochs(base);
  const seen = checkBatches(batches);
  assert.equal(seen.length, 12);
  assert.deepEqual([...new Set(batches.flatMap((b) => b.clips.map((c) => c.video)))].sort(), [
    0,
    1,
    2,
    3,
    4,
    5,
  ]);
  const planar = await runEpochs({
    ...base,
    layout: "BCTHW",
    clip: { numFrames: T, width: W, height: H, frameRate: 12.5 },
  });
  for (const b of planar.batches) {
    for (const c of b.clips) {
      assert.ok(c.pts.every((p, t) => t === 0 || Math.abs(p - c.pts[t - 1] - 0.08) < 1e-6));
    }
  }
  checkBatches(planar.batches, true, 12.5);
});

Deno.test("same seed gives the same batches, in-process and in a subprocess backend", async () => {
  const ds = await dataset();
  const opts: LoaderOptions = {
    dataset: ds,
    batchSize: 3,
    sampler: { seed: 11, clipsPerVideo: 2, rank: 0, worldSize: 1, keyframeAligned: true },
    clip: { numFrames: T, width: W, height: H },
    concurrency: { decode: 1, fetch: 4 },
  };
  const a = await runEpochs(opts, 2);
  const b = await runEpochs(opts, 2);
  const sub = await runEpochs({ ...opts, backend: "subprocess" }, 2);
  assert.deepEqual(digest(a.batches), digest(b.batches));
  assert.deepEqual(digest(sub.batches), digest(a.batches));
  checkBatches(sub.batches);
  for (const bt of a.batches) {
    for (const c of bt.clips) assert.equal((c.start * FPS) % FPS, 0, "keyframe-aligned start");
  }
  assert.notDeepEqual(digest(a.batches.slice(0, 4)), digest(a.batches.slice(4)), "epochs differ");
});

Deno.test("ranks load disjoint shards that cover the dataset", async () => {
  const ds = await dataset();
  const videos: number[][] = [];
  for (const rank of [0, 1]) {
    const { batches } = await runEpochs({
      dataset: ds,
      batchSize: 2,
      sampler: { seed: 5, rank, worldSize: 2 },
      clip: { numFrames: T, width: W, height: H },
      concurrency: { decode: 1 },
    });
    checkBatches(batches);
    videos.push(batches.flatMap((b) => b.clips.map((c) => c.video)));
  }
  for (const v of videos) assert.equal(v.length, 3);
  assert.deepEqual(videos.flat().sort(), [0, 1, 2, 3, 4, 5]);
});

Deno.test("HTTP dataset gives the same batches as the local copy; 404 and dropped connections are counted", async () => {
  const ds = await dataset();
  await using srv = serveDir(ds);
  const files: string[] = [];
  for await (const d of Deno.readDir(ds)) {
    for await (const f of Deno.readDir(`${ds}/${d.name}`)) files.push(`${d.name}/${f.name}`);
  }
  files.sort();
  const rows = (base: string) => files.map((f) => `${base}${f},${f.split("/")[0]}`);
  const manifest = (name: string, lines: string[]) => {
    Deno.writeTextFileSync(`${ds}/${name}`, ["path,label,start,end", ...lines].join("\n"));
    return `${ds}/${name}`;
  };
  const opts = (dataset: string): LoaderOptions => ({
    dataset,
    batchSize: 4,
    sampler: { seed: 9, clipsPerVideo: 2, rank: 0, worldSize: 1 },
    clip: { numFrames: T, width: W, height: H },
    concurrency: { decode: 1 },
    fetch: { retries: 1, backoffMs: 5 },
  });
  const local = await runEpochs(opts(manifest("local.csv", rows(`${ds}/`))));
  const remote = await runEpochs(opts(manifest("remote.csv", rows(srv.base))));
  assert.deepEqual(digest(remote.batches), digest(local.batches));
  assert.deepEqual(remote.failed, {});

  const broken = manifest("broken.csv", [
    ...rows(srv.base),
    `${srv.base}class_00/missing.mp4,class_00,0,2`,
    `${srv.dropBase}${files[0]},class_00,0,2`,
  ]);
  const { batches, failed, clips } = await runEpochs(opts(broken));
  // Before: the two videos' fetch tasks failed, their 4 clips were in no count, and batches came up short.
  assert.deepEqual(failed, {}, "clip failures are values, not stage failures");
  assert.equal(clips.total.planned, 16);
  assert.equal(clips.total.failed, 4);
  assert.equal(clips.total.replaced, 4);
  assert.deepEqual(clips.total.failedByStage, { fetch: 4 });
  assert.deepEqual(
    [...new Set(clips.epochs[0].failures.map((f) => f.path))].sort(),
    [`${srv.base}class_00/missing.mp4`, `${srv.dropBase}${files[0]}`].sort(),
  );
  assert.ok(clips.epochs[0].failures.every((f) => f.errorName === "FetchError"));
  assert.deepEqual(batches.map((b) => b.labels.length), [4, 4, 4, 4], "full batches");
  assert.equal(checkBatches(batches).length, 16);
});

/** Batches of 4 clips (2 per video) from the test dataset, decoded by 2 Workers. */
async function fourClipBatches(seed: number): Promise<LoaderOptions> {
  return {
    dataset: await dataset(),
    batchSize: 4,
    sampler: { seed, clipsPerVideo: 2 },
    clip: { numFrames: T, width: W, height: H },
    concurrency: { decode: 2 },
    log: () => {},
  };
}

Deno.test("disposing each batch in the loop changes no batch; memoryReport counts each Worker's FFmpeg objects", async () => {
  const opts = await fourClipBatches(5);
  const kept = await runEpochs(opts, 1);
  await using loader = await videoClassificationLoader(opts);
  const seen: string[] = [];
  let pixels: Uint8Array | Float32Array | undefined;
  for await (using batch of loader) {
    seen.push(...digest([batch]));
    pixels = batch.data;
  }
  assert.deepEqual(seen, digest(kept.batches));
  assert.equal(pixels!.length, 0, "the last batch was freed when its loop body ended");
  assert.deepEqual(loader.stats().clips.total, kept.clips.total);
  const mem = await loader.memoryReport();
  assert.equal(mem.workers.length, 2);
  for (const w of mem.workers) {
    assert.equal(w.native.live.AVCodecContext, 1, "one cached decoder per Worker");
    assert.deepEqual(w.native.finalized, {}, "nothing left to the FinalizationRegistry");
    assert.ok(w.heapUsed > 0 && w.heapUsed <= w.heapTotal);
  }
  assert.ok(mem.rss > mem.main.heapTotal);
});

Deno.test("reused clip and batch buffers change no pixel: 3 epochs equal the slots' batches; a disposed batch's view reads empty", async () => {
  const opts = await fourClipBatches(9);
  // Batch slots decode each clip straight into its place: no clip or batch buffer is ever reused there.
  const want: string[] = [];
  {
    await using loader = await videoClassificationLoader({ ...opts, slots: 3 });
    for (let e = 0; e < 3; e++) for await (using b of loader) want.push(...digest([b]));
  }
  await using loader = await videoClassificationLoader(opts);
  const got: string[] = [];
  const views: Uint8Array[] = [];
  for (let e = 0; e < 3; e++) {
    for await (using b of loader) {
      got.push(...digest([b]));
      views.push(b.data.subarray(0, 16) as Uint8Array);
    }
  }
  assert.deepEqual(got, want);
  assert.ok(
    views.every((v) => v.length === 0),
    "a view kept of a disposed batch reads as empty, never reused",
  );
  const { reused } = await loader.memoryReport();
  assert.ok(reused.clips > 0 && reused.batches > 0, `buffers were reused: ${JSON.stringify(reused)}`);
});

/**
 * Bad files made from synthetic ones (so their good frames still carry the pattern): `gap.mp4`, a screen-capture
 * like VFR clip whose frames jump from 1.16 s to 2.80 s (label 1), and `trunc.mkv`, a Matroska copy cut at half
 * its bytes whose header still says 4 s (label 2).
 */
let badDir: Promise<string> | undefined;
function badMedia(): Promise<string> {
  badDir ??= (async () => {
    const dir = await Deno.makeTempDir({ prefix: "sluice-loader-bad-" });
    globalThis.addEventListener("unload", () => Deno.removeSync(dir, { recursive: true }));
    const opts = { frames: 100, fps: FPS, width: 96, height: 64 };
    encodeSyntheticVideo(`${dir}/src1.mp4`, { ...opts, label: 1, seed: 21 });
    encodeSyntheticVideo(`${dir}/src2.mp4`, { ...opts, label: 2, seed: 22 });
    const ffmpeg = async (args: string[]) => {
      const r = await runCli("ffmpeg", ["-v", "error", "-y", ...args]);
      if (r.code !== 0) throw new Error(`ffmpeg ${args.join(" ")}: ${r.stderr}`);
    };
    await ffmpeg([
      "-i",
      `${dir}/src1.mp4`,
      "-vf",
      "select='not(between(t,1.2,2.79))'",
      "-fps_mode",
      "passthrough",
      "-c:v",
      "libx264",
      "-preset",
      "veryfast",
      "-qp",
      "10",
      `${dir}/gap.mp4`,
    ]);
    await ffmpeg(["-i", `${dir}/src2.mp4`, "-c", "copy", `${dir}/full.mkv`]);
    const full = await Deno.readFile(`${dir}/full.mkv`);
    await Deno.writeFile(`${dir}/trunc.mkv`, full.subarray(0, full.length >> 1));
    return dir;
  })();
  return badDir;
}

/** The synthetic dataset plus broken, truncated and gappy files, as a manifest (`path,label,start,end`). */
async function mixedManifest(): Promise<{ manifest: string; bad: string[] }> {
  const ds = await dataset(), bad = await badMedia();
  const rows: string[] = [];
  for (const d of [...Deno.readDirSync(ds)].filter((e) => e.isDirectory).map((e) => e.name).sort()) {
    for (const f of [...Deno.readDirSync(`${ds}/${d}`)].map((e) => e.name).sort()) {
      rows.push(`${ds}/${d}/${f},${Number(d.slice(6))},,`);
    }
  }
  const badRows = [
    `${bad}/gap.mp4,1,,`, // windows in the gap show the frame before it, held
    `${bad}/gap.mp4,1,1.25,2.75`, // every window inside the gap
    `${bad}/trunc.mkv,2,,`, // windows past the cut fail
    `${bad}/missing.mp4,0,0,2`,
  ];
  for (const f of ["broken_h264_corrupt_nal.mp4", "broken_truncated_header.mkv"]) {
    const p = sharedMedia(f);
    if (p === null) console.log(`(shared media ${f} absent: the mixed dataset runs without it)`);
    else badRows.push(`${p},0,0,2`); // a range, so the file is planned without probing it
  }
  const manifest = `${bad}/mixed.csv`;
  Deno.writeTextFileSync(manifest, ["path,label,start,end", ...rows, ...badRows].join("\n"));
  return { manifest, bad: badRows.map((r) => r.split(",")[0]) };
}

/** The batches with only the clips whose path passes `keep` (for pattern checks: shared broken files carry none). */
function onlyClips(batches: Batch[], keepPath: (path: string) => boolean): Batch[] {
  return batches.map((b) => {
    const keep = b.clips.flatMap((c, i) => keepPath(c.path) ? [i] : []);
    const per = b.data.length / b.labels.length;
    const data = new Uint8Array(keep.length * per);
    keep.forEach((i, k) => data.set((b.data as Uint8Array).subarray(i * per, (i + 1) * per), k * per));
    return {
      ...b,
      data,
      shape: [keep.length, ...b.shape.slice(1)],
      labels: Int32Array.from(keep.map((i) => b.labels[i])),
      clips: keep.map((i) => b.clips[i]),
    };
  });
}

Deno.test({
  name:
    "broken, truncated and gappy files mixed into real ones: full batches, every failure listed, both backends alike",
  ignore: !hasFfmpegCliSync(),
}, async () => {
  const { manifest, bad } = await mixedManifest();
  const opts: LoaderOptions = {
    dataset: manifest,
    batchSize: 4,
    sampler: { seed: 17, clipsPerVideo: 3, rank: 0, worldSize: 1 },
    clip: { numFrames: T, width: W, height: H },
    concurrency: { decode: 2 },
  };
  const inproc = await runEpochs(opts, 2);
  const sub = await runEpochs({ ...opts, backend: "subprocess" }, 2);
  assert.deepEqual(
    digest(sub.batches),
    digest(inproc.batches),
    "same seed, same batches, substitutes included",
  );
  assert.deepEqual(sub.clips, inproc.clips, "same accounting");
  const { clips, batches, failed } = inproc;
  // Before: one clip without frames made collate throw and its 3 good batch-mates vanish, counted nowhere.
  assert.deepEqual(failed, {});
  const perEpoch = clips.epochs[0].planned;
  assert.deepEqual(
    batches.map((b) => b.labels.length),
    Array.from(
      { length: 2 * Math.ceil(perEpoch / 4) },
      (_, i) => (i % Math.ceil(perEpoch / 4)) < Math.floor(perEpoch / 4) ? 4 : perEpoch % 4,
    ),
    "full batches",
  );
  assert.ok(clips.total.failed >= 2 * 3, `the missing file's clips fail: ${JSON.stringify(clips.total)}`);
  assert.equal(clips.total.replaced, clips.total.failed, "every failed clip was replaced");
  const failedPaths = new Set(clips.epochs.flatMap((e) => e.failures.map((f) => f.path)));
  assert.ok(failedPaths.has(bad[3]), "the missing file");
  assert.ok([...failedPaths].every((p) => bad.includes(p)), `only bad files fail: ${[...failedPaths]}`);
  // Windows inside the gap: the frame presented at 1.16 s is on screen for the whole window, in every slot (the
  // first, then held): delivered, not failed (before, the held slots counted as padding and failed the clip).
  assert.ok(!failedPaths.has(bad[0]), "no window of the gappy file fails");
  const gap = batches.flatMap((b) => b.clips).filter((c) => c.path === bad[0] && c.replaces === undefined);
  const inGap = gap.filter((c) => c.start >= 1.16 && c.end <= 2.8);
  assert.ok(inGap.length >= 2 * 3, `windows inside the gap delivered: ${inGap.length}`);
  for (const c of inGap) {
    assert.deepEqual([c.held, c.padded], [T - 1, 0]);
    assert.ok(c.pts.every((t) => Math.abs(t - 1.16) < 1e-6), `[${c.start}, ${c.end}): ${c.pts}`);
  }
  const gapBatches = onlyClips(batches, (p) => p === bad[0]);
  for (const b of gapBatches) {
    for (const [i, c] of b.clips.entries()) {
      for (let t = 0; t < T; t++) {
        const r = readPattern(b.data as Uint8Array, W, H, (i * T + t) * W * H * 3);
        assert.equal(r?.frameIndex, Math.round(c.pts[t] * FPS), `${c.path} [${c.start}, ${c.end}) slot ${t}`);
      }
    }
  }
  const dirs = [await dataset(), (await badMedia()) + "/"];
  checkBatches(onlyClips(batches, (p) => p !== bad[0] && dirs.some((d) => p.startsWith(d))));
  for (const b of batches) {
    for (const c of b.clips) {
      if (c.replaces === undefined) continue;
      assert.equal(c.replaces.position, c.position, "a substitute keeps the failed clip's position");
      assert.ok(bad.includes(c.replaces.path));
    }
  }
});

Deno.test('onClipError: "skip" leaves the batch short; "fail" ends the epoch with the clip\'s error', async () => {
  const ds = await dataset();
  const files = [...Deno.readDirSync(`${ds}/class_00`)].map((e) => `${ds}/class_00/${e.name}`).sort();
  const manifest = `${ds}/skip.csv`;
  Deno.writeTextFileSync(
    manifest,
    ["path,label,start,end", ...files.map((f) => `${f},0,,`), `${ds}/nope.mp4,0,0,2`].join("\n"),
  );
  const opts: LoaderOptions = options(manifest, 3, { seed: 4, clipsPerVideo: 1, shuffle: false });
  const skip = await runEpochs({ ...opts, onClipError: "skip" });
  assert.deepEqual(skip.batches.map((b) => b.labels.length), [2]);
  assert.equal(skip.clips.total.failed, 1);
  assert.equal(skip.clips.total.replaced, 0);
  assert.equal(skip.clips.epochs[0].failures[0].path, `${ds}/nope.mp4`);
  await using loader = await videoClassificationLoader({ ...opts, onClipError: "fail", log: () => {} });
  await assert.rejects(
    async () => {
      for await (const _ of loader) { /* the error comes with the batch holding the clip */ }
    },
    (e: Error) =>
      e instanceof MediaError && e.message.includes(`${ds}/nope.mp4`) &&
      /demux of clip \[\d/.test(e.message),
  );
  assert.equal(loader.stats().clips.epochs[0].failed, 1);
});

Deno.test("held frames and padding are counted per clip; a clip that would be mostly padding fails; a failing dataset stops at maxFailures", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sluice-loader-pad-" });
  try {
    // 1 s videos (25 frames), 0.5 s windows: about 13 frames each.
    makeSyntheticDataset(dir, { videos: 4, classes: 2, durationSec: 1, fps: FPS, width: 96, height: 64 });
    const opts = (
      dataset: string,
      numFrames: number,
      extra: Partial<LoaderOptions["clip"]> = {},
    ): LoaderOptions => ({
      dataset,
      batchSize: 2,
      sampler: { seed: 2, clipDurationSec: 0.5, rank: 0, worldSize: 1 },
      clip: { numFrames, width: W, height: H, ...extra },
      concurrency: { decode: 1 },
    });
    // Windows inside the videos: 13-14 of 20 on screen, the last one still on screen at the window's end, so the
    // 6-7 repeats are held frames, not padding (nothing is missing), whatever maxPadFraction says.
    const held = await runEpochs(opts(dir, 20, { maxPadFraction: 0 }));
    assert.equal(held.clips.total.failed, 0);
    for (const c of held.batches.flatMap((b) => b.clips)) {
      assert.ok(c.held >= 6 && c.held <= 7 && c.padded === 0, `held ${c.held}, padded ${c.padded}`);
      assert.equal(c.pts[19], c.pts[19 - c.held], "held frames repeat the last frame");
    }
    assert.deepEqual([held.clips.total.paddedFrames, held.clips.total.heldClips], [0, 4]);
    // Windows [0.6, 1.1): the stream ends at 1 s, inside them; frames 0.6 .. 0.96 (10) are on screen.
    const videos = [...Deno.readDirSync(dir)].filter((e) => e.isDirectory).flatMap((d) =>
      [...Deno.readDirSync(`${dir}/${d.name}`)].map((f) =>
        `${dir}/${d.name}/${f.name},${d.name.slice(6)},0.6,1.1`
      )
    );
    const tail = `${dir}/tail.csv`;
    Deno.writeTextFileSync(tail, ["path,label,start,end", ...videos.sort()].join("\n"));
    const padded = await runEpochs(opts(tail, 20)); // 10 padded, within the default 0.5
    assert.equal(padded.clips.total.failed, 0);
    for (const c of padded.batches.flatMap((b) => b.clips)) {
      assert.deepEqual([c.held, c.padded], [0, 10]);
      assert.equal(c.pts[19], c.pts[9], "padding repeats the last frame");
    }
    assert.equal(padded.clips.total.paddedFrames, 40);
    // 40 frames from 10 (30 padded): each clip fails, and all failing stops.
    await using loader = await videoClassificationLoader({
      ...opts(tail, 40),
      maxFailures: 2,
      log: () => {},
    });
    await assert.rejects(
      async () => {
        for await (const _ of loader) { /* */ }
      },
      (e: Error) =>
        e instanceof PipelineFailure &&
        /\d+ of \d+ clips failed in epoch 0, above maxFailures \(2\)/.test(e.message) &&
        /exceed the max pad fraction 0\.5/.test(e.message),
    );
    const allowed = await runEpochs(opts(tail, 40, { maxPadFraction: 0.75 }));
    assert.equal(allowed.clips.total.failed, 0);
    assert.equal(allowed.clips.total.paddedFrames, 4 * 30);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("batches mix videos through the shuffle buffer, though each video is demuxed once for all its clips", async () => {
  const ds = await dataset();
  const base: LoaderOptions = options(ds, 4, { seed: 8, clipsPerVideo: 4 });
  const videosPerBatch = (r: Run) => r.batches.map((b) => new Set(b.clips.map((c) => c.video)).size);
  // Before (and with shuffleBuffer 0): clipsPerVideo = batchSize made every batch one video, one label.
  const grouped = await runEpochs({ ...base, sampler: { ...base.sampler, shuffleBuffer: 0 } });
  assert.deepEqual(videosPerBatch(grouped), [1, 1, 1, 1, 1, 1]);
  const mixed = await runEpochs(base);
  const v = videosPerBatch(mixed);
  assert.ok(v.reduce((a, b) => a + b, 0) / v.length >= 2.5, `videos per batch ${v}`);
  // Unordered too: tasks finish in any order, and the buffer still interleaves each video's clips.
  const unordered = videosPerBatch(await runEpochs({ ...base, ordered: false }));
  assert.ok(unordered.reduce((a, b) => a + b, 0) / unordered.length >= 2.5, `unordered: ${unordered}`);
  assert.deepEqual(
    mixed.batches.flatMap((b) => b.clips.map((c) => `${c.video}/${c.start}`)).sort(),
    grouped.batches.flatMap((b) => b.clips.map((c) => `${c.video}/${c.start}`)).sort(),
    "the same clips",
  );
  checkBatches(mixed.batches);
});

Deno.test("clip metadata: plan position, seed, manifest columns, and the time its frames cover (default window fits them)", async () => {
  const ds = await dataset();
  const files = [...Deno.readDirSync(`${ds}/class_01`)].map((e) => `${ds}/class_01/${e.name}`).sort();
  const manifest = `${ds}/fields.csv`;
  Deno.writeTextFileSync(
    manifest,
    ["path,label,caption,score", ...files.map((f, i) => `${f},1,"clip ${i}",${i / 2}`)].join("\n"),
  );
  const { batches } = await runEpochs(options(manifest, 2, { seed: 6, clipsPerVideo: 2 }));
  const clips = batches.flatMap((b) => b.clips);
  assert.deepEqual(clips.map((c) => c.position).sort(), [0, 1, 2, 3]);
  assert.deepEqual(clips.map((c) => c.seed), clips.map((c) => clipSeed(6, 0, c.position)));
  for (const c of clips) {
    const i = files.indexOf(c.path);
    assert.deepEqual(c.fields, { caption: `clip ${i}`, score: i / 2 });
    // Default window: T frames at 25 fps (before: the whole 2 s video for 6 frames).
    assert.ok(Math.abs(c.end - c.start - T / FPS) < 1e-9, `window ${c.start}..${c.end}`);
    assert.ok(
      c.span[0] > c.start - 1 / FPS && c.span[0] <= c.start + 1e-9,
      `span ${c.span} starts with the frame on screen at the window's start`,
    );
    assert.ok(Math.abs(c.span[1] - c.span[0] - T / FPS) < 1e-6, `span ${c.span} covers ${T} frames`);
  }
  checkBatches(batches);
});

Deno.test("options that make no sense are rejected with one line naming the option and its valid range", async () => {
  const ds = await dataset();
  const base: LoaderOptions = { dataset: ds, batchSize: 2, clip: { numFrames: T, width: W, height: H } };
  const cases: [Partial<LoaderOptions>, RegExp][] = [
    [{ batchSize: 0 }, /^loader: batchSize must be an integer from 1 to 65536, got 0$/],
    [{ batchSize: 2.5 }, /^loader: batchSize must be an integer from 1 to 65536, got 2\.5$/],
    [
      { clip: { numFrames: 0, width: W, height: H } },
      /^loader: clip\.numFrames must be an integer from 1 to 10000, got 0$/,
    ],
    [
      { clip: { numFrames: T, width: -5, height: H } },
      /^loader: clip\.width must be an integer from 1 to 16384, got -5$/,
    ],
    [
      { clip: { numFrames: T, width: W, height: H, frameRate: 0 } },
      /^loader: clip\.frameRate must be a number > 0 and <= 1000, got 0$/,
    ],
    [
      { clip: { numFrames: T, width: W, height: H, sampling: "stride" } },
      /^loader: clip\.sampling "stride" needs clip\.stride$/,
    ],
    [
      { clip: { numFrames: T, width: W, height: H, dtype: "uint8", mean: [0, 0, 0] } },
      /^loader: clip\.mean and clip\.std apply to clip\.dtype "float32" only$/,
    ],
    [
      { clip: { numFrames: T, width: W, height: H, maxPadFraction: 2 } },
      /^loader: clip\.maxPadFraction must be a number from 0 to 1, got 2$/,
    ],
    [
      { onClipError: "retry" as "skip" },
      /^loader: onClipError must be one of replace, skip, fail, got "retry"$/,
    ],
    [
      { concurrency: { decode: 0 } },
      /^loader: concurrency\.decode must be an integer from 1 to 256 or "auto", got 0$/,
    ],
  ];
  for (const [o, re] of cases) {
    await assert.rejects(
      () => videoClassificationLoader({ ...base, ...o, log: () => {} }),
      (e: Error) => e instanceof InvalidArgumentError && re.test(e.message) && !e.message.includes("\n"),
      JSON.stringify(o),
    );
  }
});

Deno.test("uniform and stride sampling: the frames the spec names, spread over the window", async () => {
  const ds = await dataset();
  const base: LoaderOptions = {
    dataset: ds,
    batchSize: 3,
    sampler: { seed: 1, rank: 0, worldSize: 1, clipDurationSec: 1.2 },
    clip: { numFrames: T, width: W, height: H, sampling: "uniform" },
    concurrency: { decode: 1 },
  };
  const uniform = await runEpochs(base);
  for (const c of uniform.batches.flatMap((b) => b.clips)) {
    // T times spread evenly over [start, end): start + k * (end - start) / T, each the latest frame at or before.
    for (let k = 0; k < T; k++) {
      const t = c.start + k * (c.end - c.start) / T;
      assert.ok(c.pts[k] <= t + 1e-6 && c.pts[k] > t - 1 / FPS, `slot ${k}: pts ${c.pts[k]} for time ${t}`);
    }
  }
  checkBatches(uniform.batches, false, FPS / 5);
  const stride = await runEpochs({
    ...base,
    sampler: { ...base.sampler, clipDurationSec: undefined },
    clip: { numFrames: T, width: W, height: H, stride: 3 },
  });
  for (const c of stride.batches.flatMap((b) => b.clips)) {
    assert.ok(Math.abs(c.end - c.start - 3 * T / FPS) < 1e-9, "default window: T frames x stride");
    for (let k = 1; k < T; k++) assert.ok(Math.abs(c.pts[k] - c.pts[k - 1] - 3 / FPS) < 1e-6);
  }
});

Deno.test({
  name:
    "VFR recordings with 2.5 s gaps and ~10% broken files: no clip of a good file fails (default options too), held and padded frames exact, accounting exact, both backends",
  ignore: !hasFfmpegCliSync(),
}, async () => {
  const ds = await dataset();
  const dir = await Deno.makeTempDir({ prefix: "sluice-loader-vfr-" });
  try {
    // Synthetic 8 s sources (the frame index drawn in each frame) with 2.5 s gaps, longer than every window; one
    // in MKV with an audio track that outlasts the video: its container (and the sampler's range) runs to 10 s.
    const gaps: [number, number][] = [[1.22, 3.7], [4.22, 6.7]];
    const kept = (i: number) => !gaps.some(([a, b]) => i / FPS >= a && i / FPS <= b);
    const vfr: string[] = [];
    for (const [n, ext] of [[0, "mp4"], [1, "mkv"], [2, "mkv"]] as const) {
      encodeSyntheticVideo(`${dir}/src${n}.mp4`, {
        frames: 200,
        fps: FPS,
        width: 96,
        height: 64,
        label: n,
        seed: n,
      });
      const out = `${dir}/vfr${n}.${ext}`;
      const select = gaps.map(([a, b]) => `not(between(t,${a},${b}))`).join("*");
      const args = ["-v", "error", "-i", `${dir}/src${n}.mp4`];
      if (n === 2) args.push("-f", "lavfi", "-i", "sine=duration=10", "-c:a", "aac");
      args.push("-vf", `select='${select}'`, "-fps_mode", "passthrough", "-c:v", "libx264", "-qp", "10");
      args.push("-force_key_frames", "0,3.72,6.72", "-sc_threshold", "0", "-g", "1000", out);
      const r = await runCli("ffmpeg", args);
      assert.equal(r.code, 0, r.stderr);
      vfr.push(out);
    }
    // Each recording's frames: the index drawn in it, and its time (ffprobe; the audio shifts the MKV's a little).
    const shown = Array.from({ length: 200 }, (_, f) => f).filter(kept);
    const times = await Promise.all(vfr.map((p) => probeFrameTimes(p, 0)));
    for (const t of times) assert.equal(t.length, shown.length);
    const rows = [...Deno.readDirSync(ds)].filter((e) => e.isDirectory).flatMap((d) =>
      [...Deno.readDirSync(`${ds}/${d.name}`)].map((f) =>
        `${ds}/${d.name}/${f.name},${Number(d.name.slice(6))},,`
      )
    );
    Deno.writeTextFileSync(`${dir}/garbage.mp4`, "not a video ".repeat(100));
    rows.push(...vfr.map((p, n) => `${p},${n},,`), `${dir}/garbage.mp4,0,0,8`); // 1 broken of 10
    const manifest = `${dir}/mixed.csv`;
    Deno.writeTextFileSync(manifest, ["path,label,start,end", ...rows.sort()].join("\n"));
    // For the default options only: a range running past the end of vfr0 (its last frame is at 7.96 s, the
    // stream ends at 8 s): the window [7.9, 8.14) shows 7.88 (on screen at 7.9), 7.92, 7.96, then 3 slots of
    // padding (the limit).
    const pastEnd = `${dir}/past_end.csv`;
    Deno.writeTextFileSync(
      pastEnd,
      ["path,label,start,end", ...rows.sort(), `${vfr[0]},0,7.9,8.14`].join("\n"),
    );
    // The end of each recording's stream: its last frame's end, or (MKV with audio) the container's.
    const streamEnd = await Promise.all(vfr.map(async (p, n) => {
      if (n !== 2) return times[n].at(-1)! + 1 / FPS;
      const r = await runCli(oracleCli("ffprobe"), [
        "-v",
        "error",
        "-show_entries",
        "format=duration",
        "-of",
        "csv=p=0",
        p,
      ]);
      return Number(new TextDecoder().decode(r.stdout).trim());
    }));
    let inGap = 0, tail = 0, heldSeen = 0, paddedSeen = 0;
    for (const clip of [{ frameRate: 8 }, { maxPadFraction: 1 }, {}] as Partial<LoaderOptions["clip"]>[]) {
      const fixed = Object.keys(clip).length === 0;
      const opts: LoaderOptions = {
        dataset: fixed ? pastEnd : manifest,
        batchSize: 4,
        sampler: { seed: 21, clipsPerVideo: 6, rank: 0, worldSize: 1 },
        clip: { numFrames: T, width: W, height: H, ...clip },
        concurrency: { decode: 2 },
      };
      const inproc = await runEpochs(opts); // asserts planned = delivered + failed + dropped
      const sub = await runEpochs({ ...opts, backend: "subprocess" });
      assert.deepEqual(digest(sub.batches), digest(inproc.batches), "same batches");
      assert.deepEqual(sub.clips, inproc.clips, "same accounting");
      const { clips, batches } = inproc;
      const failed = new Set(clips.epochs[0].failures.map((f) => f.path));
      assert.deepEqual(
        [...failed],
        [`${dir}/garbage.mp4`],
        `only the broken file fails: ${JSON.stringify(clips.total)}`,
      );
      assert.equal(clips.total.failed, 6);
      // Every slot of a recording's clip shows the frame on screen (its drawn index, by the clip's own rule).
      for (const b of batches) {
        for (const [i, c] of b.clips.entries()) {
          const n = vfr.indexOf(c.path);
          if (n < 0) continue;
          if (gaps.some(([a, b]) => c.start > a && c.end < b)) inGap++;
          if (c.start > times[n].at(-1)! + 1 / FPS) tail++; // past the last frame, the file (audio) goes on
          // Held and padded, by hand from ffprobe's frame list: the slots the window fills (frames on screen
          // during it, or grid slots before the stream's end), the rest held while the stream goes on past the
          // window's end (a later frame, or its end), else padding.
          const ts = times[n];
          const on = (ts.some((x) => x <= c.start) ? 1 : 0) +
            ts.filter((x) => x > c.start && x < c.end).length;
          const filled = "frameRate" in clip
            ? Math.ceil((Math.min(c.end, streamEnd[n]) - c.start) * 8 - 1e-9)
            : on;
          const repeats = T - Math.min(T, filled);
          const goesOn = ts.some((x) => x >= c.end) || streamEnd[n] >= c.end;
          const what = `${c.path} [${c.start}, ${c.end})`;
          assert.deepEqual([c.held, c.padded], goesOn ? [repeats, 0] : [0, repeats], what);
          heldSeen += c.held;
          paddedSeen += c.padded;
          for (let t = 0; t < T; t++) {
            const r = readPattern(b.data as Uint8Array, W, H, (i * T + t) * W * H * 3);
            assert.equal(r?.label, n, `${c.path} slot ${t}`);
            // frameRate: the latest frame at x with round((x − start)·8) <= t; consecutive: the pts the clip says.
            // The frame's index in ffprobe's presentation order: the one the clip's metadata gives.
            const index = (x: number) => times[n].findIndex((y) => Math.abs(y - x) < 1e-6);
            const presented = "frameRate" in clip
              ? index(
                times[n].filter((x) => Math.floor((x - c.start) * 8 + 0.5 + 1e-9) <= t).at(-1) ?? times[n][0],
              )
              : index(c.pts[t]);
            assert.equal(r!.frameIndex, shown[presented], `${c.path} [${c.start}, ${c.end}) slot ${t}`);
            assert.equal(c.frameIndex?.[t], presented, `${what}: frameIndex of slot ${t}`);
            const kind = t < T - c.held - c.padded ? "sampled" : t < T - c.padded ? "held" : "padded";
            assert.equal(c.frameKind[t], kind, `${what}: slot ${t}`);
          }
          if (!("frameRate" in clip)) {
            const onScreen = times[n].filter((x) => x <= c.start).at(-1);
            assert.ok(Math.abs(c.pts[0] - onScreen!) < 1e-6, "slot 0: the frame on screen at the start");
          }
        }
      }
      if (fixed) {
        const last = batches.flatMap((b) => b.clips).filter((c) => c.start === 7.9);
        assert.ok(
          last.length > 0 && last.every((c) => c.held === 0 && c.padded === 3),
          "past the end: padding",
        );
      }
    }
    assert.ok(inGap >= 3 && tail >= 1, `clips inside a gap: ${inGap}, past the last frame: ${tail}`);
    assert.ok(heldSeen > 0 && paddedSeen > 0, `held ${heldSeen}, padded ${paddedSeen}`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("an epoch stopped while its next batch is on its way is not complete: its undelivered clips stay pending", async () => {
  await using loader = await videoClassificationLoader({
    ...options(await dataset(), 2, { seed: 1 }),
    log: () => {},
  });
  const it = loader[Symbol.asyncIterator]();
  const first = await it.next();
  assert.equal(first.done, false);
  first.value[Symbol.dispose]();
  const next = it.next(); // asked for, not yet made...
  await it.return!(); // ...when the consumer stops the epoch (sluice serve does when its client moves on)
  const r = await next;
  if (!r.done) r.value[Symbol.dispose]();
  const e = loader.stats().clips.epochs[0];
  const delivered = r.done ? 2 : 4;
  assert.deepEqual([e.complete, e.delivered, e.pending], [
    false,
    delivered,
    e.planned - delivered - e.failed,
  ]);
});

Deno.test({
  name:
    "the line about frames covering little of their window prints rounded figures (29.97 fps, a 4 s window)",
  ignore: !hasFfmpegCliSync(),
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "sluice-loader-ntsc-" });
    try {
      Deno.mkdirSync(`${dir}/a`);
      Deno.copyFileSync(
        await generateClip({ width: 64, height: 48, durationSec: 1, extraArgs: ["-r", "30000/1001"] }),
        `${dir}/a/ntsc.mp4`,
      );
      const lines: string[] = [];
      const o = options(dir, 1, { seed: 1, clipDurationSec: 4 });
      await using _ = await videoClassificationLoader({ ...o, log: (l) => lines.push(l) });
      const line = lines.find((l) => l.includes(" cover "));
      assert.equal(
        line,
        `sluice: ${T} consecutive frames cover 0.20 s of each 4 s window (at 29.97 fps): use sampling "uniform" ` +
          `or "rate" to spread them over the window`,
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("a consumer keeping every batch of an epoch in as many slots still gets the epoch's end", async () => {
  const o = options(await dataset(), 3, { seed: 1 }); // 6 clips: 2 batches
  await using loader = await videoClassificationLoader({ ...o, slots: 2, log: () => {} });
  const it = loader[Symbol.asyncIterator]();
  const kept = [await it.next(), await it.next()];
  assert.deepEqual((await it.next()).done, true); // no slot is needed for it
  for (const r of kept) if (!r.done) r.value[Symbol.dispose]();
  assert.equal(loader.stats().clips.epochs[0].complete, true);
});
