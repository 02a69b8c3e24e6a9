// The auto-concurrency policy on a contention-knee harness (the pattern Vector uses to test its limiter): stages
// whose throughput at concurrency n follows a known curve, simulated analytically window by window, so every
// run gives the same samples and the assertions are about decisions, not timings.
import assert from "node:assert/strict";
import {
  type AutoConfig,
  decide,
  initialState,
  type Sample,
  type StageSample,
} from "../../src/pipeline/auto_policy.ts";
import type { ControllerDecision, StageBound } from "../../src/pipeline/stats.ts";
import { resolveBuildOptions } from "../../src/pipeline/builder.ts";
import { kneeLatency } from "./contention.ts";

/** A stage of the simulated chain: its throughput (items/s) at concurrency n is n / latency(n). */
interface SimStage {
  name: string;
  bound: StageBound;
  auto: boolean;
  concurrency: number;
  maxConcurrency?: number;
  latency: (n: number) => number;
}

interface Counters {
  finished: number;
  busyMs: number;
  slotMs: number;
  blockedMs: number;
  itemMs: number;
}

/**
 * Runs the policy over a chain source → stages → consumer for `seconds`, one sample per interval. In each window the
 * chain moves at the rate of its slowest stage; that stage works all the time with a full input queue, stages
 * before it are blocked for the rest of their time, stages after it wait. `change(t, stages)` may alter the
 * workload (drift) before each window.
 */
function simulate(
  stages: SimStage[],
  cfg: AutoConfig,
  seconds: number,
  change?: (t: number, stages: SimStage[]) => void,
): { log: ControllerDecision[]; history: { t: number; conc: number[] }[] } {
  let state = initialState();
  const log: ControllerDecision[] = [];
  const history: { t: number; conc: number[] }[] = [];
  const c: Counters[] = stages.map(() => ({ finished: 0, busyMs: 0, slotMs: 0, blockedMs: 0, itemMs: 0 }));
  const consumer: Counters = { finished: 0, busyMs: 0, slotMs: 0, blockedMs: 0, itemMs: 0 };
  const dt = cfg.intervalMs;
  for (let t = 0; t <= seconds * 1000; t += dt) {
    change?.(t, stages);
    const sample: Sample = {
      t,
      stages: [
        { ...row("source", undefined, false, 1, 1, consumer), busyMs: 0, inputItemMs: t, inputCapacity: 1 },
        ...stages.map((s, i) =>
          row(s.name, s.bound, s.auto, s.concurrency, s.maxConcurrency ?? 64, c[i], s.concurrency + 2)
        ),
        row("(consumer)", undefined, false, 1, 1, consumer, 3),
      ],
    };
    const d = decide(state, sample, cfg);
    state = d.state;
    log.push(...d.log);
    for (const ch of d.changes) stages.find((s) => s.name === ch.stage)!.concurrency = ch.to;
    history.push({ t, conc: stages.map((s) => s.concurrency) });
    // Advance one window at the new concurrencies.
    const rates = stages.map((s) => s.concurrency / (s.latency(s.concurrency) / 1000));
    const x = Math.min(...rates);
    const b = rates.indexOf(x);
    stages.forEach((s, i) => {
      const busy = x / rates[i];
      c[i].finished += x * dt / 1000;
      c[i].busyMs += busy * s.concurrency * dt;
      c[i].slotMs += s.concurrency * dt;
      c[i].blockedMs += i < b ? (1 - busy) * s.concurrency * dt : 0;
      c[i].itemMs += i <= b ? (s.concurrency + 2) * dt : 0;
    });
    consumer.finished += x * dt / 1000;
    consumer.busyMs += 0.02 * dt;
    consumer.slotMs += dt;
  }
  return { log, history };
}

function row(
  name: string,
  bound: StageBound | undefined,
  auto: boolean,
  concurrency: number,
  maxConcurrency: number,
  c: Counters,
  capacity = 1,
): StageSample {
  return {
    name,
    auto,
    concurrency,
    maxConcurrency,
    bound,
    finished: c.finished,
    busyMs: c.busyMs,
    slotMs: c.slotMs,
    blockedMs: c.blockedMs,
    inputItemMs: c.itemMs,
    inputCapacity: capacity,
  };
}

