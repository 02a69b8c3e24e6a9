/**
 * `WaitLedger`: the time each stage's tasks spend waiting for a capacity that stages share, such as a free Worker
 * of a `WorkerPool` that two stages run on (the loader's demux and decode, in-process) or a thread token another
 * task holds. A stage's task is busy from its start to its end, so without this a task queued behind another
 * stage's work looks like work: the waiting stage reads busy 99% while the stage holding the Workers is the one
 * that limits throughput. The stage's busy time subtracts what its tasks waited (`Executor.waitMs`, read by
 * `Stage.busyMs`), so the verdict (`bottleneck.ts`) names the stage that holds the capacity.
 *
 * Waits are counted per stage name, integrated over time (several tasks of a stage waiting at once add up, as
 * their busy time does), in `performance.now()` milliseconds (the real clock's).
 * @module
 */

interface StageWaits {
  /** Waits under way now. */
  waiting: number;
  /** Integral of `waiting` over time up to `since`, ms. */
  ms: number;
  since: number;
}

/** Per-stage wait time; see the module docs. */
export class WaitLedger {
  readonly #stages = new Map<string, StageWaits>();

  /**
   * A task of a stage starts waiting.
   * @param stage the stage's name
   * @returns the function to call when the wait ends (calls after the first do nothing)
   */
  begin(stage: string): () => void {
    const s = this.#advance(stage);
    s.waiting++;
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.#advance(stage).waiting--;
    };
  }

  /**
   * Awaits a promise as a wait of a stage: the time until it settles counts as waiting, not work.
   * @param stage the stage's name
   * @param p what the task waits for (a free Worker, a thread token)
   * @returns what `p` resolves to
   * @throws what `p` rejects with (the wait ends all the same)
   */
  async during<T>(stage: string, p: Promise<T>): Promise<T> {
    const end = this.begin(stage);
    try {
      return await p;
    } finally {
      end();
    }
  }

  /**
   * How long a stage's tasks have waited.
   * @param stage the stage's name
   * @param now the time to count up to, `performance.now()` ms (default: now)
   * @returns milliseconds waited, summed over its tasks, waits under way included; 0 for a stage never seen
   */
  ms(stage: string, now: number = performance.now()): number {
    const s = this.#stages.get(stage);
    return s === undefined ? 0 : s.ms + s.waiting * (now - s.since);
  }

  #advance(stage: string): StageWaits {
    const now = performance.now();
    let s = this.#stages.get(stage);
    if (s === undefined) this.#stages.set(stage, s = { waiting: 0, ms: 0, since: now });
    s.ms += s.waiting * (now - s.since);
    s.since = now;
    return s;
  }
}
