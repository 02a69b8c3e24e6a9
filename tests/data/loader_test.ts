import assert from "node:assert/strict";
import { type LoaderOptions, videoClassificationLoader } from "../../src/data/loader.ts";
import type { Batch } from "../../src/data/collate.ts";
import { makeSyntheticDataset, readPattern } from "../../src/data/synthetic.ts";
import { serveDir } from "./http_server.ts";

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

async function runEpochs(
  opts: LoaderOptions,
  epochs = 1,
): Promise<{ batches: Batch[]; failed: Record<string, number> }> {
  await using loader = await videoClassificationLoader({ log: () => {}, ...opts });
  const batches: Batch[] = [];
  for (let e = 0; e < epochs; e++) for await (const b of loader) batches.push(b);
  const failed: Record<string, number> = {};
  for (const s of loader.stats().pipeline.stages) if (s.failed > 0) failed[s.name] = s.failed;
  return { batches, failed };
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
          ? readPattern(b.data, W, H, (i * 3 * T + t) * W * H, T * W * H)
          : readPattern(b.data, W, H, (i * T + t) * W * H * 3);
        assert.ok(r !== null, `clip ${i} frame ${t} carries a pattern`);
        assert.equal(r.label, c.label, `${c.path}: label drawn in the frame`);
        const time = r.frameIndex / FPS;
        assert.ok(
          Math.abs(time - c.pts[t]) <= tol,
          `${c.path} frame ${t}: drawn time ${time} ~ pts ${c.pts[t]}`,
        );
        assert.ok(time >= c.start - tol && time < c.end, `${c.path}: ${time} in [${c.start}, ${c.end})`);
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
      c: b.clips.map((c) => [c.label, c.start, c.end, c.pts]),
      s: sum(b.data),
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
  const base: LoaderOptions = {
    dataset: ds,
    batchSize: 4,
    sampler: { seed: 3, clipsPerVideo: 2, rank: 0, worldSize: 1 },
    clip: { numFrames: T, width: W, height: H },
    concurrency: { decode: 1 },
  };
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
  const { batches, failed } = await runEpochs(opts(broken));
  assert.deepEqual(failed, { fetch: 2 });
  assert.equal(checkBatches(batches).length, 12, "every good clip still arrives");
});

Deno.test("disposing each batch in the loop changes no batch; memoryReport counts each Worker's FFmpeg objects", async () => {
  const ds = await dataset();
  const opts: LoaderOptions = {
    dataset: ds,
    batchSize: 4,
    sampler: { seed: 5, clipsPerVideo: 2 },
    clip: { numFrames: T, width: W, height: H },
    concurrency: { decode: 2 },
    log: () => {},
  };
  const kept = await runEpochs(opts, 1);
  await using loader = await videoClassificationLoader(opts);
  const seen: string[] = [];
  let pixels: Uint8Array | undefined;
  for await (using batch of loader) {
    seen.push(...digest([batch]));
    pixels = batch.data;
  }
  assert.deepEqual(seen, digest(kept.batches));
  assert.equal(pixels!.length, 0, "the last batch was freed when its loop body ended");
  const mem = await loader.memoryReport();
  assert.equal(mem.workers.length, 2);
  for (const w of mem.workers) {
    assert.equal(w.native.live.AVCodecContext, 1, "one cached decoder per Worker");
    assert.deepEqual(w.native.finalized, {}, "nothing left to the FinalizationRegistry");
    assert.ok(w.heapUsed > 0 && w.heapUsed <= w.heapTotal);
  }
  assert.ok(mem.rss > mem.main.heapTotal);
});
