import assert from "node:assert/strict";
import { BoundedQueue, CLOSED, EMPTY } from "../../src/pipeline/queue.ts";

Deno.test("queue: FIFO, bound, waiting producer admitted on get", async () => {
  const q = new BoundedQueue<number>(2);
  assert.equal(q.tryPut(1), true);
  assert.equal(q.tryPut(2), true);
  assert.equal(q.tryPut(3), false);
  let admitted = false;
  const p = q.put(3).then((ok) => admitted = ok);
  assert.equal(q.waitingPuts, 1);
  assert.equal(q.tryGet(), 1);
  await p;
  assert.equal(admitted, true);
  assert.equal(q.tryGet(), 2);
  assert.equal(q.tryGet(), 3);
  assert.equal(q.tryGet(), EMPTY);
});

Deno.test("queue: waiting consumer gets the next put; close drains then CLOSED", async () => {
  const q = new BoundedQueue<string>(1);
  const g = q.get();
  q.tryPut("a");
  assert.equal(await g, "a");
  q.tryPut("b");
  q.close();
  assert.equal(await q.get(), "b");
  assert.equal(await q.get(), CLOSED);
});

Deno.test("queue: abort discards and releases everyone", async () => {
  const q = new BoundedQueue<number>(1);
  q.tryPut(1);
  const put = q.put(2);
  const dropped = q.abort();
  assert.deepEqual(dropped, [1, 2]);
  assert.equal(await put, false);
  assert.equal(await q.get(), CLOSED);
});

Deno.test("queue: raising the capacity admits waiting producers", async () => {
  const q = new BoundedQueue<number>(1);
  q.tryPut(1);
  const p = q.put(2);
  q.capacity = 3;
  assert.equal(await p, true);
  assert.equal(q.length, 2);
});

Deno.test("queue: counters report occupancy", () => {
  const q = new BoundedQueue<number>(2);
  q.tryPut(1);
  q.tryPut(2);
  const c = q.counters();
  assert.equal(c.length, 2);
  assert.equal(c.capacity, 2);
  assert.ok(c.fullFraction >= 0 && c.fullFraction <= 1);
});
