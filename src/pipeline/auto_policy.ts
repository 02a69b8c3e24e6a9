/**
 * The auto-concurrency policy: a pure function from measurement samples to concurrency changes.
 *
 * Each call gets a {@link Sample} (cumulative counters of every stage at one instant); the policy compares it with
 * the sample that opened the current window, so all it reads are counter deltas. Per window it finds the
 * bottleneck (the verdict of `bottleneck.ts`). When the bottleneck is a stage under the controller, it probes:
 * one more task at once, one window to settle, one window to measure. A step is kept only if the stage's
 * throughput rose by more than `threshold`; otherwise it is reverted, and when that first step of a cycle made
 * per-item latency grow faster than the tasks added (the contention knee: past it, latency grows faster than
 * throughput, and fewer tasks give more) one task less is tried. A step down is kept when it raises throughput,
 * or costs less than half the threshold (the same work with fewer resources). When neither direction helps the stage settles, and is probed again after `reprobeMs`,
 * or at once when its throughput drifts by more than `drift` from what it settled at (downwards first when its
 * per-item latency grew faster than its throughput).
 *
 * Stages bound by the CPU (`bound: "cpu"`: Workers, synchronous FFI) share `cpuBudget` tasks among them: a step up
 * that would exceed it is taken only after another auto stage with idle slots yields one. I/O-bound stages may
 * go up to their `maxConcurrency`. The same samples always give the same decisions.
 * @module
 */

import type { OptionTable } from "../options.ts";
import type { OptionsDisagreement } from "../option_types.ts";
import { bottleneckIndex, type Load } from "./bottleneck.ts";
import type { ControllerDecision, StageBound } from "./stats.ts";

/** Tuning knobs of the auto-concurrency controller; ranges and defaults: {@link AUTO_CONCURRENCY_OPTIONS}. */
export interface AutoConcurrencyOptions {
  /** How often the controller reads the counters, ms. A window lasts at least this long. */
  intervalMs?: number;
  /** A step is kept only if throughput rises by more than this fraction. */
  threshold?: number;
  /** Tasks that `"cpu"` stages may run at once, summed over them. */
  cpuBudget?: number;
  /** A settled stage is probed again (one step up) after this many ms. */
  reprobeMs?: number;
  /** A settled stage is probed again at once when its throughput moves by more than this fraction. */
  drift?: number;
  /** Tasks a window needs before it is judged (a window also ends after 10 intervals). */
  minTasks?: number;
}

/** {@link AutoConcurrencyOptions}, declared once. */
export const AUTO_CONCURRENCY_OPTIONS = {
  intervalMs: {
    kind: "number",
    above: 0,
    default: 1000,
    doc: "how often the controller reads the counters, ms",
  },
  threshold: {
    kind: "number",
    above: 0,
    below: 1,
    default: 0.05,
    doc: "a step is kept only if throughput rises by more than this fraction",
  },
  cpuBudget: {
    kind: "number",
    above: 0,
    defaultText: "the number of cores",
    doc: "tasks the CPU-bound stages may run at once, summed over them",
  },
  reprobeMs: {
    kind: "number",
    above: 0,
    default: 60_000,
    doc: "a settled stage is probed again after this, ms",
  },
  drift: {
    kind: "number",
    above: 0,
    below: 1,
    default: 0.25,
    doc: "a settled stage is probed again when its throughput moves by more than this fraction",
  },
  minTasks: { kind: "number", above: 0, default: 8, doc: "tasks a window needs before it is judged" },
} as const satisfies OptionTable;

// AutoConcurrencyOptions is this table written for its readers: an option the two do not write the same (missing from one, or of
// another type) fails `deno task check` here, naming it.
const _agrees: Record<OptionsDisagreement<AutoConcurrencyOptions, typeof AUTO_CONCURRENCY_OPTIONS>, never> =
  {};

/** {@link AutoConcurrencyOptions} with every default filled in (by `build()`'s door, `resolveBuildOptions`). */
export type AutoConfig = Required<AutoConcurrencyOptions>;

/** Cumulative counters of one stage (or the consumer) at one instant. */
export interface StageSample {
  name: string;
  /** Whether the controller sets this stage's concurrency. */
  auto: boolean;
  concurrency: number;
  maxConcurrency: number;
  /** `"cpu"`/`"io"` for pipe stages, `undefined` for the others and the consumer. */
  bound: StageBound | undefined;
  /** Tasks finished (done, dropped or failed). */
  finished: number;
  /** Time spent working, ms. */
  busyMs: number;
  /** Capacity: concurrency integrated over running time, slot·ms. */
  slotMs: number;
  /** Time spent blocked on a full output queue, ms. */
  blockedMs: number;
  /** Input queue occupancy integral, item·ms (for the source: `slotMs`, so its fill reads 1). */
  inputItemMs: number;
  /** Input queue capacity (for the source: 1). */
  inputCapacity: number;
}

