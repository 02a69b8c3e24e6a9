/**
 * Fault tests of the video loader (each bounded by its own deadline, no process left behind): misbehaving HTTP
 * mixed into good videos through both backends (broken, truncated and gappy files are in loader_test.ts); the
 * backend-level versions are in tests/backend/faults_test.ts.
 */
import assert from "node:assert/strict";
import { type LoaderOptions, videoClassificationLoader } from "../../src/loader/loader.ts";
import type { Batch } from "../../src/loader/batch/collate.ts";
import { assertAccounted } from "./accounting.ts";
import { serveDir } from "../helpers/http_server.ts";
import { makeSyntheticDataset } from "../helpers/synthetic.ts";
import { BackendExitedError } from "../../src/errors.ts";
import { alive, deadline } from "../backend/helpers.ts";

Deno.test("the loader's backend child killed mid-epoch: the loop throws BackendExitedError itself, promptly", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sluice-loader-faults-" });
  try {
    makeSyntheticDataset(dir, { videos: 6, classes: 3, durationSec: 2, fps: 25, width: 96, height: 64 });
    await using loader = await videoClassificationLoader({
      dataset: dir,
      batchSize: 2,
      clip: { numFrames: 4, width: 32, height: 32 },
      sampler: { clipsPerVideo: 4 },
      backend: "subprocess",
      log: () => {},
    });
    const pid = loader.stats().backend!.pid;
    let batches = 0;
    await deadline(60_000, "SIGKILL of the loader's child", async () => {
      await assert.rejects(async () => {
        for await (const b of loader) {
          b[Symbol.dispose]();
          if (++batches === 1) Deno.kill(pid, "SIGKILL");
        }
      }, (e: unknown) => {
        assert.ok(e instanceof BackendExitedError, `got ${e}`);
        assert.equal(e.signal, "SIGKILL");
        return true;
      });
    });
    assert.ok(batches >= 1);
    await loader.close();
    assert.ok(!alive(pid));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("HTTP that stalls, hangs, lies about its length, 404s or recovers, mixed into good videos: full batches, each loss named, both backends alike", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sluice-loader-faults-" });
  try {
    makeSyntheticDataset(dir, { videos: 8, classes: 2, durationSec: 2, fps: 25, width: 96, height: 64 });
    const files = ["class_00/video_0000.mp4", "class_01/video_0001.mp4", "class_00/video_0002.mp4"];
    const run = async (backend: "inprocess" | "subprocess") => {
      await using srv = serveDir(dir);
      const bad = [
        `${srv.dropBase}hang/${files[0]}`, // half the bytes, then silence: idle timeout
        `${srv.dropBase}silent/${files[1]}`, // never answers: connect timeout
        `${srv.dropBase}drop/${files[2]}`, // closes before its Content-Length
        `${srv.base}status/404`,
      ];
      const good = [`${srv.base}flaky/1/${files[0]}`, `${srv.dropBase}stallfirst/1/${files[1]}`]; // recover on retry
      const local = [...Deno.readDirSync(`${dir}/class_01`)].map((e) => `${dir}/class_01/${e.name}`).sort();
      const manifest = `${dir}/${backend}.csv`;
      Deno.writeTextFileSync(
        manifest,
        [
          "path,label,start,end",
          ...[...bad, ...good].map((u) => `${u},0,0,2`),
          ...local.map((f) => `${f},1,,`),
        ]
          .join("\n"),
      );
      const opts: LoaderOptions = {
        dataset: manifest,
        batchSize: 4,
        clip: { numFrames: 4, width: 32, height: 32 },
        sampler: { seed: 12, clipsPerVideo: 2, rank: 0, worldSize: 1 },
        concurrency: { decode: 1 },
        fetch: { retries: 1, backoffMs: 5, connectTimeoutMs: 400, idleTimeoutMs: 400, deadlineMs: 5000 },
        backend,
        log: () => {},
      };
      await using loader = await videoClassificationLoader(opts);
      const batches: Batch[] = [];
      await deadline(120_000, `the ${backend} loader over misbehaving HTTP`, async () => {
        for await (const b of loader) batches.push(b);
      });
      const clips = loader.stats().clips;
      assertAccounted(clips, batches, loader.clipsPerEpoch, 1, false);
      const failures = clips.epochs[0].failures;
      const name = (p: string) => p.replace(srv.base, "").replace(srv.dropBase, "");
      return {
        sizes: batches.map((b) => b.labels.length),
        clips: batches.flatMap((b) =>
          b.clips.map((c) => [name(c.path), c.start, c.replaces?.position ?? null])
        ),
        planned: failures.filter((f) => f.attempt === 0).map((f) => [name(f.path), f.stage, f.errorName]),
        counts: { ...clips.total, failures: undefined },
      };
    };
    const a = await run("inprocess");
    const b = await run("subprocess");
    assert.deepEqual(b, a, "same seed, same batches and accounting through a backend child");
    assert.deepEqual(a.sizes, [4, 4, 4, 4, 4], "full batches");
    assert.equal(a.counts.planned, 20, "10 videos (6 URLs, 4 local files) x 2 clips");
    assert.equal(a.counts.failed, 8, "the 4 bad URLs' 2 clips each");
    assert.equal(a.counts.replaced, 8);
    assert.deepEqual(
      [...new Set(a.planned.map(([p]) => p))].sort(),
      [`drop/${files[2]}`, `hang/${files[0]}`, `silent/${files[1]}`, "status/404"],
    );
    assert.ok(
      a.planned.every(([, stage, err]) => stage === "fetch" && err === "FetchError"),
      JSON.stringify(a.planned),
    );
    const delivered = new Set(a.clips.filter((c) => c[2] === null).map((c) => c[0]));
    assert.ok(
      delivered.has(`flaky/1/${files[0]}`) && delivered.has(`stallfirst/1/${files[1]}`),
      "recovered URLs",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
