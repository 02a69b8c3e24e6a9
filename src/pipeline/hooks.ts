/**
 * Pipeline hooks: how stats and events leave a running pipeline. A hook receives fresh stats every report
 * interval and once as each epoch ends, and the events worth a line in a log (a task failed, a stage stalled or
 * resumed, the auto-concurrency controller changed a stage). The JSONL stats file is one such hook ({@link jsonlStatsHook});
 * `build({ onReport })` is another. A hook that throws is logged and left out from then on; it never stops the
 * pipeline.
 * @module
 */

import type { PipelineStats } from "./pipeline.ts";

/** Something that happened in a running pipeline. */
export type PipelineEvent =
  | {
    type: "stall";
    /** The stage that has work running but made no progress for `noProgressMs`. */
    stage: string;
    noProgressMs: number;
    /** Its tasks in flight. */
    inFlight: number;
  }
  | {
    type: "resume";
    /** The stage that made progress again after a stall of `stalledMs`. */
    stage: string;
    stalledMs: number;
  }
  | {
    type: "failure";
    /** The stage whose task failed; the pipeline goes on (the stage's `failed` counts it) within its budget. */
    stage: string;
    /** The item, described (never the item itself, so big buffers are not kept alive). */
    item: string;
    /** What was thrown. */
    error: unknown;
  }
  | {
    type: "concurrency";
    /** The stage whose concurrency the auto-concurrency controller changed. */
    stage: string;
    from: number;
    to: number;
    /** Why, in words (the same text as in `stats().controller.log`). */
    reason: string;
  };

/** Receives a pipeline's stats and events; every member is optional. */
export interface PipelineHook {
  /** Fresh stats every `reportInterval` ms while an epoch runs (`final` false), and once as each epoch ends. */
  report?(stats: PipelineStats, final: boolean): void;
  /** An event, as it happens. */
  event?(event: PipelineEvent): void;
}

/**
 * A hook appending one JSON line per report to `path`: `{"t": <Date.now()>, ...stats}`. This is what
 * `build({ statsJsonl })` and the `SLUICE_STATS_JSONL` environment variable install.
 */
export function jsonlStatsHook(path: string): PipelineHook {
  return {
    report(stats: PipelineStats): void {
      Deno.writeTextFileSync(path, JSON.stringify({ t: Date.now(), ...stats }) + "\n", { append: true });
    },
  };
}

/** The JSONL path from the `SLUICE_STATS_JSONL` environment variable, if set (and readable). */
export function envStatsJsonl(): string | undefined {
  try {
    return Deno.env.get("SLUICE_STATS_JSONL") || undefined;
  } catch {
    return undefined; // no --allow-env: no JSONL
  }
}

/** Calls each hook, dropping (and logging once) a hook that throws. */
export class HookSet {
  readonly #hooks: PipelineHook[];
  readonly #log: (message: string) => void;

  constructor(hooks: PipelineHook[], log: (message: string) => void) {
    this.#hooks = [...hooks];
    this.#log = log;
  }

  /** Whether any hook wants reports (so the pipeline needs its report timer). */
  get reporting(): boolean {
    return this.#hooks.some((h) => h.report !== undefined);
  }

  report(stats: () => PipelineStats, final: boolean): void {
    let s: PipelineStats | undefined;
    for (const h of [...this.#hooks]) {
      if (h.report === undefined) continue;
      s ??= stats();
      this.#call(h, () => h.report!(s!, final));
    }
  }

  event(e: PipelineEvent): void {
    for (const h of [...this.#hooks]) if (h.event !== undefined) this.#call(h, () => h.event!(e));
  }

  #call(h: PipelineHook, f: () => void): void {
    try {
      f();
    } catch (e) {
      const i = this.#hooks.indexOf(h);
      if (i >= 0) this.#hooks.splice(i, 1);
      this.#log(
        `sluice pipeline: a hook threw and was removed: ${e instanceof Error ? e.message : String(e)}`,
      );
    }
  }
}
