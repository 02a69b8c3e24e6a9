/**
 * Real trial subprocesses of a tiny synthetic pipeline (`fixtures/tiny_target.ts`): a good trial's metrics, and a
 * trial that crashes, hangs, exceeds its memory limit or throws, each recorded as failed with its reason.
 */
import assert, { deepStrictEqual as assertEquals } from "node:assert/strict";
import { SubprocessRunner } from "../../src/tune/runner.ts";
import { moduleUrl } from "../../src/tune/tune.ts";

const MODULE = moduleUrl(new URL("./fixtures/tiny_target.ts", import.meta.url).pathname);

async function withRunner(
  args: string[],
  f: (r: SubprocessRunner, dir: string) => Promise<void>,
  graceSec = 8,
) {
  const dir = await Deno.makeTempDir();
  try {
    await f(
      new SubprocessRunner({ module: MODULE, args, graceSec, memoryLimitBytes: 400 << 20, logDir: dir }),
      dir,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const trial = { id: 1, kind: "measure" as const, config: { work: 2 }, warmupSec: 0.3, measureSec: 1 };

Deno.test("a trial subprocess measures the pipeline: samples/s, steps, per-stage window, CPU, RSS", async () => {
  await withRunner([], async (runner, dir) => {
    const d = await runner.describe();
    assertEquals(d.space, { work: { kind: "int", min: 1, max: 2, stage: "work" } });
    assertEquals(d.start, { work: 1 });
    const o = await runner.run(trial);
    assertEquals(o.status, "ok", o.reason ?? "");
    const m = o.metrics!;
    // 2 tasks of ≥ 4 ms at once: at most 500 items/s, and well above what one task could do
    assert(m.samplesPerSec > 150 && m.samplesPerSec <= 500, `${m.samplesPerSec}`);
    assertEquals(m.samples, m.batches * 4);
    assert(m.windowSec >= 1 && m.windowSec < 2);
    assert(m.stepP50Ms > 0 && m.stepP90Ms >= m.stepP50Ms);
    assert(m.dataWaitFraction > 0.9); // no training step: the loop only waits
    const work = m.stages.find((s) => s.name === "work")!;
    assertEquals(work.concurrency, 2);
    assert(work.meanMs! >= 4, `${work.meanMs}`);
    assert(Math.abs(work.itemsPerSec - m.samplesPerSec) / m.samplesPerSec < 0.15);
    assert(m.peakRssBytes! > 10 << 20 && m.peakRssBytes! < 400 << 20);
    assert(m.cpuCores! >= 0 && m.cpuCores! < 2.5);
    assert((await Deno.stat(`${dir}/trial-1.log`)).isFile);
    // the ceiling trial replays batches: far faster than loading them
    const c = await runner.run({ ...trial, id: 2, kind: "ceiling" });
    assert(c.metrics!.samplesPerSec > 10 * m.samplesPerSec);
  });
});

Deno.test("a trial that crashes is failed with its exit status and stderr", async () => {
  await withRunner(["crash"], async (runner) => {
    const o = await runner.run(trial);
    assertEquals(o.status, "failed");
    assertEquals(o.reason, "crashed: exit status 3: tiny_target: simulated crash");
    assert(o.stderrTail.includes("tiny_target: simulated crash"));
  });
});

Deno.test("a trial that hangs is killed after its time limit and failed", async () => {
  await withRunner(["hang"], async (runner) => {
    const o = await runner.run(trial);
    assertEquals(o.status, "failed");
    assertEquals(o.reason, "hung: no result within 9 s (killed)"); // 0.3 + 1 + 8 grace
    assert(o.wallSec >= 9 && o.wallSec < 20);
  });
});

Deno.test("a trial over its memory limit is killed and failed", async () => {
  await withRunner(["hog"], async (runner) => {
    const o = await runner.run(trial);
    assertEquals(o.status, "failed");
    const held = o.reason!.match(/^exceeded the memory limit \(400 MiB\): its processes held (\d+) MiB$/);
    assert(held && Number(held[1]) > 400, o.reason!);
    assert(o.peakTreeRssBytes! > 400 << 20);
  }, 60); // the memory watch, not the hang limit, must end it, however slowly a loaded machine starts the trial
});

Deno.test("a configuration the module cannot build fails with the module's error", async () => {
  await withRunner(["throw"], async (runner) => {
    const o = await runner.run(trial);
    assertEquals(o.status, "failed");
    assertEquals(o.reason, "failed: Error: tiny_target: this configuration cannot be built");
    assert(o.stderrTail.includes("at Object.create")); // the stack is kept in its stderr
  });
});

Deno.test("a module without a tuning target is refused by name", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const module = moduleUrl(new URL("../../src/tune/space.ts", import.meta.url).pathname);
    const runner = new SubprocessRunner({
      module,
      args: [],
      graceSec: 5,
      memoryLimitBytes: 1 << 30,
      logDir: dir,
    });
    await assert.rejects(runner.describe(), /space\.ts: InvalidArgumentError: .*exports no tuning target/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
