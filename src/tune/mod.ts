/**
 * `sluice tune`'s public parts: the search space (`int`, `choice`), the module contract (`defineTuning`,
 * `TuneTarget`), and `tune()`, the whole search as a function.
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
