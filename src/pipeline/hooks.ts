/**
 * Pipeline hooks: the one way stats and events leave a running pipeline. A hook receives fresh stats every report
 * interval and once as each epoch ends, and the events worth a line in a log (a task failed, a stage stalled or
 * resumed, the auto-concurrency controller changed a stage). The JSONL stats file is one such hook
 * ({@link jsonlStatsHook}; `sluice load --stats-jsonl` installs it). A hook that throws is logged and left out
 * from then on; it never stops the pipeline.
 * @module
 */

import type { OptionSpec } from "../options.ts";
import type { Clock } from "./clock.ts";
import type { PipelineStats } from "./stats.ts";

/** Default milliseconds between reports. */
/** `reportInterval`, declared once (the pipeline's, the loader's). */
export const REPORT_INTERVAL_OPTION = {
  kind: "number",
  above: 0,
  default: 10_000,
  doc: "milliseconds between reports while an epoch runs",
} as const satisfies OptionSpec;

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
 * A hook appending one JSON line per report to `path`: `{"t": <Date.now()>, ...stats}`. Install it with
 * `build({ hooks: [jsonlStatsHook(path)] })` (or the loader's `hooks` option).
 * @param path the file to append to (created when missing)
 * @returns the hook
 * @example A loader's stats every second, to a file
 * ```ts
 * import { jsonlStatsHook, videoClassificationLoader } from "@sluice/sluice";
 *
 * await using loader = await videoClassificationLoader({
 *   dataset: "data/train",
 *   batchSize: 8,
 *   clip: { numFrames: 16, width: 112, height: 112 },
 *   hooks: [jsonlStatsHook("stats.jsonl")],
 *   reportInterval: 1000,
 * });
 * for await (using _batch of loader) {
 *   // a training step
 * }
 * ```
 */
export function jsonlStatsHook(path: string): PipelineHook {
  return {
    report(stats: PipelineStats): void {
      Deno.writeTextFileSync(path, JSON.stringify({ t: Date.now(), ...stats }) + "\n", { append: true });
    },
  };
}

/**
 * A pipeline's hooks: calls each one, dropping (and logging once) a hook that throws, and runs the report timer
 * while an epoch runs (only when some hook takes reports).
 */
export class HookSet {
  readonly #hooks: PipelineHook[];
  readonly #log: (message: string) => void;
  readonly #clock: Clock;
  readonly #intervalMs: number;
  #timer: unknown;

  /** @param intervalMs milliseconds between reports (default 10000) */
  constructor(
    hooks: readonly PipelineHook[],
    log: (message: string) => void,
    clock: Clock,
    intervalMs: number = REPORT_INTERVAL_OPTION.default,
  ) {
    this.#hooks = [...hooks];
    this.#log = log;
    this.#clock = clock;
    this.#intervalMs = intervalMs;
  }

  /** Reports `stats()` every interval until {@link stopReports} (an epoch runs). */
  startReports(stats: () => PipelineStats): void {
    if (!this.#hooks.some((h) => h.report !== undefined)) return;
    const tick = () => {
      this.report(stats, false);
      this.#timer = this.#clock.setTimer(tick, this.#intervalMs);
    };
    this.#timer = this.#clock.setTimer(tick, this.#intervalMs);
  }

  /** Stops the periodic reports (the epoch ended). */
  stopReports(): void {
    if (this.#timer !== undefined) this.#clock.clearTimer(this.#timer);
    this.#timer = undefined;
  }

  /** Hands `stats()` (read once, if some hook takes reports) to each hook. */
  report(stats: () => PipelineStats, final: boolean): void {
    let s: PipelineStats | undefined;
    for (const h of [...this.#hooks]) {
      if (h.report === undefined) continue;
      s ??= stats();
      this.#call(h, () => h.report!(s!, final));
    }
  }

  /** Hands an event to each hook. */
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