/** The demux-like stage with its knee at 3 (latency 10 ms, +10% per task, ×3 per task past the knee). */
function kneeStage(concurrency = 1): SimStage {
  return { name: "demux", bound: "io", auto: true, concurrency, latency: kneeLatency(10, 0.1, 3, 3) };
}

const CFG = resolveBuildOptions({
  autoConcurrency: { intervalMs: 1000, threshold: 0.05, cpuBudget: 4, reprobeMs: 30_000, minTasks: 8 },
}).autoConcurrency;

/** Concurrency of stage `i` after `t` ms. */
function settledAt(run: ReturnType<typeof simulate>, i: number, t: number): number {
  return run.history.findLast((h) => h.t <= t)!.conc[i];
}

/** Changes of stage `i` in [from, to) ms that were kept (probes that were reverted do not count). */
function keptSteps(
  run: ReturnType<typeof simulate>,
  stage: string,
  from: number,
  to: number,
): ControllerDecision[] {
  return run.log.filter((d) => d.stage === stage && d.t >= from && d.t < to && d.action === "keep");
}

/** The value the stage last settled at. */
function lastSettle(run: ReturnType<typeof simulate>, stage: string): number {
  return run.log.findLast((d) => d.stage === stage && d.action === "settle")!.to;
}

/** Every concurrency stage `i` had in [from, to) ms. */
function stays(run: ReturnType<typeof simulate>, i: number, from: number, to: number): Set<number> {
  const values = new Set<number>();
  for (const h of run.history) {
    if (h.t < from || h.t >= to) continue;
    values.add(h.conc[i]);
  }
  return values;
}

Deno.test("auto policy: a contention knee at 3 (latency grows with tasks in flight) settles at 3 and stays", () => {
  const run = simulate([kneeStage()], CFG, 180);
  const settled = settledAt(run, 0, 60_000);
  assert.ok(Math.abs(settled - 3) <= 1, `settled at ${settled}: ${JSON.stringify(run.log, null, 1)}`);
  // Steady window: 60 s to 180 s. Re-probes come and go; no step is kept, and the value it returns to is 3.
  assert.deepEqual(keptSteps(run, "demux", 60_000, 180_000), []);
  assert.equal(lastSettle(run, "demux"), settled);
  const probes = run.log.filter((d) => d.t >= 60_000 && d.action === "probe").length;
  assert.ok(probes <= 2 * (120 / 30) + 2, `${probes} probes in 120 s`);
  assert.ok([...stays(run, 0, 60_000, 180_000)].every((v) => Math.abs(v - settled) <= 1), "probes are ±1");
});

Deno.test("auto policy: started past the knee (8, as the field study found demux), it backs off to 3", () => {
  const run = simulate([kneeStage(8)], CFG, 120);
  assert.equal(
    settledAt(run, 0, 90_000),
    3,
    JSON.stringify(run.log.map((d) => `${d.action} ${d.from}→${d.to}`)),
  );
  const reverts = run.log.filter((d) => d.action === "revert" && d.from === 9);
  assert.ok(reverts.length >= 1, "the first probe up from 8 was reverted");
});

Deno.test("auto policy: an I/O-bound stage that wants 16 goes far beyond the CPU budget, to 16 ± 1", () => {
  // Latency stays flat up to 16 tasks (a server with 16 connections), then grows in proportion.
  const stage: SimStage = {
    name: "fetch",
    bound: "io",
    auto: true,
    concurrency: 1,
    latency: (n) => 50 * Math.max(1, n / 16),
  };
  const run = simulate([stage], CFG, 200);
  const settled = settledAt(run, 0, 100_000);
  assert.ok(Math.abs(settled - 16) <= 1, `settled at ${settled}`);
  assert.deepEqual(keptSteps(run, "fetch", 100_000, 200_000), []);
  assert.equal(lastSettle(run, "fetch"), settled);
  assert.ok([...stays(run, 0, 100_000, 200_000)].every((v) => Math.abs(v - settled) <= 1), "probes are ±1");
});

