// The rows' totals run on across epochs (each epoch has new queues): checked on virtual time against sums of
// the per-epoch figures that each epoch's final report carries, and against hand-computed busy time.
import assert from "node:assert/strict";
import { PipelineBuilder } from "../../src/pipeline/builder.ts";
import type { PipelineStats } from "../../src/pipeline/stats.ts";
import { FakeClock } from "../helpers/fake_clock.ts";

Deno.test("stats: totals sum the epochs; per-epoch queue figures restart; the consumer's slot is the sink's life", async () => {
  const clock = new FakeClock();
  try {
    const finals: PipelineStats[] = [];
    const p = new PipelineBuilder()
      .addSource(Array.from({ length: 10 }, (_, i) => i), { continuous: true })
      .pipe(async (x: number) => {
        await clock.sleep(50);
        return x;
      }, { name: "work", concurrency: 1 })
      .build({ clock, log: () => {}, hooks: [{ report: (s, final) => final && finals.push(s) }] });
    const epochs = (async () => {
      for (let e = 0; e < 3; e++) {
        for await (const _ of p) await clock.sleep(80); // slower than the stage: the queues fill
      }
    })();
    await clock.runUntil(10_000);
    await epochs;
    await p.stop();
    assert.equal(finals.length, 3);
    // The last epoch's final report: its queues' clocks stop there (after it, the sink's life goes on).
    const s = finals[2];
    const [source, work, consumer] = s.stages;
    assert.equal(work.totals.finished, 30);
    assert.equal(work.totals.busyMs, 30 * 50, "10 tasks of 50 ms, one at a time, three times");
    assert.equal(consumer.totals.finished, 30);
    const sum = (f: (x: PipelineStats) => number) => finals.reduce((a, x) => a + f(x), 0);
    assert.equal(work.totals.inputItemMs, sum((x) => x.stages[1].input!.itemMs));
    assert.equal(source.totals.blockedPutMs, sum((x) => x.stages[0].blockedPutMs));
    assert.equal(work.totals.blockedPutMs, sum((x) => x.stages[1].blockedPutMs));
    assert.equal(consumer.totals.slotMs, sum((x) => x.stages[2].input!.elapsedMs));
    assert.equal(
      consumer.totals.busyMs,
      sum((x) => x.stages[2].input!.elapsedMs - x.stages[2].input!.getWaitMs),
    );
    assert.equal(consumer.totals.inputItemMs, sum((x) => x.stages[2].input!.itemMs));
    assert.equal(source.totals.inputItemMs, 0, "the source has no input queue");
    // The figures the rows show per epoch are the last epoch's; the totals are all three.
    assert.equal(work.input!.itemMs, finals[2].stages[1].input!.itemMs);
    assert.ok(work.totals.inputItemMs > work.input!.itemMs && work.input!.itemMs > 0);
    assert.ok(work.totals.blockedPutMs > work.blockedPutMs && work.blockedPutMs > 0);
    assert.equal(work.maxConcurrency, 64);
    assert.equal(source.maxConcurrency, 1);
  } finally {
    clock.close();
  }
});
