import assert from "node:assert/strict";
import { WorkerPool } from "../../src/pipeline/worker_pool.ts";
import { PoolLease } from "../../src/pipeline/pool_lease.ts";

const MOD = import.meta.resolve("./fixtures/worker_mod.ts");

Deno.test("WorkerPool: a queued call whose task's signal aborts leaves the queue; a running one finishes", async () => {
  const pool = new WorkerPool(MOD, { size: 1 });
  try {
    const ac = new AbortController();
    const running = pool.run("nap", 200, { signal: ac.signal, stage: "s" });
    const queued = pool.run("nap", 10, { signal: ac.signal, stage: "s" });
    const other = pool.run("nap", 10, { signal: new AbortController().signal, stage: "s" });
    await new Promise((r) => setTimeout(r, 50));
    ac.abort(new Error("stop"));
    await assert.rejects(queued, /stop/);
    assert.equal(typeof await running, "string", "the running call is not cut short");
    assert.equal(typeof await other, "string", "the next call runs in its place");
  } finally {
    await pool.close();
  }
});

Deno.test("PoolLease: closing one lease ends its calls only; the pool and other leases go on", async () => {
  const pool = new WorkerPool(MOD, { size: 1 });
  try {
    const a = new PoolLease(pool), b = new PoolLease(pool);
    const signal = new AbortController().signal;
    const aRunning = a.run("nap", 150, { signal, stage: "decode" });
    const aQueued = a.run("nap", 10, { signal, stage: "decode" });
    const bQueued = b.run("nap", 10, { signal, stage: "decode" });
    await new Promise((r) => setTimeout(r, 30));
    const t0 = performance.now();
    await a.close();
    // close waited for a's running call (nothing of a still runs), and took a's queued one out
    assert.ok(performance.now() - t0 > 50, "close returned before a's running call ended");
    assert.equal(typeof await aRunning, "string");
    await assert.rejects(aQueued);
    assert.equal(a.inFlight, 0);
    assert.equal(typeof await bQueued, "string", "b's call ran on the pool a left running");
    // a works again after closing, and its stage waited for the Worker (b's and its own waits kept apart)
    assert.equal(typeof await a.run("nap", 1, { signal, stage: "decode" }), "string");
    assert.ok(b.waitMs("decode") > 100, `b waited behind a: ${b.waitMs("decode")} ms`);
    assert.ok(a.waitMs("decode") < b.waitMs("decode"));
    // a lease's claims never grow the shared pool
    a.reserve("decode", 8);
    assert.equal(pool.size, 1);
  } finally {
    await pool.close();
  }
});
