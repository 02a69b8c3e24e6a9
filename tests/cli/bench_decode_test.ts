/**
 * `sluice bench-decode`: every file gets a row; a file that cannot be opened and one that decodes to no frame
 * are failures (exit 1) that leave the other rows intact. Frame counts against ffprobe's.
 */
import assert from "node:assert/strict";
import { hasFfmpegCliSync } from "../helpers/media.ts";
import { sluice, tinyDataset } from "./helpers.ts";

const ffmpegCli = hasFfmpegCliSync();
if (!ffmpegCli) {
  console.error("bench_decode_test: the ffprobe CLI is missing (scripts/setup.sh --dev): skipped");
}

async function ffprobeFrames(file: string): Promise<number> {
  const out = await new Deno.Command("ffprobe", {
    args: ["-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries", "stream=nb_read_frames"]
      .concat(["-of", "csv=p=0", file]),
    stdout: "piped",
  }).output();
  return Number(new TextDecoder().decode(out.stdout).trim());
}

Deno.test({
  name:
    "sluice bench-decode: unopenable and undecodable files get failed rows, the rest are measured, exit 1",
  ignore: !ffmpegCli,
  fn: async () => {
    const dir = await tinyDataset({ videos: 2, broken: true });
    try {
      const good = [`${dir}/class_00/video_0000.mp4`, `${dir}/class_01/video_0001.mp4`];
      const garbage = `${dir}/class_00/garbage.mp4`, corrupt = `${dir}/class_00/corrupt.mp4`;
      const missing = `${dir}/missing.mp4`;
      const files = [good[0], garbage, corrupt, missing, good[1]];
      const r = await sluice([
        "bench-decode",
        "--json",
        "--repeat",
        "2",
        "--width",
        "32",
        "--height",
        "32",
        ...files,
      ]);
      assert.equal(r.code, 1, r.stderr);
      const rows = JSON.parse(r.stdout);
      assert.deepEqual(rows.map((x: { file: string }) => x.file), files);
      for (const i of [0, 4]) {
        assert.equal(rows[i].error, null);
        assert.equal(rows[i].frames, 2 * await ffprobeFrames(files[i]));
        assert.ok(rows[i].framesPerSec > 0);
      }
      assert.match(rows[1].error, /^MediaError: avformat_open_input failed: Invalid data/);
      assert.match(rows[2].error, /^decoded no frame from \d+ packets \(\d+ rejected by the decoder\)$/);
      assert.match(rows[3].error, /^MediaError: avformat_open_input failed: No such file or directory$/);
      for (const i of [1, 2, 3]) assert.equal(rows[i].frames, 0);

      const table = await sluice(["bench-decode", "--repeat", "1", ...files]);
      assert.equal(table.code, 1);
      const lines = table.stdout.split("\n");
      assert.match(lines[0], /^file +frames +bad packets +seconds +frames\/s +status$/);
      for (const f of files) {
        assert.equal(lines.filter((l) => l.startsWith(f + " ")).length, 1, `${f} has one row`);
      }
      assert.match(lines.find((l) => l.startsWith(corrupt + " "))!, / failed$/);
      assert.match(lines.find((l) => l.startsWith(good[0] + " "))!, / ok$/);
      assert.ok(
        lines.includes(`${missing}: MediaError: avformat_open_input failed: No such file or directory`),
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
