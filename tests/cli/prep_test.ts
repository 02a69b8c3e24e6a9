/**
 * The dataset preparation commands end to end, as a user runs them: `transcode` split in two shards and
 * `manifest merge`, `pack`, `verify` (intact, then damaged), `bench-io --cold --json`, and their usage errors.
 */
import assert from "node:assert/strict";
import { sluice } from "./helpers.ts";
import { withTempDir } from "../helpers/temp_dir.ts";
import { generateClip, hasFfmpegCliSync } from "../helpers/media.ts";
import { canDropPageCache } from "../../src/prep/page_cache.ts";
import { openShards } from "../../src/dataset/shards/reader.ts";

const noCli = !hasFfmpegCliSync();
if (noCli) console.log("cli/prep_test: ffmpeg CLI not found (test clips are made with it): tests skipped");

/** `n` one-second clips under `dir/src/<class>/`. */
async function source(dir: string, n: number): Promise<string> {
  for (let i = 0; i < n; i++) {
    const cls = i % 2 ? "run" : "walk";
    await Deno.mkdir(`${dir}/src/${cls}`, { recursive: true });
    const clip = await generateClip({
      width: 160,
      height: 120,
      fps: 25,
      durationSec: 1,
      gop: 25,
      bframes: i % 2,
    });
    await Deno.copyFile(clip, `${dir}/src/${cls}/v${i}.mp4`);
  }
  return `${dir}/src`;
}

Deno.test({
  name: "cli: transcode --shard 0/2 and 1/2, manifest merge, pack, verify, bench-io",
  ignore: noCli,
  fn: () =>
    withTempDir("sluice-cli-prep-", async (dir) => {
      const src = await source(dir, 4);
      const out = `${dir}/out`;
      const opts = ["--height", "64", "--fps", "10", "--gop", "5", "--jobs", "1"];
      for (const shard of ["0/2", "1/2"]) {
        const r = await sluice(["transcode", src, out, ...opts, "--shard", shard]);
        assert.equal(r.code, 0, r.stderr);
        assert.match(r.stdout, new RegExp(`shard ${shard}, from --shard`));
        assert.match(r.stdout, /items\s+2 \(2 done, 0 already done, 0 failed\)/);
        // Not a terminal: progress comes as JSON lines on stderr, the last one complete.
        const events = r.stderr.trim().split("\n").map((l) => JSON.parse(l));
        const last = events.at(-1);
        assert.equal(last.event, "progress");
        assert.equal(last.finished, 2);
        assert.equal(last.etaSec, 0);
      }
      // The scheduler's environment picks the shard when --shard is absent: all done already.
      const again = await new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "-A",
          new URL("../../src/cli/main.ts", import.meta.url).pathname,
          "transcode",
          src,
          out,
          ...opts,
        ],
        env: { SLURM_ARRAY_TASK_ID: "1", SLURM_ARRAY_TASK_COUNT: "2" },
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.match(new TextDecoder().decode(again.stdout), /shard 1\/2, from slurm[\s\S]*2 already done/);

      const merged = await sluice(["manifest", "merge", out]);
      assert.equal(merged.code, 0, merged.stderr);
      assert.match(merged.stdout, /merged 2 manifest\(s\), 4 rows/);
      const rows = (await Deno.readTextFile(`${out}/manifest.jsonl`)).trim().split("\n").map((l) =>
        JSON.parse(l)
      );
      assert.deepEqual(rows.map((r) => [r.path, r.label]), [
        ["run/v1.mp4", "run"],
        ["run/v3.mp4", "run"],
        ["walk/v0.mp4", "walk"],
        ["walk/v2.mp4", "walk"],
      ]);

      const packed = await sluice([
        "pack",
        `${out}/manifest.jsonl`,
        `${dir}/shards`,
        "--shard-size",
        "20KiB",
      ]);
      assert.equal(packed.code, 0, packed.stderr);
      assert.match(packed.stdout, /packed into \d+ shard\(s\)/);
      const ok = await sluice(["verify", `${dir}/shards`]);
      assert.equal(ok.code, 0, ok.stderr);
      assert.equal(
        ok.stdout.trim().split("\n").filter((l) => / ok /.test(l)).length,
        ok.stdout.trim().split("\n").length - 1,
      );

      const tar = `${dir}/shards/shard-000000.tar`;
      const video = (await openShards(tar)).shards[0].index.samples[0].video;
      const bytes = await Deno.readFile(tar);
      bytes[video.offset + 100] ^= 0xff;
      await Deno.writeFile(tar, bytes);
      const bad = await sluice(["verify", tar]);
      assert.equal(bad.code, 1);
      assert.ok(
        bad.stderr.includes(`sluice verify: ${tar}: member ${video.name}: checksum mismatch`),
        bad.stderr,
      );

      if (canDropPageCache()) {
        const io = await sluice(["bench-io", `${out}/manifest.jsonl`, "--cold", "--json"]);
        assert.equal(io.code, 0, io.stderr);
        const passes = JSON.parse(io.stdout);
        assert.deepEqual(passes.map((p: { cache: string; clips: number }) => [p.cache, p.clips]), [[
          "cold",
          4,
        ], ["warm", 4]]);
      }
    }),
});

Deno.test("cli: bad --shard and --shard-size are usage errors (exit 2) naming the option", async () => {
  const t = await sluice(["transcode", "/nonexistent", "/tmp/x", "--shard", "3/2"]);
  assert.equal(t.code, 2);
  assert.match(t.stderr, /shard index 3 is not below the count 2/);
  const p = await sluice(["pack", "/nonexistent.jsonl", "/tmp/x", "--shard-size", "huge"]);
  assert.equal(p.code, 2);
  assert.match(p.stderr, /--shard-size/);
});

Deno.test("cli: transcode to a codec with no encoder for it names the encoder choice", async () => {
  const r = await sluice(["transcode", "/nonexistent", "/tmp/x", "--codec", "av1", "--encoder", "libx264"]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /encoder "libx264" does not write av1/);
});
