/**
 * The disaggregate runner: flattens each incoming array (or iterable) into its elements, one task per input.
 * @module
 */

import { InvalidArgumentError } from "../errors.ts";
import { describeItem } from "./describe.ts";
import { type BoundedQueue, CLOSED } from "./queue.ts";
import type { DisaggregateSpec, RunContext, Stage } from "./stage.ts";

/** Runs the disaggregate stage for one epoch; closes `output` when its input is drained or the epoch stops. */
export async function runDisaggregate(
  stage: Stage,
  _spec: DisaggregateSpec,
  input: BoundedQueue<unknown>,
  output: BoundedQueue<unknown>,
  ctx: RunContext,
): Promise<void> {
  try {
    for (;;) {
      const item = await stage.take(input, ctx);
      if (item === CLOSED) break;
      if (item === null || typeof item !== "object" || !(Symbol.iterator in item)) {
        const e = new InvalidArgumentError(
          `stage "${stage.name}": disaggregate needs an array or iterable, got ${describeItem(item)}`,
        );
        stage.taskFailed(e, item, ctx);
        continue;
      }
      stage.inFlight++;
      try {
        for (const x of item as Iterable<unknown>) {
          if (ctx.signal.aborted) break;
          await stage.put(output, x);
        }
        stage.done++;
      } catch (e) {
        stage.taskFailed(e, item, ctx); // the iterable itself threw
      } finally {
        stage.inFlight--;
      }
    }
  } finally {
    output.close();
  }
}
