// `concurrency: "auto"` on real pipelines running on virtual time (FakeClock): stage functions wait on the clock
// for a latency that depends on how many tasks are in flight, so the controller sees the same counters on every
// run and the assertions are about what it decides, not about how fast this machine is.
import assert from "node:assert/strict";
import { PipelineBuilder, resolveBuildOptions } from "../../src/pipeline/builder.ts";
import type { BuildOptions, Pipeline } from "../../src/pipeline/pipeline.ts";
import type { PipeOptions } from "../../src/pipeline/builder.ts";
import type { PipelineEvent } from "../../src/pipeline/hooks.ts";
import { formatStats } from "../../src/pipeline/format_stats.ts";
import { InvalidArgumentError } from "../../src/errors.ts";
import { AutoController } from "../../src/pipeline/auto_controller.ts";
import { FakeClock } from "../helpers/fake_clock.ts";
import { kneeLatency } from "./contention.ts";

function* forever(): Generator<number> {
  for (let i = 0;; i++) yield i;
}

/** A stage function whose per-item latency is `latency(n)` with n tasks in flight (counted at its start). */
function synthetic(clock: FakeClock, latency: (n: number) => number): (x: number) => Promise<number> {
  let inFlight = 0;
  return async (x: number) => {
    const n = ++inFlight;
    await clock.sleep(latency(n));
    inFlight--;
    return x;
  };
}

/** Consumes `p` until virtual time `until` (ms), driving the clock; returns the items consumed. */
async function drive<T>(
  p: Pipeline<T>,
  clock: FakeClock,
  until: number,
  at?: [number, () => void],
): Promise<number> {
  let n = 0;
  const it = p[Symbol.asyncIterator]();
  let done = false;
  const consumer = (async () => {
    while (!done) {
      const r = await it.next();
      if (r.done) break;
      n++;
    }
  })();
  if (at !== undefined) {
    await clock.runUntil(at[0]);
    at[1]();
  }
  await clock.runUntil(until);
  done = true;
  const stopping = p.stop();
  await clock.runUntil(until + 60_000); // let the last tasks finish their virtual sleeps
  await stopping;
  await consumer;
  return n;
}

/** The concurrency the stage held at the end, and the changes made in [from, to) ms of virtual time. */
function steady(p: Pipeline<unknown>, stage: string, from: number) {
  const log = p.stats().controller.log.filter((d) => d.stage === stage);
  const settles = log.filter((d) => d.action === "settle");
  return {
    settled: settles.at(-1)?.to,
    kept: log.filter((d) => d.t >= from && d.action === "keep").length,
    changes: log.filter((d) => d.t >= from && d.from !== d.to).length,
    log,
  };
}

const AUTO = { intervalMs: 1000, threshold: 0.05, reprobeMs: 30_000, minTasks: 8, cpuBudget: 4 };

/** Runs `fn` with a fresh virtual clock. */
function withClock(fn: (clock: FakeClock) => Promise<void>): () => Promise<void> {
  return async () => {
    const clock = new FakeClock();
    try {
      await fn(clock);
    } finally {
      clock.close();
    }
  };
}

/** source (endless) → one synthetic stage on `clock`, with the pipe options and build options given. */
function onePipeline(
  clock: FakeClock,
  latency: (n: number) => number,
  pipe: PipeOptions,
  build: BuildOptions = {},
): Pipeline<number> {
  return new PipelineBuilder()
    .addSource(forever())
    .pipe(synthetic(clock, latency), pipe)
    .build({ clock, autoConcurrency: AUTO, log: () => {}, ...build });
}

