/**
 * The text of a loader's stats, written once: the clip counts, the failures per stage and the per-stage
 * table(s) with the bottleneck. `sluice load` prints it under its run's figures, and a served loader's `stats`
 * message carries it (`text`), so `print(loader.stats())` in Python shows the same lines.
 * @module
 */

import { formatStats } from "../pipeline/format_stats.ts";
import type { PipelineStats } from "../pipeline/stats.ts";
import type { ClipCounts } from "./batch/clip_stats.ts";
import type { LoaderStats } from "./loader.ts";

/** What {@link formatLoaderStats} shows (a `sluice load` summary has these fields too). */
export interface LoaderStatsParts {
  /** The clips of the epochs started, summed. */
  clips: ClipCounts;
  /** Failed items per stage (only stages with failures, the backend child's included), and `index`. */
  failures: Record<string, number>;
  /** This process's pipeline. */
  pipeline: PipelineStats;
  /** The backend child's pipeline (subprocess backend), else null. */
  child: PipelineStats | null;
}

/** The parts of {@link formatLoaderStats} from a loader's `stats()`. */
export function loaderStatsParts(stats: LoaderStats): LoaderStatsParts {
  const child = (stats.backend?.child?.pipeline ?? null) as PipelineStats | null;
  const failures: Record<string, number> = {};
  for (const s of [...(child?.stages ?? []), ...stats.pipeline.stages]) {
    if (s.failed > 0) failures[s.name] = (failures[s.name] ?? 0) + s.failed;
  }
  if (stats.indexFailures.length > 0) failures.index = stats.indexFailures.length;
  return { clips: stats.clips.total, failures, pipeline: stats.pipeline, child };
}

/**
 * The clip lines, the failures line, then the per-stage table (`formatStats`'s, fitted to `width` columns when
 * given), the backend child's first when there is one.
 */
export function formatLoaderStats(s: LoaderStatsParts, width?: number): string {
  const lines = [
    ...clipLines(s.clips),
    `index and stage failures: ${Object.keys(s.failures).length === 0 ? "none" : JSON.stringify(s.failures)}`,
    "",
  ];
  if (s.child !== null) lines.push("backend child:", formatStats(s.child, { width }), "", "this process:");
  lines.push(formatStats(s.pipeline, { width }));
  return lines.join("\n");
}

/** `clips: planned …, delivered …, failed …` and, when any failed, how they were replaced and where they failed. */
function clipLines(c: ClipCounts): string[] {
  const lines = [
    `clips: planned ${c.planned}, delivered ${c.delivered}, failed ${c.failed}` +
    (c.dropped > 0 ? `, dropped ${c.dropped}` : "") + (c.pending > 0 ? `, not reached ${c.pending}` : "") +
    `; padded frames ${c.paddedFrames}, held frames ${c.heldFrames}`,
  ];
  if (c.audioMissing + c.audioShort + c.audioError > 0) {
    lines.push(
      `  audio zeros: ${c.audioMissing} clips without an audio track, ${c.audioShort} short, ` +
        `${c.audioError} undecodable`,
    );
  }
  if (c.failed > 0) {
    const stages = Object.entries(c.failedByStage).map(([k, n]) => `${k} ${n}`).join(", ");
    lines.push(`  failed clips: ${c.replaced} replaced; by stage: ${stages}`);
  }
  lines.push(
    `decode: ${c.decodedFrames} frames decoded, ${c.skippedFrames} skipped, ${c.emittedFrames} emitted ` +
      `(amplification ${c.decodeAmplification.toFixed(2)}); ${c.sharedClips} clips from shared passes`,
  );
  return lines;
}
