/**
 * The runner of each stage kind: how a stage of that kind moves items from its input queue to its output queue
 * for one epoch. The pipeline picks a stage's runner here and hands it to `Stage.run`.
 * @module
 */

import { runAggregate } from "./run_aggregate.ts";
import { runDisaggregate } from "./run_disaggregate.ts";
import { runPipe } from "./run_pipe.ts";
import { runSource } from "./run_source.ts";
import type { AggregateSpec, DisaggregateSpec, PipeSpec, SourceSpec, StageRunner } from "./stage.ts";
import type { StageKind } from "./stats.ts";

/** One runner per stage kind. */
export const RUNNERS: Readonly<Record<StageKind, StageRunner>> = {
  source: (stage, _input, output, ctx) => runSource(stage, stage.spec as SourceSpec, output, ctx),
  pipe: (stage, input, output, ctx) => runPipe(stage, stage.spec as PipeSpec, input!, output, ctx),
  aggregate: (stage, input, output, ctx) =>
    runAggregate(stage, stage.spec as AggregateSpec, input!, output, ctx),
  disaggregate: (stage, input, output, ctx) =>
    runDisaggregate(stage, stage.spec as DisaggregateSpec, input!, output, ctx),
};
