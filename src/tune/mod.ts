/**
 * Tuning a loader: {@link tune} is `sluice tune` as a function. It runs each configuration of a module's
 * {@link defineTuning} target in a fresh subprocess, measures samples/s and per-stage figures over a window,
 * finds each stage's contention curve and descends coordinate by coordinate, keeping a change only when it
 * beats the noise; it writes `trials.jsonl`, `report.md`, `best.json` and SVG plots. The target's pieces
 * ({@link defineTuning}, {@link int}, {@link choice}) are here too, for the modules users write.
 *
 * @example Tune the example loader for two minutes
 * ```ts
 * import { tune } from "@sluice/sluice/tune";
 *
 * const { result, dir } = await tune({
 *   module: "examples/video_classification.ts", // exports `tune = defineTuning({...})`
 *   out: "tune-run",
 *   budgetSec: 120,
 *   measureSec: 4,
 *   warmupSec: 1,
 * });
 * console.log(result.best?.config, result.best?.samples, `${dir}/report.md`);
 * ```
 * @module
 */

export {
  choice,
  type ChoiceParam,
  type ChoiceValue,
  type Config,
  type ConfigOf,
  int,
  type IntParam,
  type Param,
  type ParamOptions,
  type SearchSpace,
  type ValueOfParam,
} from "./space.ts";
export { defineTuning, type TrialContext, type TrialLoader, type TuneTarget } from "./target.ts";
export type { StageWindow, TrialMetrics } from "./measure.ts";
export type { TrialOutcome, TrialRequest, TrialRunner } from "./runner.ts";
export type {
  Curve,
  CurvePoint,
  Evaluated,
  Move,
  SearchOptions,
  SearchResult,
  TrialPhase,
  TrialRecord,
} from "./search.ts";
export { tune, type TuneOptions, type TuneResult } from "./tune.ts";
