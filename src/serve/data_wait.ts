/**
 * How long a trainer waited for its batches, as its client measured them: each step's wait from asking for the
 * next batch to having it (the Python client's `data_wait_ms`), reported with its next `release` or `stats`
 * message (`waits`, docs/serve_protocol.md). A session keeps them as a histogram (the Prometheus metric
 * `sluice_data_wait_seconds`, `metrics.ts`) and a summary (its `stats`).
 * @module
 */

/** Upper bounds of the histogram's buckets, seconds (Prometheus' `le`; `+Inf` is implied). */
export const WAIT_BUCKETS_S: readonly number[] = [
  0.001,
  0.0025,
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.25,
  0.5,
  1,
  2.5,
  5,
  10,
];

/** A session's data waits so far. */
export interface DataWaitStats {
  /** Steps reported. */
  count: number;
  /** Their waits summed, ms. */
  sumMs: number;
  /** The last step's wait, ms (0 before any). */
  lastMs: number;
  /** The longest, ms. */
  maxMs: number;
  /** Steps whose wait was at most each of {@link WAIT_BUCKETS_S} (cumulative, as Prometheus counts them). */
  buckets: number[];
}

/** The data waits a client reported; see the module docs. */
export class DataWaits {
  readonly #buckets = new Array<number>(WAIT_BUCKETS_S.length).fill(0);
  #count = 0;
  #sumMs = 0;
  #lastMs = 0;
  #maxMs = 0;

  /** Adds waits (ms, checked by the protocol: finite, at least 0). */
  record(waits: readonly number[]): void {
    for (const ms of waits) {
      this.#count++;
      this.#sumMs += ms;
      this.#lastMs = ms;
      if (ms > this.#maxMs) this.#maxMs = ms;
      const i = WAIT_BUCKETS_S.findIndex((b) => ms <= b * 1000);
      if (i >= 0) this.#buckets[i]++;
    }
  }

  /** The waits so far (buckets cumulative). */
  stats(): DataWaitStats {
    let run = 0;
    const buckets = this.#buckets.map((n) => run += n);
    return { count: this.#count, sumMs: this.#sumMs, lastMs: this.#lastMs, maxMs: this.#maxMs, buckets };
  }
}