Deno.test("auto policy: a CPU-bound stage is capped by the cores (budget 4), and flat above them it stops at 4 ± 1", () => {
  const cpu = (n: number) => 20 * Math.max(1, n / 4); // processor sharing over 4 cores
  const capped = simulate(
    [{ name: "decode", bound: "cpu", auto: true, concurrency: 1, latency: cpu }],
    CFG,
    120,
  );
  assert.equal(settledAt(capped, 0, 60_000), 4);
  assert.ok(capped.history.every((h) => h.conc[0] <= 4), "never above the CPU budget");
  assert.deepEqual(keptSteps(capped, "decode", 60_000, 120_000), []);
  const roomy = simulate(
    [{ name: "decode", bound: "cpu", auto: true, concurrency: 1, latency: cpu }],
    { ...CFG, cpuBudget: 16 },
    120,
  );
  const settled = settledAt(roomy, 0, 60_000);
  assert.ok(Math.abs(settled - 4) <= 1, `settled at ${settled}`);
});

Deno.test("auto policy: CPU stages share the budget: an over-provisioned stage yields a slot to the bottleneck", () => {
  const demux: SimStage = { name: "demux", bound: "cpu", auto: true, concurrency: 3, latency: () => 5 };
  const decode: SimStage = {
    name: "decode",
    bound: "cpu",
    auto: true,
    concurrency: 1,
    latency: (n) => 40 * Math.max(1, n / 3), // three cores' worth of decoding, in a budget of 4
  };
  const run = simulate([demux, decode], CFG, 120);
  const [d, c] = run.history.at(-1)!.conc;
  assert.ok(run.history.every((h) => h.conc[0] + h.conc[1] <= 4), "the pair never exceeds the CPU budget");
  assert.equal(d, 1, "demux (busy a fraction of one slot) gave its spare slots away");
  assert.equal(c, 3, JSON.stringify(run.log.map((x) => `${x.stage} ${x.action} ${x.from}→${x.to}`)));
  assert.ok(run.log.some((x) => x.action === "yield" && x.stage === "demux"));
});

Deno.test("auto policy: when the workload drifts (the knee moves from 3 to 6) it probes again and follows", () => {
  const run = simulate([kneeStage()], { ...CFG, reprobeMs: 1e9 }, 240, (t, s) => {
    if (t === 100_000) s[0].latency = kneeLatency(6, 0.02, 3, 6); // e.g. files moved to a faster disk
  });
  assert.equal(settledAt(run, 0, 90_000), 3);
  const after = settledAt(run, 0, 240_000);
  assert.ok(Math.abs(after - 6) <= 1, `after the drift: ${after}`);
  assert.ok(run.log.some((d) => d.action === "reprobe" && /drifted/.test(d.reason)));
});

Deno.test("auto policy: the same measurements give the same decisions; every change has a reason", () => {
  const mk = (): SimStage => ({
    name: "x",
    bound: "io",
    auto: true,
    concurrency: 1,
    latency: kneeLatency(5, 0.2, 2, 4),
  });
  const a = simulate([mk()], CFG, 90);
  const b = simulate([mk()], CFG, 90);
  assert.deepEqual(a.log, b.log);
  assert.ok(a.log.length > 0 && a.log.every((d) => d.reason.length > 0));
});

Deno.test("auto policy: a bottleneck that is not under the controller, or none, changes nothing", () => {
  const fixed: SimStage = { name: "fixed", bound: "io", auto: false, concurrency: 2, latency: () => 50 };
  const auto: SimStage = { name: "auto", bound: "io", auto: true, concurrency: 1, latency: () => 1 };
  const run = simulate([auto, fixed], CFG, 60);
  assert.deepEqual(run.log, []);
});