/** Every stage's counters at one instant (`t`, ms), source first, the consumer last. */
export interface Sample {
  t: number;
  stages: StageSample[];
}

/** One stage over one window. */
export interface Measure {
  /** Tasks finished. */
  n: number;
  /** Tasks finished per second. */
  thr: number;
  /** Mean compute time per task, ms. */
  lat: number;
  busy: number;
  blocked: number;
  fill: number;
}

interface Settled {
  at: number;
  thr: number;
  lat: number;
  t: number;
}

interface StageMemory {
  /** Direction of the last kept step (or of the probe cycle under way). */
  direction: 1 | -1;
  /**
   * Whether this probe cycle may still try one task less (after a contended step up, or when it cannot go up):
   * not after a kept step, nor in a periodic re-probe, whose cycle already found the step down worse.
   */
  mayTryDown: boolean;
  settled: Settled | undefined;
}

type Phase =
  | { kind: "measure" }
  /** A change was made that is not being judged: discard one window. */
  | { kind: "settle" }
  | { kind: "trial"; stage: string; from: number; to: number; before: Measure; warmed: boolean };

/** The controller's state between decisions (opaque to callers; start with {@link initialState}). */
export interface PolicyState {
  readonly phase: Phase;
  /** The sample that opened the current window. */
  readonly base: Sample | undefined;
  readonly memory: Readonly<Record<string, StageMemory>>;
}

/** The state before the first sample: the first window is a warm-up and is discarded. */
export function initialState(): PolicyState {
  return { phase: { kind: "settle" }, base: undefined, memory: {} };
}

/** Starts a new window at the next sample (a new epoch: its queues start from zero). */
export function restartWindow(state: PolicyState): PolicyState {
  const phase: Phase = state.phase.kind === "trial" ? { ...state.phase, warmed: false } : { kind: "settle" };
  return { ...state, phase, base: undefined };
}

/** What {@link decide} returns: the next state, and the changes to apply (`stage` to `to`). */
export interface Decision {
  state: PolicyState;
  changes: { stage: string; to: number }[];
  log: ControllerDecision[];
}

/** The policy: given the state and a new sample, the next state and the concurrency changes to make. */
export function decide(state: PolicyState, sample: Sample, cfg: AutoConfig): Decision {
  const base = state.base;
  if (base === undefined || base.stages.length !== sample.stages.length) {
    return { state: { ...state, base: sample }, changes: [], log: [] };
  }
  const dt = sample.t - base.t;
  if (dt < cfg.intervalMs * 0.999) return { state, changes: [], log: [] };
  const measures = sample.stages.map((s, i) => measure(base.stages[i], s, dt));
  const judged = state.phase.kind === "trial" ? indexOf(sample, state.phase.stage) : -1;
  const tasks = judged >= 0 ? measures[judged].n : Math.max(0, ...measures.map((m) => m.n));
  if (tasks < cfg.minTasks && dt < cfg.intervalMs * 10) return { state, changes: [], log: [] };
  const d = new Decider(state, sample, measures, cfg);
  d.run();
  return d.result();
}

/** One stage over the window from `a` to `b` (`dt` ms). */
export function measure(a: StageSample, b: StageSample, dt: number): Measure {
  const n = b.finished - a.finished;
  const busyMs = b.busyMs - a.busyMs;
  const slotMs = b.slotMs - a.slotMs;
  return {
    n,
    thr: dt > 0 ? n / (dt / 1000) : 0,
    lat: n > 0 ? busyMs / n : 0,
    busy: slotMs > 0 ? busyMs / slotMs : 0,
    blocked: slotMs > 0 ? (b.blockedMs - a.blockedMs) / slotMs : 0,
    fill: dt > 0 && b.inputCapacity > 0 ? (b.inputItemMs - a.inputItemMs) / (dt * b.inputCapacity) : 0,
  };
}

function toLoad(m: Measure): Load {
  return { busy: m.busy, blocked: m.blocked, inputFill: m.fill };
}

function indexOf(sample: Sample, name: string): number {
  return sample.stages.findIndex((s) => s.name === name);
}

class Decider {
  readonly #sample: Sample;
  readonly #measures: Measure[];
  readonly #cfg: AutoConfig;
  readonly #memory: Record<string, StageMemory>;
  #phase: Phase;
  readonly #changes: { stage: string; to: number }[] = [];
  readonly #log: ControllerDecision[] = [];
  /** Concurrency per stage after the changes decided so far. */
  readonly #conc: Map<string, number>;

