import assert, { deepStrictEqual as assertEquals } from "node:assert/strict";
import { MAIN, sluice } from "./helpers.ts";
import { processTree } from "../../src/tune/proc.ts";
import { readTrials } from "../../src/tune/tune.ts";
import { parseDuration, parseSize } from "../../src/cli/values.ts";

const FIXTURE = new URL("../tune/fixtures/tiny_target.ts", import.meta.url).pathname;

Deno.test("sluice tune: a short real search, then --resume carries on without rerunning its trials", async () => {
  const dir = await Deno.makeTempDir();
  const out = `${dir}/run`;
  try {
    const quick = ["--trial-seconds", "0.6", "--warmup-seconds", "0.2", "--budget", "2m"];
    const first = await sluice(["tune", FIXTURE, ...quick, "--max-trials", "2", "--out", out]);
    assertEquals(first.code, 0, first.stderr);
    assert(first.stdout.includes("stopped: max trials (2) reached"), first.stdout);
    assertEquals((await readTrials(`${out}/trials.jsonl`)).map((t) => t.phase), ["start", "repeat"]);

    const second = await sluice(["tune", FIXTURE, "--resume", out, "--max-trials", "3"]);
    assertEquals(second.code, 0, second.stderr);
    const trialLines = second.stderr.split("\n").filter((l) => l.startsWith("trial "));
    assertEquals(trialLines.map((l) => l.endsWith("(recorded)")), [true, true, false]);
    assert(trialLines[2].includes("ceiling"), trialLines[2]);
    const records = await readTrials(`${out}/trials.jsonl`);
    assertEquals(records.map((t) => t.id), [1, 2, 3]);
    assertEquals(records.map((t) => t.status), ["ok", "ok", "ok"]);
    assert(second.stdout.startsWith("best: work concurrency 1: "), second.stdout);
    const report = await Deno.readTextFile(`${out}/report.md`);
    assert(report.includes("3 trials (0 failed)"), report);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("sluice tune: bad budget, size and option combinations are usage errors", async () => {
  const bad = await sluice(["tune", FIXTURE, "--budget", "ten minutes"]);
  assertEquals(bad.code, 2);
  assert(
    bad.stderr.startsWith(
      'sluice tune: --budget must be a duration like 10m, 90s or 1h30m, got "ten minutes"',
    ),
  );
  const size = await sluice(["tune", FIXTURE, "--memory-limit", "lots"]);
  assertEquals(size.code, 2);
  assert(size.stderr.includes('--memory-limit must be a size like 12GiB or 512MiB, got "lots"'), size.stderr);
  const both = await sluice(["tune", FIXTURE, "--out", "a", "--resume", "b"]);
  assertEquals(both.code, 2);
  assert(both.stderr.includes("give --out or --resume, not both"), both.stderr);
});

Deno.test("durations and sizes", () => {
  assertEquals(parseDuration("budget", "10m"), 600);
  assertEquals(parseDuration("budget", "1h30m"), 5400);
  assertEquals(parseDuration("budget", "90s"), 90);
  assertEquals(parseDuration("budget", "45"), 45);
  assertEquals(parseDuration("budget", "1.5h"), 5400);
  for (const t of ["", "0", "10x", "m10", "10m foo", "-5m"]) {
    assert.throws(() => parseDuration("budget", t), /--budget/);
  }
  assertEquals(parseSize("memory-limit", "12GiB"), 12 * 2 ** 30);
  assertEquals(parseSize("memory-limit", "512MiB"), 512 * 2 ** 20);
  assertEquals(parseSize("memory-limit", "2G"), 2 * 2 ** 30);
  assertEquals(parseSize("memory-limit", "500MB"), 500e6);
  assertEquals(parseSize("memory-limit", "1000"), 1000);
  for (const t of ["", "0", "12 parsecs", "GiB"]) {
    assert.throws(() => parseSize("memory-limit", t), /--memory-limit/);
  }
});

Deno.test("a killed tuner leaves no trial running (the trial notices it was orphaned)", async () => {
  const dir = await Deno.makeTempDir();
  const tuner = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MAIN, "tune", FIXTURE, "--trial-seconds", "1", "--out", `${dir}/run`, "--", "hang"],
    stdout: "null",
    stderr: "null",
  }).spawn();
  let trials: number[] = [];
  try {
    for (let i = 0; i < 100 && trials.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 100));
      trials = processTree(tuner.pid).slice(1); // the describe subprocess, then the hanging trial
      if (trials.length === 0) continue;
      // A process listed a moment ago may have exited since (the describe subprocess does, quickly).
      const cmdline = await Deno.readTextFile(`/proc/${trials[0]}/cmdline`).catch(() => "");
      if (!cmdline.includes("trial_main")) trials = [];
    }
    await new Promise((r) => setTimeout(r, 1500)); // past describe: the trial itself
    trials = processTree(tuner.pid).slice(1);
    assert(trials.length > 0, "no trial started");
    tuner.kill("SIGKILL");
    await tuner.status;
    await new Promise((r) => setTimeout(r, 2500));
    for (const pid of trials) assert(!running(pid), `trial ${pid} still running`);
  } finally {
    for (const pid of [...processTree(tuner.pid), ...trials]) {
      try {
        Deno.kill(pid, "SIGKILL");
      } catch {
        // gone
      }
    }
    await tuner.status.catch(() => {});
    await Deno.remove(dir, { recursive: true });
  }
});

/** Alive and not a zombie (an exited orphan waits for init to reap it). */
function running(pid: number): boolean {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}
