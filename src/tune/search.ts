/**
 * The search of `sluice tune`, deterministic given the trials' measurements (so `--resume` replays a killed
 * search's recorded trials and carries on where it stopped):
 *
 * 1. **Start**: the module's start configuration, measured twice (the spread is the first noise estimate), then
 *    the **ceiling**: the headspace trial (batches replayed from memory) at the start configuration.
 * 2. **Contention curves**: for each stage-concurrency parameter, busiest stage first, the values 1, 2, 4, 8, 16
 *    (within its range) with the others fixed at the best so far. The stage takes the smallest value whose
 *    throughput is within 1.5 standard errors of the curve's best: equal speed with fewer tasks is better.
 * 3. **Coordinate descent**: each parameter in turn tries its neighbours (an int ±1, or ±1/8 of its value when
 *    large, climbing on while that helps; a choice's other values) around the best; a change is kept only when
 *    its mean beats the best's by more than the margin, or, for a stage's concurrency going down, when it is as
 *    fast as the best within the margin. Stops when a full pass keeps nothing, after
 *    `patience` trials without a kept change, at `maxTrials`, or when the next trial would overrun the budget.
 *
 * A trial whose first measurement comes within the margin of the best (or above it) is promising: it and the
 * best are repeated up to `repeats` measurements before the two means are compared. The margin of two means is
 * the larger of `minGain` and 2.5 standard errors of their difference, from the measurement noise pooled over
 * every repeated configuration.
 * @module
 */

import type { TrialMetrics } from "./measure.ts";
import type { TrialOutcome, TrialRequest, TrialRunner } from "./runner.ts";
import {
  type ChoiceValue,
  type Config,
  configKey,
  type IntParam,
  paramLabel,
  type SearchSpace,
  stageParams,
} from "./space.ts";

/** Options of {@link search}. */
export interface SearchOptions {
  /** Total wall time for all trials, seconds. */
  budgetSec: number;
  /** Measured window of a trial, seconds. */
  measureSec: number;
  /** Warm-up before the window, seconds. */
  warmupSec: number;
  /** At most this many trials (default 100). */
  maxTrials?: number;
  /** Stop the descent after this many trials in a row keep nothing (default 12). */
  patience?: number;
  /** Smallest relative gain that counts (default 0.01). */
  minGain?: number;
  /** Measurements of a promising configuration (default 2). */
  repeats?: number;
  /** Concurrency values of a contention curve (default 1, 2, 4, 8, 16). */
  curvePoints?: readonly number[];
  /** Run the headspace (ceiling) trial (default true). */
  ceiling?: boolean;
  /** Aborting it stops the search; the trial it interrupts is not recorded. */
  signal?: AbortSignal;
}

/** Why a trial ran. */
export type TrialPhase = "start" | "ceiling" | "curve" | "descent" | "repeat";

/** One trial, as `trials.jsonl` keeps it. */
export interface TrialRecord extends TrialOutcome {
  /** 1, 2, … in the order run. */
  id: number;
  /** Why it ran. */
  phase: TrialPhase;
  /** A measurement, or the headspace trial. */
  kind: "measure" | "ceiling";
  /** The configuration it ran. */
  config: Config;
  /** `configKey` of the configuration. */
  key: string;
  /** What the trial tried, e.g. `demux concurrency 4`. */
  note: string;
}

/** Everything measured for one configuration. */
export interface Evaluated {
  /** `configKey` of the configuration. */
  key: string;
  /** The configuration. */
  config: Config;
  /** samples/s of each successful measurement. */
  samples: number[];
  /** The latest successful trial's metrics. */
  metrics: TrialMetrics | null;
  /** Why its latest trial failed, when none succeeded. */
  failure: string | null;
  /** What its first trial tried (`demux concurrency 4`), for the repeats' notes. */
  note: string;
}

/** One single-parameter change tried against the best configuration of its time. */
export interface Move {
  /** The parameter changed. */
  param: string;
  /** Its value in the best configuration. */
  from: ChoiceValue;
  /** The value tried. */
  to: ChoiceValue;
  /** Mean samples/s of the best before the change. */
  before: number;
  /** Mean samples/s of the changed configuration (null: it failed). */
  after: number | null;
  /** Whether it became the best. */
  kept: boolean;
  /** The failure reason when it failed. */
  failure: string | null;
}

/** One point of a stage's contention curve. */
export interface CurvePoint {
  /** The stage's concurrency. */
  concurrency: number;
  /** Mean samples/s of the pipeline (null: the trial failed). */
  samplesPerSec: number | null;
  /** The stage's mean per-item time over the window, ms. */
  stageMeanMs: number | null;
  /** The stage's items out per second over the window. */
  stageItemsPerSec: number | null;
  /** The stage's busy fraction over the window. */
  stageBusy: number | null;
}

