/**
 * `sluice load`: the --json report, failure lines, Ctrl-C (SIGINT) with the summary so far, and drawing under a
 * pseudo-terminal. The live view in tmux is live_tmux_test.ts.
 */
import assert from "node:assert/strict";
import { assertFailureLine, MAIN, sluice, tinyDataset } from "./helpers.ts";
import { formatSummary } from "../../src/cli/load.ts";
import { ctrlCHandler, SAME_CTRL_C_MS } from "../../src/cli/commands/load.ts";

/** Small clips, so that runs are quick. */
const SMALL = "--batch-size 2 --frames 4 --width 32 --height 32";

function words(s: string): string[] {
  return s.split(" ");
}

Deno.test("sluice load --json reports throughput, stages, bottleneck, failures, RSS, the request and clip counts", async () => {
  const dir = await tinyDataset();
  try {
    const r = await sluice([
      "load",
      dir,
      ...words("--json --batches 3 --batch-size 2 --frames 4 --width 32 --height 24 --layout BCTHW --seed 7"),
      ...words("--frame-rate 10 --backend subprocess --decode-concurrency 1"),
    ]);
    assert.equal(r.code, 0, r.stderr);
    const s = JSON.parse(r.stdout);
    assert.equal(s.batches, 3);
    assert.equal(s.samples, 6);
    assert.equal(s.frames, 24);
    assert.equal(s.backend, "subprocess");
    assert.equal(s.decoder, "cpu");
    assert.ok(s.samplesPerSec > 0 && s.framesPerSec > 0);
    assert.ok(Math.abs(s.framesPerSec - s.frames / s.elapsedSec) < 1e-6);
    assert.deepEqual(s.failures, {});
    assert.ok(s.peakRssBytes > 10 * 2 ** 20 && s.childPeakRssBytes > 10 * 2 ** 20);
    assert.deepEqual(s.pipeline.stages.map((x: { name: string }) => x.name), [
      "backend",
      "decode",
      "replace",
      "aggregate",
      "collate",
      "(consumer)",
    ]);
    assert.deepEqual(s.child.stages.map((x: { name: string }) => x.name).slice(0, 5), [
      "sample",
      "fetch",
      "demux",
      "shuffle",
      "disaggregate",
    ]);
    assert.ok("bottleneck" in s);
    // What was asked for, and the clip counts: 4 videos x 1 clip = 4 clips an epoch (2 batches of 2), so the
    // third batch starts a second epoch: 8 clips planned, 6 delivered, 2 not reached.
    assert.deepEqual(
      [s.width, s.height, s.layout, s.seed, s.frameRate, s.interrupted],
      [32, 24, "BCTHW", 7, 10, false],
    );
    const { planned, delivered, failed, replaced, dropped, pending, failures } = s.clips;
    assert.deepEqual(
      { planned, delivered, failed, replaced, dropped, pending, failures },
      { planned: 8, delivered: 6, failed: 0, replaced: 0, dropped: 0, pending: 2, failures: [] },
    );
    assert.ok(s.clips.paddedFrames >= 0 && s.clips.paddedClips >= 0);
    // The decode work behind the 6 clips of batches: frames emitted (padding excluded), decoded, skipped.
    const c = s.clips;
    assert.equal(c.emittedFrames, 24 - c.paddedFrames);
    assert.ok(c.decodedFrames >= c.emittedFrames && c.skippedFrames >= 0 && c.sharedClips >= 0);
    assert.equal(c.decodeAmplification, c.decodedFrames / c.emittedFrames);
    assert.match(
      formatSummary(s),
      new RegExp(
        `\ndecode: ${c.decodedFrames} frames decoded, ${c.skippedFrames} skipped, ${c.emittedFrames} ` +
          `emitted \\(amplification ${
            c.decodeAmplification.toFixed(2)
          }\\); ${c.sharedClips} clips from shared passes\n`,
      ),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

const hasScript = (() => {
  try {
    return new Deno.Command("script", { args: ["--version"], stdout: "null", stderr: "null" }).outputSync()
      .success;
  } catch {
    return false;
  }
})();

Deno.test({
  name: "sluice make-dataset and load under a pseudo-TTY draw a progress bar and a live table in place",
  ignore: !hasScript,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "sluice-cli-" });
    try {
      const cmd =
        `'${Deno.execPath()}' run --allow-all '${MAIN}' make-dataset '${dir}/ds' --videos 3 --classes 2 ` +
        `--duration 1 --width 64 --height 48 && '${Deno.execPath()}' run --allow-all '${MAIN}' load '${dir}/ds' ` +
        `--epochs 40 --batch-size 2 --frames 4 --width 32 --height 32 --decode-concurrency 1 --refresh 20`;
      const out = await new Deno.Command("script", {
        args: ["-qec", cmd, "/dev/null"],
        stdout: "piped",
        stderr: "piped",
        env: { NO_COLOR: "1" },
      }).output();
      const text = new TextDecoder().decode(out.stdout);
      assert.equal(out.code, 0, text);
      // deno-lint-ignore no-control-regex -- the ANSI escapes are what this test checks
      assert.match(text, /\r\x1b\[2Kencoding \(\w+\) \[#+\.*\] \d\/3/, "progress bar redrawn in place");
      assert.match(text, /3\/3 \(100%\) in [\d.]+ s/);
      // deno-lint-ignore no-control-regex -- as above
      assert.match(text, /\x1b\[\d+F/, "live table moves the cursor up to redraw");
      assert.match(text, /samples\/s [\d.]+ +frames\/s \d+/);
      assert.match(text, /bottleneck: /);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

for (const backend of ["inprocess", "subprocess"]) {
  Deno.test(`sluice load (${backend}): each failure line names the file once, no Worker URL, times to ms`, async () => {
    const dir = await tinyDataset({ broken: true });
    try {
      const r = await sluice(["load", dir, ...words(`--json --epochs 3 ${SMALL} --backend ${backend}`)]);
      assert.equal(r.code, 0, r.stderr);
      const failures = r.stderr.split("\n").filter((l) => / failed on |skipping /.test(l));
      assert.ok(failures.some((l) => l.includes("garbage.mp4")), r.stderr);
      assert.ok(failures.some((l) => l.includes("corrupt.mp4")), r.stderr);
      failures.forEach(assertFailureLine);
      assert.deepEqual(JSON.parse(r.stdout).failures.index, 1);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });

  for (const twice of [false, true]) {
    const how = twice ? "SIGINT twice, 10 ms apart (as under deno task)," : "SIGINT";
    Deno.test(`sluice load (${backend}): ${how} prints the summary so far and exits 130`, async () => {
      const dir = await tinyDataset({ broken: true });
      try {
        const child = new Deno.Command(Deno.execPath(), {
          args: [
            "run",
            "--allow-all",
            MAIN,
            "load",
            dir,
            ...words(`--json --epochs 1000000 ${SMALL} --backend ${backend}`),
          ],
          stdout: "piped",
          stderr: "piped",
        }).spawn();
        const stdout = new Response(child.stdout).text();
        // The first failure line means the run is under way (and its SIGINT handler installed).
        let stderr = "";
        const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
        while (!stderr.includes(" failed on ")) {
          const { value, done } = await reader.read();
          if (done) break;
          stderr += value;
        }
        child.kill("SIGINT");
        // Under `deno task` the child gets a Ctrl-C twice, 1-10 ms apart: the terminal's (it is in the foreground
        // process group) and the one `deno task` forwards. It is one Ctrl-C: it used to exit at once, silent,
        // unless the two were merged into one event (see the ctrlCHandler test).
        if (twice) {
          await new Promise((r) => setTimeout(r, 10));
          try {
            child.kill("SIGINT");
          } catch { /* it had finished already */ }
        }
        for (let r = await reader.read(); !r.done; r = await reader.read()) stderr += r.value;
        const status = await child.status;
        assert.equal(status.code, 130, stderr);
        const s = JSON.parse(await stdout);
        assert.equal(s.interrupted, true);
        // Clips in batches are delivered ones and substitutes; a batch handed out as Ctrl-C came is not counted in
        // samples (runLoad drops it), so the loader may count one batch more.
        const inBatches = s.clips.delivered + s.clips.replaced;
        assert.ok(inBatches >= s.samples && inBatches <= s.samples + 2, JSON.stringify(s.clips));
        assert.ok(s.epochs < 1000000 && s.pipeline.stages.length > 0);
        assert.doesNotMatch(stderr, /\n\s+at |Uncaught/, "no stack trace");
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    });
  }
}

Deno.test("sluice load: SIGINTs within a second of the first are one Ctrl-C (deno task forwards the terminal's); later, one leaves", () => {
  let t = 0;
  const calls: string[] = [];
  const onSigint = ctrlCHandler(() => calls.push("stop"), () => calls.push("leave"), () => t);
  onSigint();
  for (t of [1, 8, SAME_CTRL_C_MS - 1]) onSigint();
  assert.deepEqual(calls, ["stop"], "the summary is printed");
  t = SAME_CTRL_C_MS + 5;
  onSigint();
  assert.deepEqual(calls, ["stop", "leave"]);
});

for (const backend of ["inprocess", "subprocess"]) {
  Deno.test(`sluice load --on-clip-error fail (${backend}): the error that ends the run is printed once`, async () => {
    // Issue 30 item 7: the loader's failure line, the pipeline's ("stage replace failed on ...") and the
    // command's own error line said it three times.
    const dir = await tinyDataset({ broken: true });
    try {
      const r = await sluice([
        "load",
        dir,
        ...words(`--json --epochs 1 ${SMALL} --on-clip-error fail --backend ${backend}`),
      ]);
      assert.equal(r.code, 1, r.stderr);
      const lines = r.stderr.split("\n").filter((l) => /corrupt\.mp4|garbage\.mp4/.test(l));
      const fatal = lines.filter((l) => l.startsWith("sluice load: "));
      assert.equal(fatal.length, 1, r.stderr);
      const failed = /(corrupt|garbage)\.mp4/.exec(fatal[0])![0];
      const about = lines.filter((l) => l.includes(failed) && !l.includes("skipping"));
      assert.deepEqual(about, fatal, `the failure is said once:\n${r.stderr}`);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}

Deno.test("sluice load --max-failures: an exceeded failure budget is named by its flag, not the library's name", async () => {
  const dir = await tinyDataset({ broken: true });
  try {
    // corrupt.mp4's clip fails: one failure is over a budget of none.
    const r = await sluice(["load", dir, ...words(`--json --epochs 1 ${SMALL} --max-failures 0`)]);
    assert.equal(r.code, 1, r.stderr);
    assert.match(
      r.stderr,
      /\nsluice load: loader: 1 of \d+ clips failed in epoch 0, above --max-failures \(0\); first: /,
    );
    assert.doesNotMatch(r.stderr, /maxFailures/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("sluice load --stats-jsonl (or SLUICE_STATS_JSONL) appends the loader pipeline's stats, one line per report", async () => {
  const dir = await tinyDataset();
  try {
    for (const how of ["flag", "env"] as const) {
      const file = `${dir}/stats-${how}.jsonl`;
      const args = ["load", dir, "--json", "--epochs", "2", ...words(SMALL)];
      const r = how === "flag"
        ? await sluice([...args, "--stats-jsonl", file])
        : await sluice(args, { SLUICE_STATS_JSONL: file });
      assert.equal(r.code, 0, r.stderr);
      const summary = JSON.parse(r.stdout);
      const lines = (await Deno.readTextFile(file)).trim().split("\n").map((l) => JSON.parse(l));
      // A 2-epoch run of a few seconds: at least the report that ends each epoch (a 10 s report may come too).
      assert.ok(lines.length >= 2, `${how}: ${lines.length} lines`);
      for (const l of lines) assert.equal(typeof l.t, "number");
      const names = lines[0].stages.map((x: { name: string }) => x.name);
      assert.deepEqual(names, summary.pipeline.stages.map((x: { name: string }) => x.name), how);
      const finals = lines.filter((l) => !l.running);
      assert.deepEqual(finals.map((l) => l.epochs), [1, 2], `${how}: one final line per epoch`);
      const last = lines.at(-1);
      assert.equal(last.running, false);
      // The last line is the stats the summary ends with: the batches handed to the consumer.
      assert.equal(last.consumed, summary.batches, how);
      assert.equal(last.stages.at(-1).done, summary.batches, how);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
