/**
 * `sluice transcode SRC OUT_DIR`: re-encodes a dataset at the size, frame rate, codec and keyframe interval it
 * will be trained at (see `src/prep/transcode_dataset.ts`). Resumable; `--shard I/N` (or the scheduler's
 * environment) takes every N-th input so N machines split the work with no coordinator.
 * @module
 */

import { TARGET_CODECS } from "../../prep/encoder.ts";
import { summaryTable } from "../../prep/progress.ts";
import { transcodeDataset } from "../../prep/transcode_dataset.ts";
import { resolveWorkShard } from "../../prep/work_shard.ts";
import { defineCommand, UsageError } from "../args.ts";
import { InvalidArgumentError } from "../../errors.ts";
import { print } from "../tty.ts";
import { PrepProgress } from "./prep_progress.ts";

/** The `transcode` command. */
export const transcodeCommand = defineCommand({
  name: "transcode",
  summary: "re-encode a dataset at training size, frame rate and GOP (resumable, shardable across machines)",
  description:
    "Writes OUT_DIR/<same relative path>.mp4 per video and OUT_DIR/manifest.jsonl (labels, extra " +
    "columns, durations, keyframe times); with --shard I/N, manifest.shard-I-of-N.jsonl (join them with " +
    "`sluice manifest merge OUT_DIR`). Display rotation is applied to the pixels; audio is dropped unless " +
    "--audio. Re-running skips outputs that exist and probe as asked, and redoes the others. Inputs that fail " +
    "are listed (and in failures.jsonl), never fatal. Without --shard, the shard comes from " +
    "SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT (minus SLURM_ARRAY_TASK_MIN), JOB_COMPLETION_INDEX/" +
    "JOB_COMPLETIONS (Kubernetes indexed Job; set JOB_COMPLETIONS yourself) or RANK/WORLD_SIZE (torchrun). " +
    "Progress goes to stderr: a line with ETA on a terminal, JSON lines otherwise.",
  positionals: [
    { name: "SRC", help: "a directory with one folder per class, or a .csv/.jsonl manifest (path or URL)" },
    { name: "OUT_DIR", help: "output directory (created)" },
  ],
  options: {
    height: {
      type: "integer",
      default: 128,
      min: 2,
      max: 8192,
      multipleOf: 2,
      help: "output height in pixels",
    },
    fps: { type: "number", default: 15, above: 0, max: 1000, help: "output frames per second" },
    codec: { type: "enum", values: TARGET_CODECS, default: "h264", help: "output codec" },
    gop: { type: "integer", default: 15, min: 1, max: 10_000, help: "keyframe interval in frames" },
    crf: {
      type: "number",
      min: 0,
      max: 63,
      defaultText: "23 (h264), 32 (vp9), 35 (svt-av1) or 32 (aom-av1)",
      help: "constant-quality factor: lower is better and bigger",
    },
    speed: { type: "enum", values: ["fast", "medium", "slow"], default: "fast", help: "encoder preset" },
    encoder: { type: "string", defaultText: "the first installed", help: "encoder name, e.g. libaom-av1" },
    audio: { type: "boolean", help: "copy the audio stream (default: drop it)" },
    jobs: { type: "integer", min: 1, max: 1024, defaultText: "the number of cores", help: "videos at once" },
    shard: {
      type: "string",
      placeholder: "I/N",
      defaultText: "from the environment, else 0/1",
      help: "take inputs i with i mod N = I",
    },
  },
  examples: [
    "transcode /data/kinetics /data/k128 --height 128 --fps 15 --codec h264 --gop 15",
    "transcode manifest.csv /data/k128 --codec av1 --crf 30 --jobs 8 --shard 3/16",
  ],
  async run({ values, positionals }) {
    const [input, outDir] = positionals;
    let shard;
    try {
      shard = resolveWorkShard(values.shard);
    } catch (e) {
      if (e instanceof InvalidArgumentError) throw new UsageError(e.message);
      throw e;
    }
    const view = new PrepProgress();
    const s = await transcodeDataset({
      input,
      outDir,
      height: values.height,
      fps: values.fps,
      codec: values.codec,
      gop: values.gop,
      crf: values.crf,
      speed: values.speed,
      encoder: values.encoder,
      audio: values.audio,
      jobs: values.jobs,
      shard,
      onProgress: (p, last) =>
        view.update(
          p,
          last.outcome.status === "failed" ? { path: last.path, error: last.outcome.error ?? "" } : undefined,
        ),
    });
    view.finish();
    const where = shard.count > 1 ? ` (shard ${shard.index}/${shard.count}, from ${shard.from})` : "";
    print(Deno.stdout, `transcode${where}: ${s.manifest}\n${summaryTable(s.progress, s.failures)}`);
    for (const r of s.redone) print(Deno.stdout, `redone ${r.path}: ${r.reason}`);
    for (const d of s.damaged) {
      print(Deno.stdout, `damaged input ${d.path}: ${d.corruptPackets} corrupt packet(s) skipped`);
    }
    return 0;
  },
});
