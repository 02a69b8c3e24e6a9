/**
 * The source runner: pulls the source iterator only as fast as its output queue drains (backpressure reaches the
 * source), timing each pull as the source's work.
 * @module
 */

import type { BoundedQueue } from "./queue.ts";
import { isAsyncIterable, isThenable } from "./results.ts";
import type { RunContext, SourceSpec, Stage } from "./stage.ts";

/** Runs the source for one epoch; closes `output` when the source ends, throws, or the epoch stops. */
export async function runSource(
  stage: Stage,
  spec: SourceSpec,
  output: BoundedQueue<unknown>,
  ctx: RunContext,
): Promise<void> {
  const src = spec.source;
  const it = isAsyncIterable(src)
    ? src[Symbol.asyncIterator]()
    : (src as Iterable<unknown>)[Symbol.iterator]();
  const aborted = abortPromise(ctx.signal);
  let finished = false;
  try {
    while (!ctx.signal.aborted) {
      const t0 = stage.workStarted();
      let r: IteratorResult<unknown> | Promise<IteratorResult<unknown>>;
      try {
        r = it.next();
        if (isThenable(r)) {
          const raced = await Promise.race([r, aborted.promise]);
          if (raced === undefined) break;
          r = raced;
        }
      } finally {
        stage.record(stage.workEnded() - t0);
      }
      if (r.done) {
        finished = true;
        break;
      }
      stage.tasksIn++;
      stage.done++;
      await stage.put(output, r.value);
    }
  } catch (e) {
    finished = true;
    stage.failed++;
    stage.remember(e, "the source iterator");
    ctx.fail(stage, e);
  } finally {
    aborted.dispose();
    if (!finished) closeIterator(it);
    output.close();
  }
}

function abortPromise(signal: AbortSignal): { promise: Promise<undefined>; dispose(): void } {
  let onAbort: (() => void) | undefined;
  const promise = new Promise<undefined>((resolve) => {
    onAbort = () => resolve(undefined);
    if (signal.aborted) resolve(undefined);
    else signal.addEventListener("abort", onAbort, { once: true });
  });
  return { promise, dispose: () => signal.removeEventListener("abort", onAbort!) };
}

function closeIterator(it: Iterator<unknown> | AsyncIterator<unknown>): void {
  try {
    const r = it.return?.();
    if (isThenable(r)) (r as Promise<unknown>).then(undefined, () => {});
  } catch {
    // The source's own cleanup failed while stopping; nothing left to report it to.
  }
}