Deno.test(
  "auto concurrency: a stage with a contention knee at 3 settles at 3 ± 1 and stays",
  withClock(async (clock) => {
    const events: PipelineEvent[] = [];
    const p = onePipeline(clock, kneeLatency(10, 0.1, 3, 3), { name: "demux", concurrency: "auto" }, {
      hooks: [{ event: (e) => events.push(e) }],
    });
    assert.equal(p.stats().stages[1].concurrency, 1, "auto starts at 1");
    assert.equal(p.stats().stages[1].auto, true);
    const consumed = await drive(p, clock, 150_000);
    assert.ok(consumed > 10_000, `consumed ${consumed}`);
    const s = steady(p, "demux", 60_000);
    if (Deno.env.get("SHOW_CONTROLLER")) console.log(s.log.map((d) => JSON.stringify(d)).join("\n"));
    assert.ok(s.settled !== undefined && Math.abs(s.settled - 3) <= 1, JSON.stringify(s.log, null, 1));
    assert.equal(s.kept, 0, "no step kept in the steady window");
    assert.ok(s.changes <= 4 * (90 / 30) + 4, `${s.changes} changes in the steady window`);
    // Every change reached the hooks as an event with its reason, and the table marks the stage as auto.
    const changes = events.filter((e) => e.type === "concurrency");
    assert.ok(changes.length >= 2 && changes.every((e) => e.type === "concurrency" && e.reason.length > 0));
    for (let i = 1; i < changes.length; i++) {
      const [a, b] = [changes[i - 1], changes[i]];
      if (a.type === "concurrency" && b.type === "concurrency") {
        assert.equal(b.from, a.to, "changes chain up");
      }
    }
    const last = changes.at(-1)!;
    assert.equal(last.type === "concurrency" && last.to, p.stats().stages[1].concurrency);
    assert.match(formatStats(p.stats()), /^demux\s+\d\*/m);
    assert.match(formatStats(p.stats()), /^\* auto concurrency/m);
  }),
);

Deno.test(
  "auto concurrency: an I/O-bound stage that wants 16 gets 16 ± 1, beyond the CPU budget",
  withClock(async (clock) => {
    const p = onePipeline(clock, (n) => 50 * Math.max(1, n / 16), { name: "fetch", concurrency: "auto" });
    await drive(p, clock, 150_000);
    const s = steady(p, "fetch", 90_000);
    assert.ok(s.settled !== undefined && Math.abs(s.settled - 16) <= 1, JSON.stringify(s.log, null, 1));
    assert.equal(s.kept, 0);
    assert.equal(p.stats().stages[1].bound, "io");
  }),
);

Deno.test(
  "auto concurrency: a CPU-bound stage stops at the cores (CPU budget 4)",
  withClock(async (clock) => {
    const p = onePipeline(clock, (n) => 20 * Math.max(1, n / 4), {
      name: "decode",
      concurrency: "auto",
      bound: "cpu",
    });
    await drive(p, clock, 120_000);
    const s = steady(p, "decode", 60_000);
    assert.equal(s.settled, 4, JSON.stringify(s.log, null, 1));
    assert.ok(s.log.every((d) => d.to <= 4), "never above the budget");
    assert.equal(s.kept, 0);
  }),
);

Deno.test(
  "auto concurrency: handed over at 8 while running (past the knee), it backs off to 3; a number pins it",
  withClock(async (clock) => {
    const p = onePipeline(clock, kneeLatency(10, 0.1, 3, 3), { name: "demux", concurrency: 8 });
    assert.equal(p.stats().controller.state, "idle");
    await drive(p, clock, 120_000, [5_000, () => p.stage("demux").setConcurrency("auto")]);
    const s = steady(p, "demux", 90_000);
    assert.ok(s.settled !== undefined && Math.abs(s.settled - 3) <= 1, JSON.stringify(s.log, null, 1));
    assert.equal(s.log[0].from, 8);
    p.stage("demux").setConcurrency(5);
    assert.equal(p.stage("demux").auto, false);
    assert.equal(p.stats().controller.state, "idle");
    assert.throws(() => p.stage("demux").setConcurrency(0), InvalidArgumentError);
  }),
);

Deno.test("auto concurrency: the same pipeline on the same clock makes the same decisions", async () => {
  const run = async () => {
    const clock = new FakeClock();
    try {
      const p = onePipeline(clock, kneeLatency(5, 0.2, 2, 4), { name: "x", concurrency: "auto" });
      await drive(p, clock, 40_000);
      return p.stats().controller.log;
    } finally {
      clock.close();
    }
  };
  const a = await run();
  assert.ok(a.length > 0);
  assert.deepEqual(await run(), a);
});