/** A stage's contention curve: its concurrency varied, the other parameters fixed at `fixed`. */
export interface Curve {
  /** The parameter that is the stage's concurrency. */
  param: string;
  /** The stage. */
  stage: string;
  /** The configuration the other parameters kept. */
  fixed: Config;
  /** One point per concurrency tried, in increasing order. */
  points: CurvePoint[];
}

/** What a search found. */
export interface SearchResult {
  /** The space searched. */
  space: SearchSpace;
  /** The start configuration and its measurements. */
  start: Evaluated;
  /** The best configuration measured (null when every trial failed). */
  best: Evaluated | null;
  /** samples/s of the headspace trial (null when not run or failed). */
  ceiling: number | null;
  /** Why the ceiling trial failed (null when it did not). */
  ceilingFailure: string | null;
  /** Changes kept, in order. */
  kept: Move[];
  /** Changes that did not help (or failed), in order. */
  rejected: Move[];
  /** One contention curve per stage-concurrency parameter, in the order measured. */
  curves: Curve[];
  /** Every trial, in order. */
  trials: TrialRecord[];
  /** The relative gain two configurations measured `repeats` times needed at the end (the noise margin). */
  threshold: number;
  /** Why it stopped. */
  stopReason: string;
  /** Wall time the trials took, seconds. */
  spentSec: number;
}

/** Mean of a configuration's measurements (0 when it has none). */
export function meanOf(e: Evaluated): number {
  return e.samples.length === 0 ? 0 : e.samples.reduce((a, b) => a + b, 0) / e.samples.length;
}

/** (max − min) / mean of its measurements; 0 with fewer than two. */
export function spreadOf(e: Evaluated): number {
  if (e.samples.length < 2) return 0;
  return (Math.max(...e.samples) - Math.min(...e.samples)) / meanOf(e);
}

class Stop {
  constructor(readonly reason: string) {}
}

const DEFAULT_CURVE = [1, 2, 4, 8, 16];
/** Standard errors a difference of means must exceed to count (one-sided, about 1% false positives). */
const NOISE_Z = 2.5;
/**
 * Standard errors within which a curve's points count as equally fast (the smallest is taken). Narrower than
 * {@link NOISE_Z}: on a noisy machine a wide tie would give away real throughput for fewer tasks.
 */
const TIE_Z = 1.5;
/** Cost guess of a trial before any finished: warm-up + window + this much start-up, seconds. */
const STARTUP_GUESS_SEC = 5;

/** Runs the search; `onTrial` sees each trial as it finishes. */
export async function search(
  space: SearchSpace,
  start: Config,
  runner: TrialRunner,
  opts: SearchOptions,
  onTrial: (r: TrialRecord, s: { best: Evaluated | null; spentSec: number }) => void = () => {},
): Promise<SearchResult> {
  return await new Search(space, start, runner, opts, onTrial).run();
}

/** The trials run so far and what they cost; runs the next one unless interrupted, at `maxTrials` or over budget. */
class TrialLog {
  /** Every trial, in the order run. */
  readonly records: TrialRecord[] = [];
  /** Wall time the trials took, seconds. */
  spent = 0;
  readonly #space: SearchSpace;
  readonly #runner: TrialRunner;
  readonly #opts: Required<SearchOptions>;

  constructor(space: SearchSpace, runner: TrialRunner, opts: Required<SearchOptions>) {
    this.#space = space;
    this.#runner = runner;
    this.#opts = opts;
  }

