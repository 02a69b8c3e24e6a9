import assert from "node:assert/strict";
import { transcodeDataset } from "../../src/prep/transcode_dataset.ts";
import { mergeManifests } from "../../src/prep/merge.ts";
import { readJsonl } from "../../src/prep/manifest.ts";
import { openDataset } from "../../src/dataset/dataset.ts";
import { DatasetError } from "../../src/errors.ts";
import { ffprobeInfo, generateClip, hasFfmpegCliSync, parseRational } from "../helpers/media.ts";
import { withTempDir } from "../helpers/temp_dir.ts";

const noCli = !hasFfmpegCliSync();
if (noCli) console.log("transcode_dataset_test: ffmpeg/ffprobe CLI not found: tests skipped");

const OPTS = { height: 64, fps: 10, codec: "h264", gop: 10 } as const;

/** A manifest dataset of `n` one-second clips (CSV with a header and extra columns), plus a corrupt file. */
async function makeDataset(dir: string, n: number): Promise<string> {
  await Deno.mkdir(`${dir}/src/sub`, { recursive: true });
  const lines = ["path,label,split,caption"];
  for (let i = 0; i < n; i++) {
    const clip = await generateClip({
      width: 160 + 16 * (i % 3),
      height: 120,
      fps: 25,
      durationSec: 1,
      gop: 25,
    });
    await Deno.copyFile(clip, `${dir}/src/sub/v${i}.mkv`.replace(".mkv", i % 2 ? ".mp4" : ".mkv"));
    lines.push(
      `sub/v${i}${i % 2 ? ".mp4" : ".mkv"},${i % 3 === 0 ? "run" : "walk"},${
        i % 2 ? "train" : "val"
      },"clip ${i}, ok"`,
    );
  }
  await Deno.writeTextFile(`${dir}/src/sub/broken.mp4`, "this is not a video");
  lines.push(`sub/broken.mp4,run,train,"broken"`);
  await Deno.writeTextFile(`${dir}/src/manifest.csv`, lines.join("\n") + "\n");
  return `${dir}/src/manifest.csv`;
}

const withDir = <T>(fn: (dir: string) => Promise<T>) => withTempDir("sluice-tds-", fn);

async function listFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string, rel: string) => {
    for await (const e of Deno.readDir(d)) {
      if (e.isDirectory) await walk(`${d}/${e.name}`, `${rel}${e.name}/`);
      else out.push(`${rel}${e.name}`);
    }
  };
  await walk(dir, "");
  return out.sort();
}

Deno.test({
  name: "transcodeDataset keeps labels, paths and extra columns, lists a corrupt input and goes on",
  ignore: noCli,
  fn: () =>
    withDir(async (dir) => {
      const manifest = await makeDataset(dir, 3);
      const s = await transcodeDataset({ ...OPTS, input: manifest, outDir: `${dir}/out`, jobs: 2 });
      assert.equal(s.progress.done, 3);
      assert.equal(s.failures.length, 1);
      assert.ok(s.failures[0].path.endsWith("sub/broken.mp4"));
      assert.match(s.failures[0].error, /avformat_open_input/);
      const rows = await readJsonl(s.manifest);
      assert.deepEqual(rows.map((r) => [r.path, r.label, r.split, r.caption, r.source_index]), [
        ["sub/v0.mp4", "run", "val", "clip 0, ok", 0],
        ["sub/v1.mp4", "walk", "train", "clip 1, ok", 1],
        ["sub/v2.mp4", "walk", "val", "clip 2, ok", 2],
      ]);
      for (const r of rows) {
        const v = (await ffprobeInfo(`${dir}/out/${r.path}`)).streams[0];
        assert.equal(v.height, 64);
        assert.equal(r.width, v.width);
        assert.equal(parseRational(v.avg_frame_rate), 10);
        assert.equal(r.frames, 10);
        assert.deepEqual(r.keyframes, [0]);
      }
      assert.deepEqual(await readJsonl(`${dir}/out/failures.jsonl`), s.failures);
      // The loader opens the prepared manifest as it is.
      const prepared = await openDataset(s.manifest);
      assert.deepEqual(prepared.classes, ["run", "walk"]);
      assert.deepEqual(prepared.items.map((i) => [i.path, i.label]), [
        [`${dir}/out/sub/v0.mp4`, 0],
        [`${dir}/out/sub/v1.mp4`, 1],
        [`${dir}/out/sub/v2.mp4`, 1],
      ]);
      // Nothing else in the output: no temporary files.
      assert.deepEqual(await listFiles(`${dir}/out`), [
        "failures.jsonl",
        "manifest.jsonl",
        "sub/v0.mp4",
        "sub/v1.mp4",
        "sub/v2.mp4",
      ]);
    }),
});