Deno.test("auto concurrency: options are checked", () => {
  const b = new PipelineBuilder().addSource([1]);
  assert.throws(() => b.pipe((x: number) => x, { concurrency: "sometimes" as never }), InvalidArgumentError);
  assert.throws(
    () => b.pipe((x: number) => x, { concurrency: "auto", maxConcurrency: 0 }),
    InvalidArgumentError,
  );
  assert.throws(() => b.pipe((x: number) => x, { bound: "gpu" as never }), InvalidArgumentError);
  assert.throws(() => b.build({ autoConcurrency: { threshold: 2 } }), InvalidArgumentError);
  assert.throws(() => b.build({ autoConcurrency: { intervalMs: 0 } }), InvalidArgumentError);
});

Deno.test(
  "auto concurrency: epochs shorter than a window still get tuned (windows run on across epoch boundaries)",
  withClock(async (clock) => {
    // 12 items an epoch at 50 ms each: 600 ms at concurrency 1, less than one 1 s window.
    const items = Array.from({ length: 12 }, (_, i) => i);
    const p = new PipelineBuilder()
      .addSource(items, { continuous: true })
      .pipe(synthetic(clock, (n) => 50 * Math.max(1, n / 8)), { name: "fetch", concurrency: "auto" })
      .build({ clock, autoConcurrency: AUTO, log: () => {} });
    let consumed = 0;
    const epochs = (async () => {
      for (let e = 0; e < 400; e++) for await (const _ of p) consumed++;
    })();
    await clock.runUntil(60_000);
    await clock.runUntil(600_000); // the remaining epochs, quickly at the concurrency reached
    await epochs;
    await p.stop();
    assert.equal(consumed, 400 * 12);
    const probes = p.stats().controller.log.filter((d) => d.action === "probe");
    assert.ok(probes.length > 0, "the controller decided nothing across short epochs");
    assert.ok(
      p.stats().stages[1].concurrency >= 4,
      `fetch reached ${p.stats().stages[1].concurrency}: ${
        JSON.stringify(p.stats().controller.log.slice(0, 6))
      }`,
    );
  }),
);

Deno.test(
  "auto concurrency: the controller is an attachment: beside a pipeline, through its public stats() and stage controls",
  withClock(async (clock) => {
    // The pipeline's own controller would tick after 10^9 ms: a second one, given nothing but what the pipeline
    // offers everyone, does the work.
    const p = onePipeline(clock, kneeLatency(10, 0.1, 3, 3), { name: "demux", concurrency: "auto" }, {
      autoConcurrency: { ...AUTO, intervalMs: 1e9 },
    });
    const events: PipelineEvent[] = [];
    const beside = new AutoController(
      { stats: () => p.stats(), stages: p.stages },
      resolveBuildOptions({ autoConcurrency: AUTO }).autoConcurrency,
      clock,
      (e) => events.push(e),
    );
    beside.start();
    await drive(p, clock, 150_000);
    beside.stop();
    assert.deepEqual(p.stats().controller.log, [], "the pipeline's own controller never ticked");
    const log = beside.stats().log;
    const settled = log.filter((d) => d.action === "settle").at(-1)?.to;
    assert.ok(settled !== undefined && Math.abs(settled - 3) <= 1, JSON.stringify(log, null, 1));
    const changes = events.filter((e) => e.type === "concurrency");
    assert.ok(changes.length >= 2);
    const last = changes.at(-1)!;
    assert.equal(last.type === "concurrency" && last.to, p.stats().stages[1].concurrency);
    // A number pins the stage: the controller's next ticks leave it alone.
    p.stage("demux").setConcurrency(7);
    const before = events.length;
    beside.tick();
    beside.tick();
    assert.equal(events.length, before);
    assert.equal(p.stats().stages[1].concurrency, 7);
    assert.deepEqual(beside.stats().stages, []);
    // Its step is for stages under it only, and within [1, maxConcurrency].
    assert.throws(() => p.stage("demux").adjust(3), InvalidArgumentError);
    p.stage("demux").setConcurrency("auto");
    assert.throws(() => p.stage("demux").adjust(0), InvalidArgumentError);
    assert.throws(() => p.stage("demux").adjust(65), InvalidArgumentError);
    p.stage("demux").adjust(4);
    assert.equal(p.stage("demux").auto, true);
  }),
);