  /** What the next trial is expected to cost, seconds: the mean of the successful ones, else a guess. */
  #estimatedCost(): number {
    const ok = this.records.filter((t) => t.status === "ok");
    if (ok.length === 0) return this.#opts.warmupSec + this.#opts.measureSec + STARTUP_GUESS_SEC;
    return ok.reduce((a, t) => a + t.wallSec, 0) / ok.length;
  }

  /**
   * Runs one trial and records it.
   * @throws {Stop} when the search is interrupted (before or during the trial), at `maxTrials`, or when the
   * trial would overrun the budget
   */
  async run(
    config: Config,
    kind: "measure" | "ceiling",
    phase: TrialPhase,
    note: string,
  ): Promise<TrialRecord> {
    if (this.#opts.signal.aborted) throw new Stop("interrupted");
    if (this.records.length >= this.#opts.maxTrials) {
      throw new Stop(`max trials (${this.#opts.maxTrials}) reached`);
    }
    if (this.spent + this.#estimatedCost() > this.#opts.budgetSec) {
      throw new Stop(`budget: the next trial would not fit in ${fmtDuration(this.#opts.budgetSec)}`);
    }
    const req: TrialRequest = {
      id: this.records.length + 1,
      kind,
      config,
      warmupSec: this.#opts.warmupSec,
      measureSec: this.#opts.measureSec,
    };
    if (this.#opts.signal.aborted) throw new Stop("interrupted");
    const outcome = await this.#runner.run(req);
    if (this.#opts.signal.aborted) throw new Stop("interrupted");
    const record: TrialRecord = {
      ...outcome,
      id: req.id,
      phase,
      kind,
      config: { ...config },
      key: configKey(this.#space, config),
      note,
    };
    this.records.push(record);
    this.spent += outcome.wallSec;
    return record;
  }
}

/** Relative noise of one measurement: the pooled standard deviation over mean of repeated configurations. */
function pooledNoise(evals: Iterable<Evaluated>): number {
  let ss = 0, df = 0;
  for (const e of evals) {
    const m = meanOf(e);
    if (e.samples.length < 2 || !(m > 0)) continue;
    for (const x of e.samples) ss += ((x - m) / m) ** 2;
    df += e.samples.length - 1;
  }
  return df === 0 ? 0 : Math.sqrt(ss / df);
}

/** The values of a stage's contention curve: `points` within its range, its bounds, and its current value. */
function curveValues(points: readonly number[], p: IntParam, current: number): number[] {
  const values = new Set(points.filter((v) => v >= p.min && v <= p.max));
  const top = Math.max(...points);
  if (p.max < top) values.add(p.max);
  if (p.min > Math.min(...points)) values.add(p.min);
  values.add(current);
  return [...values].sort((a, b) => a - b);
}

/** One search: its phases (start, ceiling, curves, descent) and what they measured and kept. */
class Search {
  readonly #space: SearchSpace;
  readonly #opts: Required<SearchOptions>;
  readonly #onTrial: (r: TrialRecord, s: { best: Evaluated | null; spentSec: number }) => void;
  readonly #evals = new Map<string, Evaluated>();
  readonly #log: TrialLog;
  readonly #kept: Move[] = [];
  readonly #rejected: Move[] = [];
  readonly #curves: Curve[] = [];
  readonly #start: Evaluated;
  #best: Evaluated | null = null;
  #sinceKept = 0;
  #ceiling: TrialRecord | null = null;
  /** Configurations that were the best once: never taken again, so the descent cannot cycle. */
  readonly #wasBest = new Set<string>();

  constructor(
    space: SearchSpace,
    start: Config,
    runner: TrialRunner,
    opts: SearchOptions,
    onTrial: (r: TrialRecord, s: { best: Evaluated | null; spentSec: number }) => void,
  ) {
    this.#space = space;
    const given = Object.fromEntries(
      Object.entries(opts).filter(([, v]) => v !== undefined),
    ) as SearchOptions;
    this.#opts = {
      maxTrials: 100,
      patience: 12,
      minGain: 0.01,
      repeats: 2,
      curvePoints: DEFAULT_CURVE,
      ceiling: true,
      signal: new AbortController().signal,
      ...given,
    };
    this.#onTrial = onTrial;
    this.#log = new TrialLog(space, runner, this.#opts);
    this.#start = this.#entry(start);
  }

  async run(): Promise<SearchResult> {
    let stopReason = "converged: a full pass over the parameters kept nothing";
    try {
      await this.#measure(this.#start, "start", "start");
      if (this.#start.samples.length > 0) this.#wasBest.add(this.#start.key);
      await this.#repeat(this.#start);
      if (this.#opts.ceiling) await this.#runCeiling();
      await this.#runCurves();
      await this.#descend();
    } catch (e) {
      if (!(e instanceof Stop)) throw e;
      stopReason = e.reason;
    }
    const c = this.#ceiling;
    return {
      space: this.#space,
      start: this.#start,
      best: this.#best,
      ceiling: c?.metrics?.samplesPerSec ?? null,
      ceilingFailure: c?.reason ?? null,
      kept: this.#kept,
      rejected: this.#rejected,
      curves: this.#curves,
      trials: this.#log.records,
      threshold: this.#threshold(),
      stopReason,
      spentSec: this.#log.spent,
    };
  }

  // ---- trials --------------------------------------------------------------------------------------------

  #entry(config: Config): Evaluated {
    const key = configKey(this.#space, config);
    let e = this.#evals.get(key);
    if (e === undefined) {
      e = { key, config: { ...config }, samples: [], metrics: null, failure: null, note: "" };
      this.#evals.set(key, e);
    }
    return e;
  }

  /** One more measurement of `e`. */
  async #measure(e: Evaluated, phase: TrialPhase, note: string): Promise<void> {
    if (e.note === "") e.note = note;
    const r = await this.#log.run(e.config, "measure", phase, note);
    if (r.status === "ok" && r.metrics) {
      e.samples.push(r.metrics.samplesPerSec);
      e.metrics = r.metrics;
    } else if (e.samples.length === 0) e.failure = r.reason;
    if (this.#best === null && e.samples.length > 0) {
      this.#best = e;
      this.#wasBest.add(e.key);
    }
    this.#onTrial(r, { best: this.#best, spentSec: this.#log.spent });
  }

  /** Measures `e` until it has `repeats` measurements (not when it failed). */
  async #repeat(e: Evaluated): Promise<void> {
    while (e.samples.length > 0 && e.samples.length < this.#opts.repeats) {
      await this.#measure(e, "repeat", `repeat: ${e.note}`);
    }
  }

  async #runCeiling(): Promise<void> {
    const r = await this.#log.run(this.#start.config, "ceiling", "ceiling", "ceiling (replayed batches)");
    this.#ceiling = r;
    this.#onTrial(r, { best: this.#best, spentSec: this.#log.spent });
  }

  /** The relative difference of the means of `a` and `b` that is more than noise. */
  #margin(a: Evaluated, b: Evaluated, z = NOISE_Z): number {
    const na = Math.max(1, a.samples.length), nb = Math.max(1, b.samples.length);
    return Math.max(this.#opts.minGain, z * pooledNoise(this.#evals.values()) * Math.sqrt(1 / na + 1 / nb));
  }

  /** The margin between two configurations measured `repeats` times each (what the report quotes). */
  #threshold(): number {
    const n = this.#opts.repeats;
    return Math.max(this.#opts.minGain, NOISE_Z * pooledNoise(this.#evals.values()) * Math.sqrt(2 / n));
  }

  /**
   * Measures a candidate once (unless measured already); when it is promising, measures it and the best
   * `repeats` times. Returns it.
   */
  async #try(config: Config, phase: TrialPhase, note: string): Promise<Evaluated> {
    const e = this.#entry(config);
    if (e.samples.length === 0 && e.failure === null) await this.#measure(e, phase, note);
    const best = this.#best;
    if (
      best !== null && e !== best && e.samples.length > 0 &&
      meanOf(e) >= meanOf(best) * (1 - this.#margin(e, best))
    ) {
      await this.#repeat(e);
      await this.#repeat(best);
    }
    return e;
  }

  /** The configuration with the highest mean of those that were the best. */
  #peak(): Evaluated {
    return [...this.#wasBest].map((k) => this.#evals.get(k)!).reduce((a, b) => meanOf(b) > meanOf(a) ? b : a);
  }

  #beats(e: Evaluated, best: Evaluated | null): boolean {
    if (e.samples.length === 0) return false;
    return best === null || meanOf(e) > meanOf(best) * (1 + this.#margin(e, best));
  }

  #record(param: string, from: Evaluated, to: Evaluated, kept: boolean): void {
    const move: Move = {
      param,
      from: from.config[param],
      to: to.config[param],
      before: meanOf(from),
      after: to.samples.length > 0 ? meanOf(to) : null,
      kept,
      failure: to.samples.length > 0 ? null : to.failure,
    };
    (kept ? this.#kept : this.#rejected).push(move);
    if (kept) {
      this.#best = to;
      this.#wasBest.add(to.key);
      this.#sinceKept = 0;
    }
  }

  // ---- phases ----------------------------------------------------------------------------------------------

  async #runCurves(): Promise<void> {
    const busy = (stage: string) => this.#start.metrics?.stages.find((s) => s.name === stage)?.busy ?? -1;
    const params = stageParams(this.#space)
      .map((p, i) => ({ ...p, i }))
      .sort((a, b) => busy(b.param.stage!) - busy(a.param.stage!) || a.i - b.i);
    for (const { name, param } of params) {
      const base = this.#best ?? this.#start;
      const fixed = { ...base.config };
      const values = curveValues(this.#opts.curvePoints, param, base.config[name] as number);
      const curve: Curve = { param: name, stage: param.stage!, fixed, points: [] };
      this.#curves.push(curve);
      const evaluated: Evaluated[] = [];
      for (const v of values) {
        const e = await this.#try({ ...fixed, [name]: v }, "curve", `${param.stage} concurrency ${v}`);
        evaluated.push(e);
        curve.points.push(curvePoint(v, e, param.stage!));
      }
      // The measurements may have grown through repeats: refresh every point.
      curve.points = evaluated.map((e) => curvePoint(e.config[name] as number, e, param.stage!));
      this.#chooseFromCurve(name, base, evaluated);
    }
  }

  /** The smallest value within the threshold of the curve's best becomes the stage's value. */
  #chooseFromCurve(name: string, base: Evaluated, evaluated: Evaluated[]): void {
    const ok = evaluated.filter((e) => e.samples.length > 0);
    if (ok.length === 0) return;
    const top = ok.reduce((a, b) => meanOf(b) > meanOf(a) ? b : a);
    const pick = ok.filter((e) => e === top || meanOf(e) >= meanOf(top) * (1 - this.#margin(e, top, TIE_Z)))
      .sort((a, b) => (a.config[name] as number) - (b.config[name] as number))[0];
    const incumbent = this.#best ?? base;
    for (const e of evaluated) {
      if (e === incumbent || e === pick) continue;
      this.#record(name, incumbent, e, false);
    }
    if (pick !== incumbent) this.#record(name, incumbent, pick, true);
  }

  async #descend(): Promise<void> {
    for (;;) {
      let moved = false;
      for (const [name, p] of Object.entries(this.#space)) {
        if (p.kind === "int") {
          if (p.min === p.max) continue;
          if (await this.#climb(name, p, +1) || await this.#climb(name, p, -1)) moved = true;
        } else {
          for (const v of p.values) {
            const best = this.#best ?? this.#start;
            if (v === best.config[name]) continue;
            if (await this.#step(name, { ...best.config, [name]: v })) moved = true;
          }
        }
      }
      if (!moved) return;
    }
  }

  /** Moves `name` in direction `dir` while that helps; true when it moved at all. */
  async #climb(name: string, p: IntParam, dir: 1 | -1): Promise<boolean> {
    let moved = false;
    for (;;) {
      const best = this.#best ?? this.#start;
      const v = best.config[name] as number;
      const next = Math.min(p.max, Math.max(p.min, v + dir * Math.max(1, Math.round(v / 8))));
      if (next === v) return moved;
      // Fewer tasks of a stage at the same speed is better (less memory, less contention elsewhere).
      const cheaper = dir === -1 && p.stage !== undefined;
      if (!await this.#step(name, { ...best.config, [name]: next }, cheaper)) return moved;
      moved = true;
    }
  }

  /**
   * Tries one change against the best; keeps it when it beats the best or, when `cheaper`, when it is as fast as
   * the best within the margin (and within twice the margin of the fastest best so far).
   */
  async #step(name: string, config: Config, cheaper = false): Promise<boolean> {
    const incumbent = this.#best ?? this.#start;
    const before = this.#log.records.length;
    const label = `${paramLabel(name, this.#space[name])} ${config[name]}`;
    const e = await this.#try(config, "descent", label);
    // As fast as the best within noise; and, so that small losses cannot add up step after step, within twice
    // that of the fastest best so far (whose mean, the maximum of noisy means, runs high).
    const peak = this.#wasBest.size > 0 ? this.#peak() : null;
    const asFast = cheaper && peak !== null && e.samples.length > 0 &&
      meanOf(e) >= meanOf(incumbent) * (1 - this.#margin(e, incumbent)) &&
      meanOf(e) >= meanOf(peak) * (1 - 2 * this.#margin(e, peak));
    const better = (this.#beats(e, this.#best) || asFast) && !this.#wasBest.has(e.key);
    if (better || this.#log.records.length > before) this.#record(name, incumbent, e, better);
    if (!better) {
      this.#sinceKept += this.#log.records.length - before;
      if (this.#sinceKept >= this.#opts.patience) {
        throw new Stop(`patience: ${this.#sinceKept} trials in a row kept nothing`);
      }
    }
    return better;
  }
}

function curvePoint(v: number, e: Evaluated, stage: string): CurvePoint {
  const row = e.metrics?.stages.find((s) => s.name === stage);
  return {
    concurrency: v,
    samplesPerSec: e.samples.length > 0 ? meanOf(e) : null,
    stageMeanMs: row?.meanMs ?? null,
    stageItemsPerSec: row?.itemsPerSec ?? null,
    stageBusy: row?.busy ?? null,
  };
}

/** Seconds as `5m`, `1m30s`, `45s`. */
export function fmtDuration(sec: number): string {
  const s = Math.round(sec);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60), r = s % 60;
  return r === 0 ? `${m}m` : `${m}m${r}s`;
}