Deno.test({
  name: "shards 0/2 and 1/2 cover every input once; merged, they equal an unsharded run",
  ignore: noCli,
  fn: () =>
    withDir(async (dir) => {
      const manifest = await makeDataset(dir, 5);
      const out = `${dir}/out`;
      const a = await transcodeDataset({
        ...OPTS,
        input: manifest,
        outDir: out,
        shard: { index: 0, count: 2, from: "test" },
      });
      const b = await transcodeDataset({
        ...OPTS,
        input: manifest,
        outDir: out,
        shard: { index: 1, count: 2, from: "test" },
      });
      assert.equal(a.manifest, `${out}/manifest.shard-0-of-2.jsonl`);
      const rowsA = await readJsonl(a.manifest), rowsB = await readJsonl(b.manifest);
      assert.deepEqual(rowsA.map((r) => r.source_index), [0, 2, 4]);
      assert.deepEqual(rowsB.map((r) => r.source_index), [1, 3]); // 5 (broken) failed in shard 1
      assert.equal(b.failures.length, 1);
      const merged = await mergeManifests([a.manifest, b.manifest], `${out}/manifest.jsonl`);
      assert.equal(merged.rows, 5);
      const whole = await transcodeDataset({ ...OPTS, input: manifest, outDir: `${dir}/whole` });
      const strip = (rows: Record<string, unknown>[]) => rows.map(({ source: _s, ...r }) => r);
      assert.deepEqual(
        strip(await readJsonl(`${out}/manifest.jsonl`)),
        strip(await readJsonl(whole.manifest)),
      );
      // A missing shard, or shards of different counts, are refused.
      await assert.rejects(mergeManifests([a.manifest], `${out}/m.jsonl`), DatasetError);
      await Deno.copyFile(b.manifest, `${out}/manifest.shard-1-of-3.jsonl`);
      await assert.rejects(
        mergeManifests([a.manifest, `${out}/manifest.shard-1-of-3.jsonl`], `${out}/m.jsonl`),
        /shard of 3/,
      );
    }),
});

Deno.test({
  name: "a killed run leaves no half-written output; the re-run redoes nothing finished and the rest once",
  ignore: noCli,
  fn: () =>
    withDir(async (dir) => {
      const manifest = await makeDataset(dir, 8);
      const out = `${dir}/out`;
      const script = new URL("./fixtures/run_transcode.ts", import.meta.url).pathname;
      const child = new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", script, manifest, out],
        stdout: "piped",
        stderr: "null",
      }).spawn();
      // Kill it once two videos are done (the third is then being written).
      const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
      let text = "";
      while ((text.match(/^done /gm) ?? []).length < 2) {
        const { value, done } = await reader.read();
        if (done) break;
        text += value;
      }
      child.kill("SIGKILL");
      await child.status;
      await reader.cancel();
      const finished = (await listFiles(out)).filter((f) => f.endsWith(".mp4") && !f.includes("/."));
      assert.ok(finished.length >= 2 && finished.length < 8, `finished before the kill: ${finished}`);
      // Every file under an output's name is complete: ffprobe reads all its frames.
      const mtimes = new Map<string, number>();
      for (const f of finished) {
        const v = (await ffprobeInfo(`${out}/${f}`, { countFrames: true })).streams[0];
        assert.equal(v.nb_read_frames, "10", `${f} is incomplete`);
        mtimes.set(f, (await Deno.stat(`${out}/${f}`)).mtime!.getTime());
      }
      const again = await transcodeDataset({ ...OPTS, input: manifest, outDir: out, jobs: 1 });
      assert.equal(again.progress.skipped, finished.length);
      assert.equal(again.progress.done, 8 - finished.length);
      for (const [f, t] of mtimes) {
        assert.equal((await Deno.stat(`${out}/${f}`)).mtime!.getTime(), t, `${f} rewritten`);
      }
      const files = await listFiles(out);
      assert.deepEqual(
        files.filter((f) => f.includes(".partial")),
        [],
      );
      assert.equal(files.filter((f) => f.endsWith(".mp4")).length, 8);
    }),
});

Deno.test({
  name: "an existing output that does not match the request is redone",
  ignore: noCli,
  fn: () =>
    withDir(async (dir) => {
      const manifest = await makeDataset(dir, 1);
      const out = `${dir}/out`;
      await transcodeDataset({ ...OPTS, input: manifest, outDir: out });
      const again = await transcodeDataset({ ...OPTS, height: 48, input: manifest, outDir: out });
      assert.equal(again.progress.done, 1);
      assert.match(again.redone[0].reason, /height is 64, not 48/);
      assert.equal((await ffprobeInfo(`${out}/sub/v0.mp4`)).streams[0].height, 48);
    }),
});
