/**
 * A short soak (`bench/soak.ts`, issue 16): the loader over real files (the small ones of ../shared/media) and
 * generated clips in five codecs and containers, epoch after epoch, in a process of its own (so other tests'
 * memory cannot mix in, and with `--expose-gc`). After the warm-up, RSS, the V8 heaps and the live FFmpeg
 * objects must not grow (robust Theil–Sen slopes within the soak's bounds) and no FFmpeg object may be left to
 * the FinalizationRegistry. Memory is sampled after each epoch has drained and every heap was collected, so the
 * figures do not depend on how busy the machine is; no time is asserted. The bounds (1 MiB of RSS and 128 KiB of
 * V8 heap per epoch) leave room for allocators settling in a run this short; keeping the batches (one clip of
 * 8 frames at 224×224 per video and epoch: ~13 MiB an epoch, ~6 MiB without ../shared) is far above them. `deno task soak` runs long enough for tighter bounds.
 *
 * The second test keeps every batch alive (`--retain-batches`, the leaked-tensor bug): the same check must
 * call that growing, or the first test could not fail.
 */

import assert from "node:assert/strict";
import type { SoakEpoch, SoakSummary } from "../../bench/soak.ts";
import { hasFfmpegCliSync, sharedMediaAvailable } from "../helpers/media.ts";

const SOAK = new URL("../../bench/soak.ts", import.meta.url).pathname;
const ignore = !hasFfmpegCliSync();
if (!sharedMediaAvailable()) console.log("soak_test: ../shared/media is absent: generated clips only");

async function runSoak(
  extra: string[],
): Promise<{ summary: SoakSummary; epochs: SoakEpoch[]; stderr: string }> {
  const out = await Deno.makeTempFile({ prefix: "sluice-soak-", suffix: ".jsonl" });
  try {
    const args = [
      ...["run", "-A", "--v8-flags=--expose-gc", SOAK, "--json", "--out", out],
      ...["--epochs", "16", "--warmup", "6", "--batch", "4", "--frames", "8", "--size", "224"],
      ...[
        "--clips-per-video",
        "1",
        "--max-pixels",
        "500000",
        "--max-rss-kib",
        "1024",
        "--max-heap-kib",
        "128",
      ],
      ...(sharedMediaAvailable() ? [] : ["--no-shared"]),
      ...extra,
    ];
    const r = await new Deno.Command(Deno.execPath(), { args, stdout: "piped", stderr: "piped" }).output();
    const stderr = new TextDecoder().decode(r.stderr);
    const stdout = new TextDecoder().decode(r.stdout).trim();
    assert.ok(stdout.length > 0, `soak printed no summary (exit ${r.code}):\n${stderr.slice(-3000)}`);
    const summary = JSON.parse(stdout.split("\n").at(-1)!) as SoakSummary;
    const epochs = (await Deno.readTextFile(out)).trim().split("\n").map((l) => JSON.parse(l) as SoakEpoch);
    return { summary, epochs, stderr };
  } finally {
    await Deno.remove(out).catch(() => {});
  }
}

Deno.test({
  name: "soak: RSS, V8 heap and live FFmpeg objects stay flat after warm-up; one JSONL record per epoch",
  ignore,
  async fn() {
    const { summary, epochs, stderr } = await runSoak([]);
    assert.equal(epochs.length, 16);
    for (const [i, e] of epochs.entries()) {
      assert.equal(e.epoch, i);
      assert.ok(e.clips > 0 && e.batches > 0, `epoch ${i} delivered nothing`);
      assert.ok(e.rss > 0 && e.heapUsed > 0 && e.workerHeapTotal > 0 && e.gc, JSON.stringify(e));
      assert.ok(e.stepMs.p99 >= e.stepMs.p50 && e.stepMs.max >= e.stepMs.p99, JSON.stringify(e.stepMs));
      assert.equal(e.nativeFinalized, 0, `epoch ${i}: FFmpeg objects freed by the safety net (a leak)`);
    }
    assert.ok(summary.stepMs.p99 > 0);
    assert.ok(
      summary.flat,
      `not flat after warm-up: ${JSON.stringify(summary.slopes)} per epoch (bounds ${
        JSON.stringify(summary.bounds)
      })\n${stderr.slice(-2000)}`,
    );
  },
});

Deno.test({
  name: "soak: a leak (every batch kept alive) is reported as growing",
  ignore,
  async fn() {
    const { summary } = await runSoak(["--retain-batches"]);
    assert.ok(!summary.flat, `a retained-batches run passed as flat: ${JSON.stringify(summary.slopes)}`);
    assert.ok(
      summary.slopes.rssKiB > summary.bounds.rssKiB,
      `RSS slope ${summary.slopes.rssKiB} KiB/epoch within the bound ${summary.bounds.rssKiB}`,
    );
  },
});
