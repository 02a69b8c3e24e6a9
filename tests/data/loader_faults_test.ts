/**
 * Fault tests of the video loader (each bounded by its own deadline, no process left behind). The loader's
 * per-clip accounting tests (items in = delivered + failed with broken files and misbehaving HTTP, both
 * backends) belong here once the loader reports clips; the backend-level versions are in
 * tests/backend/faults_test.ts.
 */
import assert from "node:assert/strict";
import { videoClassificationLoader } from "../../src/data/loader.ts";
import { makeSyntheticDataset } from "../../src/data/synthetic.ts";
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
