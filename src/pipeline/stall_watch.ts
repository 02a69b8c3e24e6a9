/**
 * The stall watch: while an epoch runs, a stage with work running and no progress (no task finished, the
 * source's iterator did not answer) for longer than the threshold is reported once per stall, as a log line
 * and a `stall` event; progress again gives a `resume` event. A stage blocked on a full output queue has no
 * work running, so backpressure is never a stall.
 * @module
 */

import type { Clock } from "./clock.ts";
import type { PipelineEvent } from "./hooks.ts";
import type { Stage } from "./stage.ts";

/** Default stall threshold, ms. */
const DEFAULT_STALL_MS = 30_000;

/** Watches a pipeline's stages for stalls on its clock. */
export class StallWatch {
  readonly #stages: readonly Stage[];
  /** A stage with work running and no progress for this long is stalled, ms. */
  readonly thresholdMs: number;
  readonly #clock: Clock;
  readonly #log: (message: string) => void;
  readonly #event: (e: PipelineEvent) => void;
  /** Stages stalled now, with the clock time their stall began. */
  readonly #stalled = new Map<Stage, number>();
  #timer: unknown;

  constructor(
    stages: readonly Stage[],
    thresholdMs: number | undefined,
    clock: Clock,
    log: (message: string) => void,
    event: (e: PipelineEvent) => void,
  ) {
    this.#stages = stages;
    this.thresholdMs = thresholdMs ?? DEFAULT_STALL_MS;
    this.#clock = clock;
    this.#log = log;
    this.#event = event;
  }

  /** Checks every quarter of the threshold (between 10 ms and 1 s) until {@link end}. */
  start(): void {
    const every = Math.max(10, Math.min(1000, this.thresholdMs / 4));
    const tick = () => {
      this.#check();
      this.#timer = this.#clock.setTimer(tick, every);
    };
    this.#timer = this.#clock.setTimer(tick, every);
  }

  /** Stops checking (the epoch is ending; its tasks may still be settling). */
  stop(): void {
    if (this.#timer !== undefined) this.#clock.clearTimer(this.#timer);
    this.#timer = undefined;
  }

  /** The epoch ended: stages that were stalled until its end made progress (their work is over). */
  end(): void {
    this.#check();
    this.#stalled.clear();
  }

  /** How long `stage` has had work running with no progress, once that reaches the threshold; else 0. */
  stalledMs(stage: Stage, now: number): number {
    const idle = stage.noProgressMs(now);
    return idle >= this.thresholdMs ? idle : 0;
  }

  #check(): void {
    const now = this.#clock.now();
    for (const s of this.#stages) {
      const idle = s.noProgressMs(now);
      const since = this.#stalled.get(s);
      if (idle >= this.thresholdMs && since === undefined) {
        this.#stalled.set(s, now - idle);
        s.stalls++;
        const running = s.kind === "source" ? "waiting on its iterator" : `${s.inFlight} task(s) running`;
        this.#log(`sluice pipeline: stage "${s.name}" stalled: no progress for ${secs(idle)} (${running})`);
        this.#event({ type: "stall", stage: s.name, noProgressMs: idle, inFlight: s.inFlight });
      } else if (idle < this.thresholdMs && since !== undefined) {
        this.#stalled.delete(s);
        const stalledMs = now - idle - since;
        this.#log(`sluice pipeline: stage "${s.name}" made progress again after ${secs(stalledMs)}`);
        this.#event({ type: "resume", stage: s.name, stalledMs });
      }
    }
  }
}

function secs(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}
