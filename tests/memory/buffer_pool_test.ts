/**
 * BufferPool: buffers of its size come back for reuse (moved in: whatever still views the old buffer reads as
 * empty), others and those beyond its capacity are freed at once.
 */
import assert from "node:assert/strict";
import { BufferPool } from "../../src/memory/buffer_pool.ts";

Deno.test("buffer pool: a buffer given back is handed out again, and views of it given back read empty", () => {
  const pool = new BufferPool(16, 2);
  assert.equal(pool.take(), undefined);
  const a = new ArrayBuffer(16);
  const kept = new Uint8Array(a);
  kept.fill(7);
  pool.give(a);
  assert.ok(a.detached && kept.length === 0, "the view kept of a buffer given back reads as empty");
  const b = pool.take()!;
  assert.equal(b.byteLength, 16);
  assert.deepEqual([...new Uint8Array(b)], new Array(16).fill(7), "the same memory, contents as left");
  assert.equal(pool.reused, 1);
  assert.equal(pool.size, 0);
});

Deno.test("buffer pool: capacity, other sizes, shared and detached buffers", () => {
  const pool = new BufferPool(8, 2);
  const bufs = [0, 1, 2].map(() => new ArrayBuffer(8));
  for (const b of bufs) pool.give(b);
  assert.equal(pool.size, 2);
  assert.ok(bufs.every((b) => b.detached), "the one beyond capacity is freed (detached) too");
  const other = new ArrayBuffer(9);
  pool.give(other);
  assert.ok(other.detached && pool.size === 2);
  const shared = new SharedArrayBuffer(8);
  pool.give(shared);
  pool.give(bufs[0]); // detached already
  assert.equal(pool.size, 2);
  pool.clear();
  assert.equal(pool.size, 0);
});
