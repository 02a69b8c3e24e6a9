/**
 * Worker module for examples/pipeline_basics.ts: every export can be a pipeline stage run by a WorkerPool.
 * @module
 */

/** Sums the bytes of a buffer (runs inside a Worker; the buffer was transferred, not copied). */
export function checksum(data: Uint8Array): number {
  let sum = 0;
  for (let i = 0; i < data.length; i++) sum = (sum + data[i]) | 0;
  return sum;
}