  constructor(state: PolicyState, sample: Sample, measures: Measure[], cfg: AutoConfig) {
    this.#sample = sample;
    this.#measures = measures;
    this.#cfg = cfg;
    this.#memory = structuredClone(state.memory) as Record<string, StageMemory>;
    this.#phase = state.phase;
    this.#conc = new Map(sample.stages.map((s) => [s.name, s.concurrency]));
  }

  result(): Decision {
    return {
      state: { phase: this.#phase, base: this.#sample, memory: this.#memory },
      changes: this.#changes,
      log: this.#log,
    };
  }

  run(): void {
    const phase = this.#phase;
    if (phase.kind === "settle") {
      this.#phase = { kind: "measure" };
      return;
    }
    if (phase.kind === "trial") {
      if (!phase.warmed) {
        this.#phase = { ...phase, warmed: true };
        return;
      }
      return this.#judge(phase);
    }
    this.#measurePhase();
  }

  /** No trial under way: find the bottleneck and, if it is ours, start a probe on it. */
  #measurePhase(): void {
    const loads: Load[] = this.#measures.map(toLoad);
    const b = bottleneckIndex(loads);
    if (b < 0) return;
    const st = this.#sample.stages[b];
    if (!st.auto) return;
    const mem = this.#mem(st.name);
    const m = this.#measures[b];
    const settled = mem.settled;
    let dir = mem.direction;
    mem.mayTryDown = true;
    if (settled !== undefined && settled.at === st.concurrency) {
      const thrRatio = settled.thr > 0 ? m.thr / settled.thr : 1;
      const drifted = Math.abs(thrRatio - 1) > this.#cfg.drift;
      const age = this.#sample.t - settled.t;
      if (!drifted && age < this.#cfg.reprobeMs) return;
      const latRatio = settled.lat > 0 ? m.lat / settled.lat : 1;
      const contended = drifted && latRatio > thrRatio * (1 + this.#cfg.threshold);
      dir = contended ? -1 : 1;
      mem.mayTryDown = drifted;
      this.#note(
        st.name,
        "reprobe",
        st.concurrency,
        st.concurrency,
        drifted
          ? `throughput drifted ${fmtRate(settled.thr)} → ${fmtRate(m.thr)}/s` +
            (contended ? ` while latency grew ×${latRatio.toFixed(2)}: contention, probing down` : "")
          : `settled ${(age / 1000).toFixed(0)} s ago`,
      );
    }
    mem.settled = undefined;
    this.#probe(b, dir, m, `${st.name} is the bottleneck (busy ${pct(m.busy)}, input ${pct(m.fill)} full)`);
  }

  /** Starts a step of `dir` on stage `i`, measured against `before`; settles the stage when no step is possible. */
  #probe(i: number, dir: 1 | -1, before: Measure, why: string): void {
    const st = this.#sample.stages[i];
    const mem = this.#mem(st.name);
    const from = this.#conc.get(st.name)!;
    let to = from + dir;
    if (dir > 0 && !this.#canRaise(i, from)) {
      if (this.#yieldTo(i)) return;
      if (!mem.mayTryDown) return this.#settle(i, from, before, "at its limit");
      mem.mayTryDown = false;
      to = from - 1; // cannot go up: see whether going down costs nothing
      dir = -1;
    }
    if (to < 1) return this.#settle(i, from, before, "at 1");
    mem.direction = dir;
    this.#change(st.name, to);
    this.#note(st.name, "probe", from, to, why);
    this.#phase = { kind: "trial", stage: st.name, from, to, before, warmed: false };
  }

  #judge(phase: Extract<Phase, { kind: "trial" }>): void {
    const i = indexOf(this.#sample, phase.stage);
    const st = this.#sample.stages[i];
    this.#phase = { kind: "measure" };
    if (i < 0 || !st.auto || st.concurrency !== phase.to) return; // taken out of our hands meanwhile
    const mem = this.#mem(st.name);
    const m = this.#measures[i];
    const before = phase.before;
    const gain = before.thr > 0 ? m.thr / before.thr : m.thr > 0 ? Infinity : 1;
    const latRatio = before.lat > 0 ? m.lat / before.lat : 1;
    const what = `throughput ${fmtRate(before.thr)} → ${fmtRate(m.thr)}/s (${signedPct(gain - 1)}), ` +
      `latency ×${latRatio.toFixed(2)}`;
    const up = phase.to > phase.from;
    const theta = this.#cfg.threshold;
    if (gain > 1 + theta) {
      this.#note(st.name, "keep", phase.to, phase.to, what);
      mem.mayTryDown = false;
      const loads: Load[] = this.#measures.map(toLoad);
      if (bottleneckIndex(loads) === i) this.#probe(i, up ? 1 : -1, m, `still the bottleneck after ${what}`);
      return;
    }
    if (!up && gain >= 1 - theta / 2) {
      this.#note(st.name, "keep", phase.to, phase.to, `${what}: as fast with fewer tasks`);
      return this.#settle(i, phase.to, m, "fewer tasks do as well");
    }
    // Not worth it: undo. When the first step up of a cycle made per-item latency grow faster than the tasks
    // added (more than (n+1)/n: contention, not just a saturated resource), the stage may already be past the
    // knee: try one task less.
    this.#change(st.name, phase.from);
    this.#note(st.name, "revert", phase.to, phase.from, `${what}: below the ${pct(theta)} threshold`);
    const contended = latRatio > (phase.to / phase.from) * (1 + theta);
    if (up && contended && mem.mayTryDown && phase.from > 1) {
      mem.mayTryDown = false; // the down probe is this cycle's last step
      this.#change(st.name, phase.from - 1);
      mem.direction = -1;
      this.#note(st.name, "probe", phase.from, phase.from - 1, "one task less, in case it is past the knee");
      this.#phase = {
        kind: "trial",
        stage: st.name,
        from: phase.from,
        to: phase.from - 1,
        before,
        warmed: false,
      };
      return;
    }
    this.#settle(i, phase.from, before, "no step helps");
    this.#phase = { kind: "settle" };
  }

