/**
 * `sluice`, the command-line tool (`deno task sluice …`, or `deno install --global -A -n sluice src/cli/main.ts`).
 * Arguments are parsed with `node:util`'s `parseArgs`; progress bars and the live stats table are plain ANSI
 * escapes, drawn only on a terminal.
 *
 * ```
 * sluice probe FILE…                 [--json]
 * sluice make-dataset DIR --videos N --classes K [--duration S] [--fps F] [--width W] [--height H]
 * sluice load DATASET [--batch-size B] [--frames T] [--width W] [--height H] [--frame-rate F] [--batches N |
 *                     --epochs E] [--clips-per-video K] [--clip-duration S] [--placement random|uniform]
 *                     [--keyframe-aligned] [--seed S] [--backend inprocess|subprocess] [--decode cpu|nvdec|auto]
 *                     [--fetch-concurrency N] [--demux-concurrency N] [--decode-concurrency N]
 *                     [--layout BTHWC|BCTHW] [--refresh MS] [--json]
 * sluice bench-decode FILE…          [--width W] [--height H] [--repeat N] [--json]
 * ```
 * @module
 */

import { parseArgs } from "node:util";
import { probe } from "../media/probe.ts";
import { decodeVideo } from "../media/decode.ts";
import { demuxVideo } from "../media/demux.ts";
import { defaultEncoder, makeSyntheticDataset } from "../data/synthetic.ts";
import { SluiceError } from "../errors.ts";
import { formatSummary, runLoad } from "./load.ts";
import { print, ProgressBar } from "./tty.ts";

const USAGE = `usage:
  sluice probe FILE... [--json]
  sluice make-dataset DIR --videos N --classes K [--duration S] [--fps F] [--width W] [--height H]
  sluice load DATASET [--batch-size B] [--frames T] [--width W] [--height H] [--frame-rate F]
                      [--batches N | --epochs E] [--clips-per-video K] [--clip-duration S]
                      [--placement random|uniform] [--keyframe-aligned] [--seed S]
                      [--backend inprocess|subprocess] [--decode cpu|nvdec|auto]
                      [--fetch-concurrency N] [--demux-concurrency N] [--decode-concurrency N]
                      [--layout BTHWC|BCTHW] [--refresh MS] [--json]
  sluice bench-decode FILE... [--width W] [--height H] [--repeat N] [--json]`;

/** A usage error: printed with the usage text, exit status 2. */
class UsageError extends SluiceError {}

/** Runs the CLI with `args`; returns the exit status. */
export async function main(args: string[]): Promise<number> {
  const [command, ...rest] = args;
  try {
    switch (command) {
      case "probe":
        return await probeCommand(rest);
      case "make-dataset":
        return makeDatasetCommand(rest);
      case "load":
        return await loadCommand(rest);
      case "bench-decode":
        return await benchDecodeCommand(rest);
      case undefined:
      case "-h":
      case "--help":
      case "help":
        print(Deno.stdout, USAGE);
        return command === undefined ? 2 : 0;
      default:
        throw new UsageError(`unknown command "${command}"`);
    }
  } catch (e) {
    if (
      e instanceof UsageError ||
      (e instanceof TypeError && "code" in e && String(e.code).startsWith("ERR_PARSE"))
    ) {
      print(Deno.stderr, `sluice: ${e.message}\n${USAGE}`);
      return 2;
    }
    if (e instanceof SluiceError) {
      print(Deno.stderr, `sluice ${command}: ${e.message}`);
      return 1;
    }
    throw e;
  }
}

function int(v: string | undefined, name: string, dflt: number): number {
  if (v === undefined) return dflt;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) {
    throw new UsageError(`--${name} must be a non-negative integer, got "${v}"`);
  }
  return n;
}

function num(v: string | undefined, name: string): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!(n > 0)) throw new UsageError(`--${name} must be a positive number, got "${v}"`);
  return n;
}

function oneOf<const T extends string>(
  v: string | undefined,
  name: string,
  allowed: readonly T[],
  dflt: T,
): T {
  if (v === undefined) return dflt;
  if (!allowed.includes(v as T)) {
    throw new UsageError(`--${name} must be one of ${allowed.join(", ")}, got "${v}"`);
  }
  return v as T;
}

// ------------------------------------------------------------------------------------------------ probe

async function probeCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { json: { type: "boolean" } },
  });
  if (positionals.length === 0) throw new UsageError("probe needs at least one FILE");
  const rows: Record<string, unknown>[] = [];
  let failed = 0;
  for (const file of positionals) {
    try {
      rows.push({ file, ...(await probe(file)) });
    } catch (e) {
      failed++;
      rows.push({ file, error: e instanceof Error ? e.message : String(e) });
    }
  }
  if (values.json) {
    print(Deno.stdout, JSON.stringify(rows, null, 2));
  } else {
    const header = ["file", "format", "codec", "size", "fps", "duration s", "frames", "pix_fmt", "rotation"];
    const table = rows.map((r) => {
      if ("error" in r) return [String(r.file), `error: ${r.error}`, "", "", "", "", "", "", ""];
      const v = r.video as {
        codec: string;
        width: number;
        height: number;
        frameRate: number;
        numFrames: number | null;
        pixelFormat: string | null;
        rotation: number;
        durationSec: number | null;
      } | null;
      return [
        String(r.file),
        String(r.format).split(",")[0],
        v?.codec ?? "-",
        v ? `${v.width}x${v.height}` : "-",
        v ? v.frameRate.toFixed(2) : "-",
        (v?.durationSec ?? r.durationSec as number | null)?.toFixed(2) ?? "-",
        String(v?.numFrames ?? "-"),
        v?.pixelFormat ?? "-",
        String(v?.rotation ?? 0),
      ];
    });
    print(Deno.stdout, alignTable([header, ...table]));
  }
  return failed > 0 ? 1 : 0;
}

