/**
 * `sluice probe` against ffprobe: every video stream listed with its index and size, the one FFmpeg's
 * best-stream rule picks marked (the rule applied to ffprobe's dispositions and bit rates in the test), the
 * reason given, and an error row that leaves the table's width alone.
 */
import assert from "node:assert/strict";
import { hasFfmpegCliSync } from "../helpers/media.ts";
import { sluice, tinyDataset } from "./helpers.ts";

const ffmpegCli = hasFfmpegCliSync();
if (!ffmpegCli) {
  console.error("probe_test: the ffmpeg/ffprobe CLI is missing (scripts/setup.sh --dev): skipped");
}

async function run(cmd: string, args: string[]): Promise<string> {
  const out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  if (!out.success) throw new Error(`${cmd} ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  return new TextDecoder().decode(out.stdout);
}

interface FfprobeStream {
  index: number;
  codec_type: string;
  codec_name: string;
  width?: number;
  height?: number;
  bit_rate?: string;
  disposition: { default: number; attached_pic: number };
}

async function ffprobeStreams(file: string): Promise<FfprobeStream[]> {
  const json = await run("ffprobe", ["-v", "error", "-show_streams", "-of", "json", file]);
  return JSON.parse(json).streams;
}

/**
 * FFmpeg's av_find_best_stream for video, on what ffprobe reports: default disposition first, then bit rate,
 * then file order (frames seen while probing tie here: every stream is long enough to fill the probe).
 */
function expectedBest(streams: FfprobeStream[]): number {
  const video = streams.filter((s) => s.codec_type === "video" && !s.disposition.attached_pic);
  let best = video[0];
  for (const s of video.slice(1)) {
    const key = (x: FfprobeStream) => [x.disposition.default, Number(x.bit_rate ?? 0)];
    const [d, b] = key(s), [bd, bb] = key(best);
    if (d > bd || (d === bd && b > bb)) best = s;
  }
  return best.index;
}

/** Two video streams, 320×180 first (low bit rate), 480×270 later (high), plus `extra` ffmpeg arguments. */
async function twoStreams(dir: string, name: string, extra: string[]): Promise<string> {
  const file = `${dir}/${name}`;
  await run("ffmpeg", [
    ...["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=25:duration=2"],
    ...[
      "-f",
      "lavfi",
      "-i",
      "sine=duration=2",
      "-f",
      "lavfi",
      "-i",
      "testsrc=size=480x270:rate=25:duration=2",
    ],
    ...["-map", "0:v", "-map", "1:a", "-map", "2:v", "-c:v", "libx264", "-b:v:0", "80k", "-b:v:1", "600k"],
    ...extra,
    file,
  ]);
  return file;
}

Deno.test({
  name: "sluice probe lists every video stream with its index, marks the one FFmpeg's rule picks, says why",
  ignore: !ffmpegCli,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "sluice-probe-" });
    try {
      // Only the first video stream marked default: it wins despite its lower bit rate.
      const firstDefault = await twoStreams(dir, "first_default.mp4", []);
      // Both marked default: the bit rate decides.
      const bothDefault = await twoStreams(dir, "both_default.mp4", [
        ...["-disposition:v:0", "default", "-disposition:v:1", "default"],
      ]);
      const r = await sluice(["probe", "--json", firstDefault, bothDefault]);
      assert.equal(r.code, 0, r.stderr);
      const reports = JSON.parse(r.stdout);
      const reasons = [
        /the only video stream marked default/,
        /among the streams marked default, the highest bit rate/,
      ];
      for (const [i, file] of [firstDefault, bothDefault].entries()) {
        const ff = await ffprobeStreams(file);
        const ffVideo = ff.filter((s) => s.codec_type === "video");
        const report = reports[i];
        assert.deepEqual(
          report.videoStreams.map((
            v: { index: number; width: number; height: number },
          ) => [v.index, v.width, v.height]),
          ffVideo.map((s) => [s.index, s.width, s.height]),
        );
        assert.deepEqual(ffVideo.map((s) => [s.width, s.height]), [[320, 180], [480, 270]]);
        assert.equal(report.video.index, expectedBest(ff), file);
        assert.match(report.selection, reasons[i]);
      }
      assert.equal(reports[0].video.index, 0);
      assert.equal(reports[1].video.index, 2);

      const table = await sluice(["probe", firstDefault, bothDefault]);
      assert.equal(table.code, 0, table.stderr);
      const lines = table.stdout.split("\n");
      assert.match(lines[0], /^file +stream +format +codec +size +fps/);
      const rows = (file: string) => lines.filter((l) => l.startsWith(file + " ")).map((l) => l.split(/ +/));
      assert.deepEqual(rows(firstDefault).map((c) => [c[1], c[4]]), [["0*", "320x180"], ["2", "480x270"]]);
      assert.deepEqual(rows(bothDefault).map((c) => [c[1], c[4]]), [["0", "320x180"], ["2*", "480x270"]]);
      assert.ok(lines.includes(`${firstDefault}: stream 0 is used: the only video stream marked default`));
      assert.ok(
        lines.some((l) => l.startsWith(`${bothDefault}: stream 2 is used: among the streams marked default`)),
      );
      assert.match(
        table.stdout,
        /^\* the stream sluice decodes; FFmpeg's best stream \(av_find_best_stream\)/m,
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "sluice probe agrees with ffprobe on a one-stream file; an error row does not widen the table",
  ignore: !ffmpegCli,
  fn: async () => {
    const dir = await tinyDataset();
    try {
      const file = `${dir}/class_00/video_0000.mp4`;
      const [st] = await ffprobeStreams(file);
      const json = await sluice(["probe", "--json", file]);
      assert.equal(json.code, 0, json.stderr);
      const [info] = JSON.parse(json.stdout);
      assert.deepEqual([info.video.codec, info.video.width, info.video.height], [
        st.codec_name,
        st.width,
        st.height,
      ]);
      assert.equal(info.selection, "the only video stream");

      const alone = await sluice(["probe", file]);
      const missing = `${dir}/x.mp4`; // shorter than `file`: only an error message could widen the table
      const withError = await sluice(["probe", file, missing]);
      assert.equal(alone.code, 0);
      assert.equal(withError.code, 1);
      const tableOf = (out: string) => out.split("\n\n")[0].split("\n");
      const [head, ...rows] = tableOf(withError.stdout);
      assert.equal(head, tableOf(alone.stdout)[0], "the error row changed the columns");
      assert.ok(rows.every((l) => l.length <= head.length), withError.stdout);
      assert.match(rows[1], new RegExp(`^${missing} +- +error$`));
      // The error itself is below the table, naming the file once.
      const errors = withError.stdout.split("\n").filter((l) => l.startsWith(`${missing}: `));
      assert.equal(errors.length, 1);
      assert.match(
        errors[0],
        /^\S+x\.mp4: MediaError: avformat_open_input failed: No such file or directory$/,
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
