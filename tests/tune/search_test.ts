import assert, { deepStrictEqual as assertEquals } from "node:assert/strict";
import { search } from "../../src/tune/search.ts";
import { int } from "../../src/tune/space.ts";
import { capacity, cpuStage, harnessStages, ioStage, kneeStage, ModelRunner } from "./knee_model.ts";

const BUDGET = { budgetSec: 180, measureSec: 3, warmupSec: 1 }; // 4.5 s a trial: about 40 trials

const space = {
  demuxConcurrency: int(1, 16, { stage: "demux" }),
  fetchConcurrency: int(1, 32, { stage: "fetch" }),
  decodeConcurrency: int(1, 16, { stage: "decode" }),
};
const start = { demuxConcurrency: 8, fetchConcurrency: 8, decodeConcurrency: 8 };

Deno.test("the harness: each model stage's optimum is where the test says (hand-checked values)", () => {
  const [knee, io, cpu] = harnessStages();
  // knee: 10 ms·(1 + 0.05(n−1) + 2^max(0,n−3) − 1) → n / latency peaks at 3
  assertEquals(knee.latencyMs(3), 11);
  assertEquals(knee.latencyMs(4), 21.5);
  const best = (s: typeof knee, max: number) =>
    Array.from({ length: max }, (_, i) => i + 1).reduce((a, n) => capacity(s, n) > capacity(s, a) ? n : a);
  assertEquals(best(knee, 16), 3);
  assertEquals(best(io, 32), 16);
  assertEquals(best(cpu, 16), 4);
  // in series at (3, 16, 4) every stage is within 7% of the slowest, so each must sit at its optimum (±1)
  const runner = new ModelRunner({ stages: harnessStages(), noise: 0, seed: 0, ceiling: 1 });
  assertEquals(
    Math.round(runner.throughput({ demuxConcurrency: 3, fetchConcurrency: 16, decodeConcurrency: 4 })),
    267,
  );
  assert(runner.throughput({ demuxConcurrency: 3, fetchConcurrency: 15, decodeConcurrency: 4 }) < 255);
  assert(runner.throughput({ demuxConcurrency: 2, fetchConcurrency: 16, decodeConcurrency: 4 }) < 200);
  assert(runner.throughput({ demuxConcurrency: 3, fetchConcurrency: 16, decodeConcurrency: 3 }) < 220);
});

for (const seed of [1, 2, 3, 4, 5]) {
  Deno.test(`search finds the knee (3), the I/O stage (16) and the CPU stage (4 cores) within ±1 in 3 min (seed ${seed})`, async () => {
    const runner = new ModelRunner({ stages: harnessStages(), noise: 0.02, seed, ceiling: 400 });
    const r = await search(space, start, runner, BUDGET);
    const b = r.best!.config;
    assert(Math.abs((b.demuxConcurrency as number) - 3) <= 1, `demux ${b.demuxConcurrency}`);
    assert(Math.abs((b.fetchConcurrency as number) - 16) <= 1, `fetch ${b.fetchConcurrency}`);
    assert(Math.abs((b.decodeConcurrency as number) - 4) <= 1, `decode ${b.decodeConcurrency}`);
    assert(r.spentSec <= BUDGET.budgetSec, `spent ${r.spentSec}`);
    assertEquals(runner.requests.length, r.trials.length);
    // a curve per stage, over 1, 2, 4, 8, 16
    assertEquals(r.curves.map((c) => c.stage).sort(), ["decode", "demux", "fetch"]);
    assertEquals(r.curves.find((c) => c.stage === "fetch")!.points.map((p) => p.concurrency), [
      1,
      2,
      4,
      8,
      16,
    ]);
    assertEquals(r.ceiling !== null && Math.abs(r.ceiling - 400) < 10, true);
    // the kept changes start from the start and end at the best
    assertEquals(r.kept.at(-1)!.after, r.best!.samples.reduce((a, x) => a + x, 0) / r.best!.samples.length);
  });
}

