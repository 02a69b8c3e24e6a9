import assert from "node:assert/strict";
import { makeSyntheticDataset } from "../../src/data/synthetic.ts";

const MAIN = new URL("../../src/cli/main.ts", import.meta.url).pathname;

async function sluice(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", MAIN, ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

async function tinyDataset(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "sluice-cli-" });
  makeSyntheticDataset(dir, { videos: 4, classes: 2, durationSec: 1, width: 96, height: 64 });
  return dir;
}

Deno.test("sluice load --json reports throughput, stages, bottleneck, failures and RSS", async () => {
  const dir = await tinyDataset();
  try {
    const r = await sluice([
      "load",
      dir,
      "--json",
      "--batches",
      "3",
      "--batch-size",
      "2",
      "--frames",
      "4",
      "--width",
      "32",
      "--height",
      "32",
      "--backend",
      "subprocess",
      "--decode-concurrency",
      "1",
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
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("sluice probe --json agrees with ffprobe; usage errors exit 2", async () => {
  const dir = await tinyDataset();
  try {
    const file = `${dir}/class_00/video_0000.mp4`;
    const r = await sluice(["probe", "--json", file]);
    assert.equal(r.code, 0, r.stderr);
    const [info] = JSON.parse(r.stdout);
    const ff = await new Deno.Command("ffprobe", {
      args: [
        "-v",
        "error",
        "-select_streams",
        "v:0",
        "-show_entries",
        "stream=codec_name,width,height",
        "-of",
        "json",
        file,
      ],
      stdout: "piped",
    }).output();
    const st = JSON.parse(new TextDecoder().decode(ff.stdout)).streams[0];
    assert.equal(info.video.codec, st.codec_name);
    assert.equal(info.video.width, st.width);
    assert.equal(info.video.height, st.height);
    const table = await sluice(["probe", file, `${dir}/nothere.mp4`]);
    assert.equal(table.code, 1);
    assert.match(table.stdout, /video_0000\.mp4\s+mov/);
    assert.match(table.stdout, /nothere\.mp4\s+error/);
    const bad = await sluice(["load", dir, "--backend", "carrier-pigeon"]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--backend must be one of inprocess, subprocess/);
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
