import assert from "node:assert/strict";
import { PipelineBuilder } from "../../src/pipeline/builder.ts";
import { jsonlStatsHook, type PipelineEvent, type PipelineHook } from "../../src/pipeline/hooks.ts";
import { failureLine } from "../../src/pipeline/stage.ts";
import type { PipelineStats } from "../../src/pipeline/stats.ts";

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function slowPipeline(hooks: PipelineHook[], extra: Record<string, unknown> = {}) {
  return new PipelineBuilder()
    .addSource(Array.from({ length: 12 }, (_, i) => i))
    .pipe(async (x: number) => {
      await sleep(3);
      return x;
    }, { name: "work" })
    .build({ reportInterval: 5, hooks, ...extra });
}

Deno.test("hooks: report() gets periodic stats and one final report per epoch", async () => {
  const reports: [PipelineStats, boolean][] = [];
  const p = slowPipeline([{ report: (s, final) => reports.push([s, final]) }]);
  for await (const _ of p) { /* */ }
  assert.ok(reports.length >= 2, `reports: ${reports.length}`);
  assert.deepEqual(reports.map(([, f]) => f).filter((f) => f), [true], "exactly one final report");
  assert.equal(reports.at(-1)![1], true);
  assert.equal(reports.at(-1)![0].stages[1].done, 12);
  assert.equal(reports.at(-1)![0].running, false);
});

Deno.test("hooks: a hook that throws is logged once and removed; the others and the pipeline go on", async () => {
  const logs: string[] = [];
  let good = 0;
  let bad = 0;
  const p = slowPipeline([{
    report: () => {
      bad++;
      throw new Error("disk full");
    },
  }, { report: () => good++ }], { log: (m: string) => logs.push(m) });
  const out: number[] = [];
  for await (const x of p) out.push(x);
  assert.equal(out.length, 12);
  assert.equal(bad, 1);
  assert.ok(good >= 2);
  assert.deepEqual(logs, ["sluice pipeline: a hook threw and was removed: disk full"]);
});

Deno.test("hooks: the JSONL writer is a hook, and hooks are the only door: the engine reads no environment", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const direct = `${dir}/direct.jsonl`;
    const p = slowPipeline([jsonlStatsHook(direct)]);
    for await (const _ of p) { /* */ }
    const lines = (await Deno.readTextFile(direct)).trim().split("\n").map((l) => JSON.parse(l));
    assert.ok(lines.length >= 2);
    assert.equal(typeof lines[0].t, "number");
    assert.equal(lines.at(-1).stages[1].name, "work");
    assert.equal(lines.at(-1).stages[1].done, 12);

    // SLUICE_STATS_JSONL is the CLI's (`sluice load`), not the engine's: a pipeline without hooks writes nothing.
    const viaEnv = `${dir}/env.jsonl`;
    Deno.env.set("SLUICE_STATS_JSONL", viaEnv);
    try {
      const q = slowPipeline([]);
      for await (const _ of q) { /* */ }
    } finally {
      Deno.env.delete("SLUICE_STATS_JSONL");
    }
    await assert.rejects(Deno.stat(viaEnv), Deno.errors.NotFound);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("hooks: event() gets every failed task (beyond the ten logged) with the stage, the item and the error", async () => {
  const events: PipelineEvent[] = [];
  const logs: string[] = [];
  const thrown: Error[] = [];
  const p = new PipelineBuilder()
    .addSource(Array.from({ length: 30 }, (_, i) => i))
    .pipe((x: number) => {
      if (x % 2 === 1) return x;
      const e = new RangeError(`even ${x}`);
      thrown.push(e);
      throw e;
    }, { name: "odd", maxFailures: 100 })
    .build({ hooks: [{ event: (e) => events.push(e) }], log: (m) => logs.push(m) });
  const out: number[] = [];
  for await (const x of p) out.push(x);
  assert.equal(out.length, 15);
  const failures = events.filter((e) => e.type === "failure");
  assert.equal(failures.length, 15);
  assert.deepEqual(failures.map((f) => f.stage), Array(15).fill("odd"));
  assert.deepEqual(failures.map((f) => f.item).sort(), thrown.map((e) => e.message.slice(5)).sort());
  assert.deepEqual(new Set(failures.map((f) => f.error)), new Set(thrown), "the thrown errors themselves");
  // The log line of each of the first ten is failureLine's, the one shape the backend parent prints too.
  const f0 = failures[0] as Extract<PipelineEvent, { type: "failure" }>;
  assert.ok(logs.includes(failureLine("odd", f0.item, f0.error)), logs.join("\n"));
  assert.equal(logs.filter((l) => l.includes('stage "odd" failed on')).length, 10);
});
