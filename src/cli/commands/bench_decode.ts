/**
 * `sluice bench-decode FILE...`: CPU decode + resize speed per file (demux once, decode `--repeat` times).
 * Every file gets a row: a file that cannot be opened, or decodes to no frame, is a failure with its reason
 * below the table, and any failure makes the exit status 1.
 * @module
 */

import { decodeVideo } from "../../media/decode.ts";
import { demuxVideo } from "../../media/demux.ts";
import { errorText } from "../../errors.ts";
import { defineCommand } from "../args.ts";
import { alignTable } from "../table.ts";
import { print } from "../tty.ts";

/** One file's result. */
export interface BenchDecodeRow {
  file: string;
  /** Frames decoded over all repeats (0 on failure). */
  frames: number;
  /** Packets the decoder rejected, per pass; null when the file could not be demuxed. */
  failedPackets: number | null;
  seconds: number;
  framesPerSec: number;
  /** Why the file failed, or null. */
  error: string | null;
}

/** Demuxes `file`, decodes it once to warm up, then `repeat` times timed. */
export async function benchDecodeFile(
  file: string,
  opts: { width: number; height: number; repeat: number },
): Promise<BenchDecodeRow> {
  const size = { width: opts.width, height: opts.height };
  const failed = (error: string, failedPackets: number | null = null) => ({
    file,
    frames: 0,
    failedPackets,
    seconds: 0,
    framesPerSec: 0,
    error,
  });
  try {
    const packets = await demuxVideo(file);
    const warm = await decodeVideo(packets, size); // decoder and scaler set-up
    if (warm.pts.length === 0) {
      return failed(
        `decoded no frame from ${packets.numPackets} packets (${warm.failedPackets} rejected by the decoder)`,
        warm.failedPackets,
      );
    }
    const t0 = performance.now();
    let frames = 0;
    for (let i = 0; i < opts.repeat; i++) frames += (await decodeVideo(packets, size)).pts.length;
    const seconds = (performance.now() - t0) / 1000;
    return {
      file,
      frames,
      failedPackets: warm.failedPackets,
      seconds,
      framesPerSec: frames / seconds,
      error: null,
    };
  } catch (e) {
    return failed(errorText(e, file));
  }
}

/** The `bench-decode` command. */
export const benchDecodeCommand = defineCommand({
  name: "bench-decode",
  summary: "measure CPU decode + resize speed (frames/s) per file",
  description: "Each file is demuxed once, decoded once to warm up, then decoded --repeat times to RGB at " +
    "--width x --height. A file that cannot be opened or decodes to no frame is reported as failed (exit 1); " +
    "the others are still measured.",
  positionals: [{ name: "FILE", help: "video files", variadic: true }],
  options: {
    width: { type: "integer", default: 112, min: 1, max: 16384, help: "output width" },
    height: { type: "integer", default: 112, min: 1, max: 16384, help: "output height" },
    repeat: { type: "integer", default: 3, min: 1, max: 1000, help: "timed decodes per file" },
    json: { type: "boolean", help: "print a JSON array of rows instead of the table" },
  },
  examples: ["bench-decode .cache/demo/videos/class_00/*.mp4 --repeat 5"],
  async run({ values, positionals }) {
    const rows: BenchDecodeRow[] = [];
    for (const file of positionals) rows.push(await benchDecodeFile(file, values));
    if (values.json) print(Deno.stdout, JSON.stringify(rows, null, 2));
    else print(Deno.stdout, formatBenchTable(rows));
    return rows.some((r) => r.error !== null) ? 1 : 0;
  },
});

function formatBenchTable(rows: readonly BenchDecodeRow[]): string {
  const table = [["file", "frames", "bad packets", "seconds", "frames/s", "status"]];
  for (const r of rows) {
    table.push([
      r.file,
      r.error === null ? String(r.frames) : "-",
      String(r.failedPackets ?? "-"),
      r.error === null ? r.seconds.toFixed(3) : "-",
      r.error === null ? r.framesPerSec.toFixed(0) : "-",
      r.error === null ? "ok" : "failed",
    ]);
  }
  const failures = rows.filter((r) => r.error !== null).map((r) => `${r.file}: ${r.error}`);
  return [alignTable(table, [1, 2, 3, 4]), ...(failures.length > 0 ? ["", ...failures] : [])].join("\n");
}
