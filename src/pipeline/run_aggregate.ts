/**
 * The aggregate runner: groups items into arrays of `size`, emitting a shorter last batch unless `dropLast`.
 * Items of the batch being filled are counted as `held`.
 * @module
 */

import { type BoundedQueue, CLOSED } from "./queue.ts";
import type { AggregateSpec, RunContext, Stage } from "./stage.ts";

/** Runs the aggregate stage for one epoch; closes `output` when its input is drained or the epoch stops. */
export async function runAggregate(
  stage: Stage,
  spec: AggregateSpec,
  input: BoundedQueue<unknown>,
  output: BoundedQueue<unknown>,
  ctx: RunContext,
): Promise<void> {
  let batch: unknown[] = [];
  try {
    for (;;) {
      const item = await stage.take(input, ctx);
      if (item === CLOSED) break;
      stage.held++;
      batch.push(item);
      if (batch.length < spec.size) continue;
      const full = batch;
      batch = [];
      await emit(stage, output, full);
    }
    if (batch.length > 0 && !ctx.signal.aborted) {
      const last = batch;
      batch = [];
      if (spec.dropLast) {
        stage.held -= last.length;
        stage.dropped += last.length;
      } else {
        await emit(stage, output, last);
      }
    }
  } finally {
    // Stopped mid-batch: the partial batch is cancelled, not carried into the next epoch.
    stage.held -= batch.length;
    stage.cancelled += batch.length;
    output.close();
  }
}

async function emit(stage: Stage, output: BoundedQueue<unknown>, batch: unknown[]): Promise<void> {
  await stage.put(output, batch);
  stage.held -= batch.length;
  stage.done += batch.length;
}