function alignTable(rows: string[][]): string {
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  return rows.map((r) => r.map((cell, c) => cell.padEnd(widths[c])).join("  ").trimEnd()).join("\n");
}

// ------------------------------------------------------------------------------------------------ make-dataset

function makeDatasetCommand(args: string[]): number {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      videos: { type: "string" },
      classes: { type: "string" },
      duration: { type: "string" },
      fps: { type: "string" },
      width: { type: "string" },
      height: { type: "string" },
    },
  });
  if (positionals.length !== 1) throw new UsageError("make-dataset needs one DIR");
  const videos = int(values.videos, "videos", 0), classes = int(values.classes, "classes", 0);
  if (videos < 1 || classes < 1) throw new UsageError("make-dataset needs --videos N and --classes K (>= 1)");
  const bar = new ProgressBar(Deno.stderr, `encoding (${defaultEncoder()})`, videos);
  bar.update(0);
  makeSyntheticDataset(positionals[0], {
    videos,
    classes,
    durationSec: num(values.duration, "duration"),
    fps: num(values.fps, "fps"),
    width: values.width === undefined ? undefined : int(values.width, "width", 0),
    height: values.height === undefined ? undefined : int(values.height, "height", 0),
    onProgress: (done) => bar.update(done),
  });
  bar.finish(videos);
  print(Deno.stdout, `wrote ${videos} videos in ${classes} classes under ${positionals[0]}`);
  return 0;
}

// ------------------------------------------------------------------------------------------------ load

async function loadCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      "batch-size": { type: "string" },
      frames: { type: "string" },
      width: { type: "string" },
      height: { type: "string" },
      "frame-rate": { type: "string" },
      batches: { type: "string" },
      epochs: { type: "string" },
      "clips-per-video": { type: "string" },
      "clip-duration": { type: "string" },
      placement: { type: "string" },
      "keyframe-aligned": { type: "boolean" },
      seed: { type: "string" },
      backend: { type: "string" },
      decode: { type: "string" },
      "fetch-concurrency": { type: "string" },
      "demux-concurrency": { type: "string" },
      "decode-concurrency": { type: "string" },
      layout: { type: "string" },
      refresh: { type: "string" },
      json: { type: "boolean" },
    },
  });
  if (positionals.length !== 1) {
    throw new UsageError("load needs one DATASET (directory, .csv or .jsonl, or URL)");
  }
  const cores = navigator.hardwareConcurrency ?? 1;
  const summary = await runLoad({
    dataset: positionals[0],
    batchSize: int(values["batch-size"], "batch-size", 8),
    clip: {
      numFrames: int(values.frames, "frames", 8),
      width: int(values.width, "width", 112),
      height: int(values.height, "height", 112),
      frameRate: num(values["frame-rate"], "frame-rate"),
    },
    sampler: {
      seed: int(values.seed, "seed", 0),
      clipsPerVideo: int(values["clips-per-video"], "clips-per-video", 1),
      clipDurationSec: num(values["clip-duration"], "clip-duration"),
      placement: oneOf(values.placement, "placement", ["random", "uniform"], "random"),
      keyframeAligned: values["keyframe-aligned"] ?? false,
    },
    batches: values.batches === undefined ? undefined : int(values.batches, "batches", 1),
    epochs: int(values.epochs, "epochs", 1),
    backend: oneOf(values.backend, "backend", ["inprocess", "subprocess"], "inprocess"),
    decode: oneOf(values.decode, "decode", ["cpu", "nvdec", "auto"], "cpu"),
    layout: oneOf(values.layout, "layout", ["BTHWC", "BCTHW"], "BTHWC"),
    concurrency: {
      fetch: int(values["fetch-concurrency"], "fetch-concurrency", 8),
      demux: int(values["demux-concurrency"], "demux-concurrency", 1),
      decode: int(values["decode-concurrency"], "decode-concurrency", cores),
    },
    live: values.json ? undefined : Deno.stderr,
    refreshMs: int(values.refresh, "refresh", 500),
  });
  print(Deno.stdout, values.json ? JSON.stringify(summary, null, 2) : formatSummary(summary));
  return 0;
}

// ------------------------------------------------------------------------------------------------ bench-decode

async function benchDecodeCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      width: { type: "string" },
      height: { type: "string" },
      repeat: { type: "string" },
      json: { type: "boolean" },
    },
  });
  if (positionals.length === 0) throw new UsageError("bench-decode needs at least one FILE");
  const width = int(values.width, "width", 112), height = int(values.height, "height", 112);
  const repeat = Math.max(1, int(values.repeat, "repeat", 3));
  const rows: { file: string; frames: number; seconds: number; framesPerSec: number }[] = [];
  for (const file of positionals) {
    const packets = await demuxVideo(file);
    await decodeVideo(packets, { width, height }); // warm-up: decoder and scaler set-up
    const t0 = performance.now();
    let frames = 0;
    for (let i = 0; i < repeat; i++) frames += (await decodeVideo(packets, { width, height })).pts.length;
    const seconds = (performance.now() - t0) / 1000;
    rows.push({ file, frames, seconds, framesPerSec: frames / seconds });
  }
  if (values.json) print(Deno.stdout, JSON.stringify(rows, null, 2));
  else {
    print(
      Deno.stdout,
      alignTable([
        ["file", "frames", "seconds", "frames/s"],
        ...rows.map((r) => [r.file, String(r.frames), r.seconds.toFixed(3), r.framesPerSec.toFixed(0)]),
      ]),
    );
  }
  return 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
