/**
 * A streaming latency sketch: a fixed log-bucketed histogram. Recording a value is a few arithmetic
 * operations and one array increment, with no allocation, so it can stay on for every task.
 * @module
 */

/** Smallest value (milliseconds) the sketch tells apart: 1 µs. */
const MIN_MS = 0.001;
/** Relative width of one bucket: values within ~4% share a bucket. */
const GROWTH = 1.04;
const LOG_GROWTH = Math.log(GROWTH);
/** Buckets cover 1 µs .. ~20 h; larger values share the last bucket (reported as the max). */
const BUCKETS = 640;

/**
 * Streaming percentiles over durations in milliseconds, with about 2% relative error.
 * Memory is fixed (one `Uint32Array`), `record` never allocates.
 */
export class LatencySketch {
  readonly #counts = new Uint32Array(BUCKETS);
  #n = 0;
  #sum = 0;
  #max = 0;

  /** Adds one observation (milliseconds). */
  record(ms: number): void {
    this.#n++;
    this.#sum += ms;
    if (ms > this.#max) this.#max = ms;
    this.#counts[bucketOf(ms)]++;
  }

  /** Number of observations so far. */
  get count(): number {
    return this.#n;
  }

  /** Mean of the observations (0 when empty). */
  get mean(): number {
    return this.#n === 0 ? 0 : this.#sum / this.#n;
  }

  /** Largest observation (0 when empty). */
  get max(): number {
    return this.#max;
  }

  /** The value below which a fraction `q` (0..1) of observations fall; 0 when empty. */
  quantile(q: number): number {
    if (this.#n === 0) return 0;
    const rank = Math.max(1, Math.ceil(q * this.#n));
    let seen = 0;
    for (let i = 0; i < BUCKETS; i++) {
      seen += this.#counts[i];
      if (seen >= rank) return i === BUCKETS - 1 ? this.#max : Math.min(valueOf(i), this.#max);
    }
    return this.#max;
  }

  /** Forgets every observation. */
  reset(): void {
    this.#counts.fill(0);
    this.#n = 0;
    this.#sum = 0;
    this.#max = 0;
  }
}

function bucketOf(ms: number): number {
  if (!(ms > MIN_MS)) return 0;
  const i = Math.ceil(Math.log(ms / MIN_MS) / LOG_GROWTH);
  return i >= BUCKETS ? BUCKETS - 1 : i;
}

/** Representative value of bucket `i`: the geometric middle of its range. */
function valueOf(i: number): number {
  if (i === 0) return MIN_MS;
  return MIN_MS * Math.pow(GROWTH, i - 0.5);
}
