import assert from "node:assert/strict";
import { PipelineBuilder } from "../../src/pipeline/builder.ts";
import { formatStats } from "../../src/pipeline/format_stats.ts";
import { jsonlStatsHook } from "../../src/pipeline/hooks.ts";
import type { PipelineStats } from "../../src/pipeline/stats.ts";

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * source → demux → decode → resize → consumer, where the stage named `slow` takes 3 ms a task (one at a time) and
 * the others nothing; returns the final stats.
 */
async function runThrottled(slow: string): Promise<PipelineStats> {
  const stage = (name: string, concurrency: number) => ({
    name,
    concurrency: name === slow ? 1 : concurrency,
  });
  const work = (name: string) => async (x: number) => {
    if (name === slow) await sleep(3);
    return x;
  };
  const p = new PipelineBuilder()
    .addSource(Array.from({ length: 60 }, (_, i) => i))
    .pipe(work("demux"), stage("demux", 2))
    .pipe(work("decode"), stage("decode", 2))
    .pipe(work("resize"), stage("resize", 2))
    .build();
  for await (const _ of p) { /* fast consumer */ }
  return p.stats();
}

Deno.test("stats: a throttled stage is named the bottleneck", async () => {
  const stats = await runThrottled("decode");
  assert.equal(stats.bottleneck, "decode");
  const table = formatStats(stats);
  assert.match(table, /bottleneck: decode \(busy \d+%, input queue full/);
  const lines = table.split("\n");
  assert.match(lines[0], /^stage\s+conc\s+in\s+out/);
  assert.equal(lines.filter((l) => /^(source|demux|decode|resize|\(consumer\))\s/.test(l)).length, 5);
  const widths = new Set(lines.slice(0, 7).map((l) => l.length));
  assert.ok(widths.size <= 3, "rows are aligned");
  assert.equal((await runThrottled("demux")).bottleneck, "demux", "a slow demux before a fast decode");
  assert.equal((await runThrottled("resize")).bottleneck, "resize");
});

Deno.test("stats: a slow consumer is named the bottleneck", async () => {
  const p = new PipelineBuilder().addSource(Array.from({ length: 30 }, (_, i) => i)).pipe((x: number) => x)
    .build();
  for await (const _ of p) await sleep(2);
  assert.equal(p.stats().bottleneck, "(consumer)");
  assert.match(formatStats(p.stats()), /bottleneck: the consumer/);
});

Deno.test("stats: a slow source is named the bottleneck", async () => {
  const p = new PipelineBuilder().addSource(
    (async function* () {
      for (let i = 0; i < 30; i++) {
        await sleep(2);
        yield i;
      }
    })(),
    { name: "list" },
  ).pipe((x: number) => x).build();
  for await (const _ of p) { /* */ }
  assert.equal(p.stats().bottleneck, "list");
});

Deno.test("reports: a report hook, JSONL lines, Chrome trace file", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const jsonl = `${dir}/stats.jsonl`;
    const trace = `${dir}/trace.json`;
    const reports: PipelineStats[] = [];
    const p = new PipelineBuilder()
      .addSource(Array.from({ length: 20 }, (_, i) => i))
      .pipe(async (x: number) => {
        await sleep(2);
        return x;
      }, { name: "work", concurrency: 2 })
      .build({
        reportInterval: 5,
        hooks: [{ report: (s) => reports.push(s) }, jsonlStatsHook(jsonl)],
        trace,
      });
    for await (const _ of p) { /* */ }
    assert.ok(reports.length >= 2, `reports: ${reports.length}`);
    assert.equal(reports.at(-1)!.stages[1].done, 20);
    const lines = (await Deno.readTextFile(jsonl)).trim().split("\n");
    assert.equal(lines.length, reports.length);
    assert.equal(JSON.parse(lines.at(-1)!).stages[1].name, "work");
    const events = JSON.parse(await Deno.readTextFile(trace)).traceEvents as {
      ph: string;
      name: string;
      tid: number;
    }[];
    const spans = events.filter((e) => e.ph === "X" && e.name === "work");
    assert.equal(spans.length, 20);
    assert.ok(spans.every((e) => e.tid === 0 || e.tid === 1), "one lane per concurrent slot");
    assert.ok(events.some((e) => e.ph === "C" && e.name === "work.in"));
    assert.ok(events.some((e) => e.ph === "M"));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
