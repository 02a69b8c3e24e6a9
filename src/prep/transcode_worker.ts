/**
 * The per-video step of `transcodeDataset`, run in `WorkerPool` Workers (one encoder per Worker):
 * `prepareVideo` skips an output that already exists and passes {@link checkTranscoded}, and otherwise writes
 * it to a hidden temporary name beside it (`.<name>.partial`), checks it, and renames it into place. A run killed at any moment leaves finished outputs and temporary files, never a
 * half-written file under an output's name; the next run deletes the temporary and starts that video over.
 * Failures (corrupt input, unreadable file) come back as an outcome, never as a thrown error.
 * @module
 */

import { releaseDecoder } from "../media/decode.ts";
import { errorText } from "../errors.ts";
import { fetchBytes, isUrl } from "../dataset/fetch.ts";
import type { MediaInput } from "../media/source.ts";
import { checkTranscoded, type OutputFacts } from "./output_check.ts";
import { type TranscodeOptions, transcodeVideoSync } from "./transcode.ts";

/** One video to prepare. */
export interface TranscodeTask {
  /** Position of the row in the input. */
  index: number;
  /** Local path or URL of the source. */
  source: string;
  /** Absolute path of the output file. */
  output: string;
  options: TranscodeOptions;
}

/** What became of a {@link TranscodeTask}. */
export interface TaskOutcome {
  /** The task's `index`. */
  index: number;
  /** Transcoded now, kept from an earlier run, or failed. */
  status: "done" | "skipped" | "failed";
  /** Why it failed, or why an existing output was redone. */
  error?: string;
  /** Source bytes read (0 when skipped). */
  bytesIn: number;
  /** Output bytes (of the existing file when skipped). */
  bytesOut: number;
  /** Wall time of this step. */
  seconds: number;
  /** The output's probed facts (done and skipped). */
  facts?: OutputFacts;
  /** Encoder used (done only). */
  encoder?: string;
  /** Source packets the decoder rejected (done only). */
  corruptPackets?: number;
}

/** The temporary name an output is written under (hidden, beside it, same file system: rename is atomic). */
export function partialPath(output: string): string {
  const i = output.lastIndexOf("/");
  return `${output.slice(0, i + 1)}.${output.slice(i + 1)}.partial`;
}

async function fileSize(path: string): Promise<number | null> {
  try {
    return (await Deno.stat(path)).size;
  } catch {
    return null;
  }
}

/** Prepares one video; see the module docs. */
export async function prepareVideo(task: TranscodeTask): Promise<TaskOutcome> {
  const t0 = performance.now();
  const o = task.options;
  const request = { codec: o.codec, height: o.height, fps: o.fps, gop: o.gop, audio: o.audio ?? false };
  const elapsed = () => (performance.now() - t0) / 1000;
  let redo: string | undefined;
  const existing = await fileSize(task.output);
  if (existing !== null) {
    const check = checkTranscoded(task.output, request);
    if (check.ok) {
      return {
        index: task.index,
        status: "skipped",
        bytesIn: 0,
        bytesOut: existing,
        seconds: elapsed(),
        facts: check.facts,
      };
    }
    redo = `existing output redone: ${check.reason}`;
  }
  const tmp = partialPath(task.output);
  try {
    await Deno.remove(tmp).catch(() => {});
    await Deno.mkdir(task.output.slice(0, task.output.lastIndexOf("/")) || "/", { recursive: true });
    let src: MediaInput = task.source;
    let bytesIn: number;
    if (isUrl(task.source)) {
      src = await fetchBytes(task.source);
      bytesIn = src.length;
    } else {
      bytesIn = (await Deno.stat(task.source)).size;
    }
    const r = transcodeVideoSync(src, tmp, o);
    const check = checkTranscoded(tmp, request);
    if (!check.ok) throw new Error(`the output does not match the request: ${check.reason}`);
    await Deno.rename(tmp, task.output);
    return {
      index: task.index,
      status: "done",
      error: redo,
      bytesIn,
      bytesOut: (await fileSize(task.output)) ?? 0,
      seconds: elapsed(),
      facts: check.facts,
      encoder: r.encoder,
      corruptPackets: r.corruptPackets,
    };
  } catch (e) {
    await Deno.remove(tmp).catch(() => {});
    const error = errorText(e, task.source);
    return { index: task.index, status: "failed", error, bytesIn: 0, bytesOut: 0, seconds: elapsed() };
  } finally {
    // A long run through thousands of codecs and sizes: keep at most one decoder per Worker between videos.
    releaseDecoder();
  }
}

/** Frees this Worker's cached decoder; the pool calls it before terminating the Worker. */
export function release(): void {
  releaseDecoder();
}
