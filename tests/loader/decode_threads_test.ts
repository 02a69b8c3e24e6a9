/** Idle cores as FFmpeg threads (issue 14 §3): the pure decision and the token budget that keeps it ≤ cores. */
import assert from "node:assert/strict";
import { decodeThreads, ThreadBudget } from "../../src/loader/decode/decode_threads.ts";

Deno.test("decodeThreads: the idle cores left after one per clip still to come, at least one", () => {
  // Mid-epoch: more clips to come than idle cores: one thread each.
  assert.equal(decodeThreads(2, 0, 5), 1);
  assert.equal(decodeThreads(16, 3, 40), 1);
  // The last clip of an epoch on an idle machine: every core.
  assert.equal(decodeThreads(2, 0, 0), 2);
  assert.equal(decodeThreads(16, 0, 0), 16);
  // Tail: 10 of 16 cores busy, 2 clips to come: 4 threads, leaving one core for each of them.
  assert.equal(decodeThreads(16, 10, 2), 4);
  // Busy machine: never less than one.
  assert.equal(decodeThreads(2, 2, 0), 1);
  assert.equal(decodeThreads(2, 5, 3), 1);
});

Deno.test("ThreadBudget: never more threads than tokens; a task finding none free waits, first come first served", async () => {
  const b = new ThreadBudget(2);
  assert.equal(await b.acquire(2), 2);
  assert.equal(b.busy, 2);
  const order: string[] = [];
  const x = b.acquire(1).then((n) => (order.push(`x${n}`), n));
  const y = b.acquire(2).then((n) => (order.push(`y${n}`), n));
  await Promise.resolve();
  assert.deepEqual(order, [], "none free: both wait");
  b.release(1);
  assert.equal(await x, 1);
  assert.equal(b.busy, 2);
  b.release(1); // one of the first task's
  assert.equal(await y, 1, "only one free: y gets one");
  assert.deepEqual(order, ["x1", "y1"]);
  b.release(1);
  b.release(1);
  assert.equal(b.busy, 0);
  // Asking for more than there are gives what there is.
  assert.equal(await b.acquire(8), 2);
});