  #settle(i: number, at: number, m: Measure, why: string): void {
    const st = this.#sample.stages[i];
    const mem = this.#mem(st.name);
    mem.settled = { at, thr: m.thr, lat: m.lat, t: this.#sample.t };
    this.#note(st.name, "settle", at, at, `${why} (${fmtRate(m.thr)}/s)`);
  }

  #canRaise(i: number, from: number): boolean {
    const st = this.#sample.stages[i];
    if (from + 1 > st.maxConcurrency) return false;
    if (st.bound !== "cpu") return true;
    return this.#cpuInUse() + 1 <= this.#cfg.cpuBudget;
  }

  #cpuInUse(): number {
    let n = 0;
    for (const s of this.#sample.stages) if (s.bound === "cpu") n += this.#conc.get(s.name)!;
    return n;
  }

  /** Lowers another auto CPU stage that has a slot idle, so the bottleneck `i` can have it; false if none can. */
  #yieldTo(i: number): boolean {
    if (this.#sample.stages[i].bound !== "cpu") return false;
    let donor = -1;
    let most = 1.25; // idle slots a donor must have (one, with a margin against noise)
    this.#sample.stages.forEach((s, j) => {
      if (j === i || !s.auto || s.bound !== "cpu" || s.concurrency <= 1) return;
      const idle = s.concurrency * (1 - this.#measures[j].busy);
      if (idle >= most) {
        donor = j;
        most = idle;
      }
    });
    if (donor < 0) return false;
    const d = this.#sample.stages[donor];
    this.#change(d.name, d.concurrency - 1);
    this.#mem(d.name).settled = undefined;
    this.#note(
      d.name,
      "yield",
      d.concurrency,
      d.concurrency - 1,
      `gives a CPU slot to ${this.#sample.stages[i].name} (${most.toFixed(1)} of its slots idle)`,
    );
    this.#phase = { kind: "settle" };
    return true;
  }

  #change(stage: string, to: number): void {
    this.#conc.set(stage, to);
    const last = this.#changes.findIndex((c) => c.stage === stage);
    if (last >= 0) this.#changes.splice(last, 1);
    this.#changes.push({ stage, to });
  }

  #note(stage: string, action: ControllerDecision["action"], from: number, to: number, reason: string): void {
    this.#log.push({ t: this.#sample.t, stage, action, from, to, reason });
  }

  #mem(name: string): StageMemory {
    return this.#memory[name] ??= { direction: 1, mayTryDown: true, settled: undefined };
  }
}

function pct(x: number): string {
  return `${Math.round(x * 100)}%`;
}

function signedPct(x: number): string {
  if (!Number.isFinite(x)) return "+∞%";
  const p = Math.round(x * 1000) / 10;
  return `${p >= 0 ? "+" : ""}${p}%`;
}

function fmtRate(x: number): string {
  return x >= 100 ? x.toFixed(0) : x.toFixed(1);
}