Deno.test("each stage alone: its optimum within ±1 from a start far from it", async () => {
  const cases = [
    { stage: kneeStage("demux", "n", 10, 0.05, 2, 3), max: 16, want: 3, from: 8 },
    { stage: ioStage("fetch", "n", 60, 16, 0.2), max: 32, want: 16, from: 1 },
    { stage: cpuStage("decode", "n", 14, 4, 0.02), max: 16, want: 4, from: 16 },
  ];
  for (const c of cases) {
    const runner = new ModelRunner({ stages: [c.stage], noise: 0.02, seed: 7, ceiling: 1000 });
    const r = await search({ n: int(1, c.max, { stage: c.stage.name }) }, { n: c.from }, runner, BUDGET);
    assert(Math.abs((r.best!.config.n as number) - c.want) <= 1, `${c.stage.name}: ${r.best!.config.n}`);
  }
});

Deno.test("the same measurements give the same search (deterministic)", async () => {
  const run = async () => {
    const runner = new ModelRunner({ stages: harnessStages(), noise: 0.02, seed: 11, ceiling: 400 });
    return (await search(space, start, runner, BUDGET)).trials.map((t) => `${t.phase}:${t.key}`);
  };
  assertEquals(await run(), await run());
});

Deno.test("failed trials are recorded with their reason and the search goes on around them", async () => {
  const runner = new ModelRunner({
    stages: harnessStages(),
    noise: 0.02,
    seed: 3,
    ceiling: 400,
    fail: (c) =>
      (c.decodeConcurrency as number) >= 16 ? "crashed: exit status 1: out of file descriptors" : null,
  });
  const r = await search(space, start, runner, BUDGET);
  const failed = r.trials.filter((t) => t.status === "failed");
  assert(failed.length >= 1);
  for (const t of failed) {
    assertEquals(t.reason, "crashed: exit status 1: out of file descriptors");
    assertEquals(t.metrics, null);
  }
  const point = r.curves.find((c) => c.stage === "decode")!.points.find((p) => p.concurrency === 16)!;
  assertEquals(point.samplesPerSec, null);
  assertEquals(r.best!.config.demuxConcurrency, 3);
  assert(r.rejected.some((m) => m.to === 16 && m.after === null && m.failure?.includes("file descriptors")));
});

Deno.test("a failing start: the first configuration that works becomes the best", async () => {
  const runner = new ModelRunner({
    stages: harnessStages(),
    noise: 0.02,
    seed: 3,
    ceiling: 400,
    fail: (c) => c.demuxConcurrency === 8 ? "hung: no result within 80 s (killed)" : null,
  });
  const r = await search(space, start, runner, BUDGET);
  assertEquals(r.start.samples, []);
  assertEquals(r.start.failure, "hung: no result within 80 s (killed)");
  assertEquals(r.best!.config.demuxConcurrency, 3);
});

Deno.test("stops at the budget, at max trials and on patience, saying why", async () => {
  const mk = () => new ModelRunner({ stages: harnessStages(), noise: 0.02, seed: 5, ceiling: 400 });
  const small = await search(space, start, mk(), { ...BUDGET, budgetSec: 30 });
  assert(small.spentSec <= 30);
  assertEquals(small.trials.length, 6); // 4.5 s each: the seventh would end past 30 s
  assert(small.stopReason.startsWith("budget"), small.stopReason);
  const few = await search(space, start, mk(), { ...BUDGET, maxTrials: 5 });
  assertEquals(few.trials.length, 5);
  assertEquals(few.stopReason, "max trials (5) reached");
  const impatient = await search(space, start, mk(), { ...BUDGET, patience: 1, budgetSec: 1000 });
  assert(impatient.stopReason.startsWith("patience"), impatient.stopReason);
});

Deno.test("an abort stops the search and drops the trial it interrupted", async () => {
  const ac = new AbortController();
  const inner = new ModelRunner({ stages: harnessStages(), noise: 0.02, seed: 5, ceiling: 400 });
  let calls = 0;
  const runner = {
    run: (req: Parameters<ModelRunner["run"]>[0]) => {
      if (++calls === 4) ac.abort();
      return inner.run(req);
    },
  };
  const r = await search(space, start, runner, { ...BUDGET, signal: ac.signal });
  assertEquals(r.stopReason, "interrupted");
  assertEquals(r.trials.length, 3);
});
