/**
 * The auto-concurrency controller: it runs beside a pipeline, not inside it. While an epoch runs it reads the
 * pipeline's public stats every `intervalMs` on the pipeline's clock (the rows' `totals`, summed over epochs),
 * asks the pure policy (`auto_policy.ts`) what to do, applies the changes through the stages' controls
 * (`StageControl.adjust`), tells the hooks (a `concurrency` event), and keeps the decision log that
 * `stats().controller` shows. Reading stats costs one small object per stage per interval; nothing is
 * allocated per item.
 * @module
 */

import {
  type AutoConfig,
  decide,
  initialState,
  type PolicyState,
  restartWindow,
  type Sample,
  type StageSample,
} from "./auto_policy.ts";
import type { Clock } from "./clock.ts";
import type { PipelineEvent } from "./hooks.ts";
import type { StageControl } from "./stage.ts";
import type { ControllerDecision, ControllerStats, PipelineStats } from "./stats.ts";

/** Decisions kept in the log. */
const KEPT_DECISIONS = 200;

/** What the controller uses of the pipeline it runs beside: what `Pipeline` offers everyone. */
export interface ControlledPipeline {
  /** Stats now; the controller reads each row's `totals`. */
  stats(): PipelineStats;
  /** The stages; the controller changes those that are `auto`. */
  readonly stages: readonly StageControl[];
}

/** Runs the policy on a timer and applies its changes. */
export class AutoController {
  readonly #pipeline: ControlledPipeline;
  readonly #cfg: AutoConfig;
  readonly #clock: Clock;
  readonly #event: (e: PipelineEvent) => void;
  #state: PolicyState = initialState();
  readonly #log: ControllerDecision[] = [];
  #timer: unknown;
  #running = false;
  /** Clock time of the next tick (kept across stop/start). */
  #due = 0;

  /**
   * @param pipeline what it reads and changes
   * @param clock the pipeline's clock: ticks, and the time of each sample
   * @param event hands an event to the pipeline's hooks
   */
  constructor(
    pipeline: ControlledPipeline,
    cfg: AutoConfig,
    clock: Clock,
    event: (e: PipelineEvent) => void,
  ) {
    this.#pipeline = pipeline;
    this.#cfg = cfg;
    this.#clock = clock;
    this.#event = event;
  }

  /**
   * Starts (again) reading counters; the pipeline calls it as an epoch starts, and when a stage is handed to
   * the controller while one runs. The pipeline's counters are cumulative over its epochs, so a window goes on
   * across an epoch boundary, and the ticks keep their cadence: epochs shorter than a window still get measured.
   */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#schedule(Math.max(0, this.#due - this.#clock.now()));
  }

  /** Stops until the next {@link start}; the pipeline calls it as an epoch ends. */
  stop(): void {
    this.#running = false;
    if (this.#timer !== undefined) this.#clock.clearTimer(this.#timer);
    this.#timer = undefined;
  }

  /** One step: read, decide, apply. The timer calls it; tests may too. */
  tick(): void {
    if (this.#autoStages().length === 0) {
      this.#state = restartWindow(this.#state);
      return;
    }
    const d = decide(this.#state, this.#read(), this.#cfg);
    this.#state = d.state;
    for (const entry of d.log) {
      this.#log.push(entry);
      if (this.#log.length > KEPT_DECISIONS) this.#log.shift();
    }
    for (const c of d.changes) {
      const entry = d.log.findLast((e) => e.stage === c.stage && e.to === c.to && e.from !== e.to);
      this.#apply(c.stage, c.to, entry === undefined ? "" : `${entry.action}: ${entry.reason}`);
    }
  }

  /** Every row's totals now, as the policy's sample. */
  #read(): Sample {
    const t = this.#clock.now();
    const stages = this.#pipeline.stats().stages.map((r): StageSample => ({
      name: r.name,
      auto: r.auto,
      concurrency: r.concurrency,
      maxConcurrency: r.maxConcurrency,
      bound: r.bound ?? undefined,
      finished: r.totals.finished,
      busyMs: r.totals.busyMs,
      slotMs: r.totals.slotMs,
      blockedMs: r.totals.blockedPutMs,
      // The source has no input queue: its fill reads 1.
      inputItemMs: r.input === null ? r.totals.slotMs : r.totals.inputItemMs,
      inputCapacity: r.input === null ? 1 : r.input.capacity,
    }));
    return { t, stages };
  }

  /** Sets a stage's concurrency, if it is still under the controller, and tells the hooks. */
  #apply(name: string, to: number, reason: string): void {
    const s = this.#pipeline.stages.find((x) => x.name === name);
    if (s === undefined || !s.auto || s.concurrency === to) return;
    const from = s.concurrency;
    s.adjust(to);
    this.#event({ type: "concurrency", stage: name, from, to, reason });
  }

  /** Names of the stages under the controller now. */
  #autoStages(): string[] {
    return this.#pipeline.stages.filter((s) => s.auto).map((s) => s.name);
  }

  /** The controller's row of the stats. */
  stats(): ControllerStats {
    const phase = this.#state.phase;
    const stages = this.#autoStages();
    const state = stages.length === 0
      ? "idle"
      : phase.kind === "trial"
      ? `probing ${phase.stage} ${phase.from} → ${phase.to}`
      : "measuring";
    return { stages, state, log: [...this.#log] };
  }

  #schedule(ms = this.#cfg.intervalMs): void {
    this.#due = this.#clock.now() + ms;
    this.#timer = this.#clock.setTimer(() => {
      if (!this.#running) return;
      this.tick();
      this.#schedule();
    }, ms);
  }
}
