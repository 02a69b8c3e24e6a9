// Latency models for the auto-concurrency tests (issue 15's contention-knee harness).

/** Per-item latency (ms) with n tasks in flight: base·(1 + a·(n−1) + max(0, k^(n−knee) − 1)). */
export function kneeLatency(base: number, a: number, k: number, knee: number): (n: number) => number {
  return (n) => base * (1 + a * (n - 1) + Math.max(0, k ** (n - knee) - 1));
}
