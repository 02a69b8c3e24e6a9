/**
 * The auto-concurrency controller's driver: while an epoch runs it reads the pipeline's counters every
 * `intervalMs` on the pipeline's clock, asks the pure policy (`auto_policy.ts`) what to do, applies the changes to
 * the stages and keeps the decision log that `stats().controller` shows. Reading counters costs one small object
 * per stage per interval; nothing is allocated per item.
 * @module
 */

import {
  type AutoConfig,
  type ControllerDecision,
  decide,
  initialState,
  type PolicyState,
  restartWindow,
  type Sample,
} from "./auto_policy.ts";
import type { Clock } from "./clock.ts";

/** Decisions kept in the log. */
const KEPT_DECISIONS = 200;

/** What `stats().controller` shows. */
export interface ControllerStats {
  /** Stages whose concurrency the controller sets now. */
  stages: string[];
  /** What it is doing: `"idle"` (no stage is auto), `"measuring"`, `"probing <stage> <from> → <to>"`. */
  state: string;
  /** Its decisions, oldest first (the last 200): each probe, kept or reverted step, settle, yield and re-probe. */
  log: ControllerDecision[];
}

/** Runs the policy on a timer and applies its changes. */
export class AutoController {
  readonly #cfg: AutoConfig;
  readonly #clock: Clock;
  readonly #sample: () => Sample;
  readonly #apply: (stage: string, to: number, reason: string) => void;
  readonly #autoStages: () => string[];
  #state: PolicyState = initialState();
  readonly #log: ControllerDecision[] = [];
  #timer: unknown;
  #running = false;
  /** Clock time of the next tick (kept across stop/start). */
  #due = 0;

  /**
   * @param sample reads every stage's counters now
   * @param apply sets a stage's concurrency (only for stages still under the controller)
   * @param autoStages names of the stages under the controller now
   */
  constructor(
    cfg: AutoConfig,
    clock: Clock,
    sample: () => Sample,
    apply: (stage: string, to: number, reason: string) => void,
    autoStages: () => string[],
  ) {
    this.#cfg = cfg;
    this.#clock = clock;
    this.#sample = sample;
    this.#apply = apply;
    this.#autoStages = autoStages;
  }

  /**
   * Starts (again) reading counters. The pipeline's counters are cumulative over its epochs, so a window goes on
   * across an epoch boundary, and the ticks keep their cadence: epochs shorter than a window still get measured.
   */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#schedule(Math.max(0, this.#due - this.#clock.now()));
  }

  /** Stops until the next {@link start}. */
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
    const d = decide(this.#state, this.#sample(), this.#cfg);
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
