import assert from "node:assert/strict";
import { PipelineBuilder } from "../../src/pipeline/builder.ts";
import { WorkerPool } from "../../src/pipeline/worker_pool.ts";
import { PipelineStoppedError, WorkerCrashedError } from "../../src/errors.ts";

const MOD = import.meta.resolve("./fixtures/worker_mod.ts");

Deno.test("WorkerPool: calls exports, results come back", async () => {
  const pool = new WorkerPool(MOD, { size: 2 });
  try {
    const out = await Promise.all([1, 2, 3, 4, 5].map((x) => pool.call<number>("sleepThenDouble", [x])));
    assert.deepEqual(out, [2, 4, 6, 8, 10]);
    assert.equal(pool.workers, 2);
  } finally {
    await pool.close();
  }
});

Deno.test("WorkerPool: buffers move both ways without copies (sender's copy is detached)", async () => {
  const pool = new WorkerPool(MOD, { size: 1 });
  try {
    const buf = new Uint8Array(1 << 20);
    const r = await pool.call<{ buf: Uint8Array; len: number }>("echo", [buf], [buf.buffer]);
    assert.equal(buf.byteLength, 0, "sent buffer is detached: it moved");
    assert.equal(r.len, 1 << 20);
    assert.equal(r.buf[1], 9);
    const made = await pool.call<{ data: Uint8Array }>("makeBuffer", [1024]);
    assert.equal(made.data.byteLength, 1024);
    assert.equal(made.data[0], 7);
  } finally {
    await pool.close();
  }
});

Deno.test("WorkerPool: an error thrown by the export rejects that call only", async () => {
  const pool = new WorkerPool(MOD, { size: 1 });
  try {
    await assert.rejects(
      pool.call("fails", [3]),
      (e: Error) => e.name === "RangeError" && /bad item 3/.test(e.message),
    );
    await assert.rejects(pool.call("missing", []), /no exported function "missing"/);
    assert.equal(await pool.call("double", [21]), 42);
    assert.equal(pool.crashes, 0);
  } finally {
    await pool.close();
  }
});

for (const name of ["crashAsync", "exitWorker", "closeWorker"]) {
  Deno.test(`WorkerPool: a worker that dies (${name}) fails its task with WorkerCrashedError and is replaced`, async () => {
    const pool = new WorkerPool(MOD, { size: 1 });
    try {
      await assert.rejects(pool.call(name, []), WorkerCrashedError);
      assert.equal(pool.crashes, 1);
      assert.equal(await pool.call("double", [4]), 8);
      assert.equal(pool.workers, 1);
    } finally {
      await pool.close();
    }
  });
}

Deno.test("WorkerPool: close rejects queued calls and terminates workers", async () => {
  const pool = new WorkerPool(MOD, { size: 1 });
  const a = assert.rejects(pool.call("sleepThenDouble", [1]), PipelineStoppedError);
  const b = assert.rejects(pool.call("sleepThenDouble", [2]), PipelineStoppedError);
  await pool.close();
  await a;
  await b;
  assert.equal(pool.workers, 0);
});

Deno.test("WorkerPool: close runs the module's release export in every Worker before terminating it", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const pool = new WorkerPool(MOD, { size: 2 });
    await Promise.all([pool.call("sleepThenDouble", [1]), pool.call("sleepThenDouble", [2])]); // start both
    await pool.callEach("setReleaseMarker", [dir]);
    await pool.close();
    const names = [...Deno.readDirSync(dir)].map((e) => e.name).sort();
    assert.deepEqual(names, ["sluice-pool-0", "sluice-pool-1"]);
    assert.equal(pool.workers, 0);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("WorkerPool: a release export that never returns delays close only by releaseTimeoutMs", async () => {
  const pool = new WorkerPool(MOD, { size: 1, releaseTimeoutMs: 50 });
  await pool.call("setReleaseMarker", ["/nonexistent", true]);
  await pool.close(); // resolves: the Worker is terminated when the timeout fires
  assert.equal(pool.workers, 0);
});

Deno.test("pipeline + WorkerPool: export names as stages, crash recovery, workers gone after the epoch", async () => {
  const pool = new WorkerPool(MOD, { size: 2 });
  const logs: string[] = [];
  const p = new PipelineBuilder()
    .addSource([1, 2, 3, 4, 5, 6])
    .pipe<number>("crashOnThree", { executor: pool, name: "work", ordered: true, maxFailures: 1 })
    .build({ log: (m) => logs.push(m) });
  const out: number[] = [];
  for await (const x of p) out.push(x);
  assert.deepEqual(out, [2, 4, 8, 10, 12]);
  const s = p.stats().stages[1];
  assert.equal(s.failed, 1);
  assert.equal(s.concurrency, 2);
  assert.match(logs[0], /stage "work" failed on 3: WorkerCrashedError/);
  assert.equal(pool.crashes, 1);
  assert.equal(pool.workers, 0, "a finished (non-continuous) pipeline terminates its workers");
});

Deno.test("pipeline + WorkerPool: stop() mid-epoch terminates workers", async () => {
  const pool = new WorkerPool(MOD, { size: 2 });
  const p = new PipelineBuilder()
    .addSource(Array.from({ length: 100 }, (_, i) => i), { continuous: true })
    .pipe<number>("sleepThenDouble", { executor: pool })
    .build();
  for await (const _ of p) break;
  await p.stop();
  assert.equal(pool.workers, 0);
  assert.equal(p.stats().stages[1].inFlight, 0);
});

Deno.test("WorkerPool: callEach runs once in every Worker, after its current task", async () => {
  const pool = new WorkerPool(MOD, { size: 2 });
  try {
    assert.deepEqual(await pool.callEach("workerName"), [], "no Workers yet: no calls");
    const busy = [pool.call<number>("sleepThenDouble", [1]), pool.call<number>("sleepThenDouble", [2])];
    const names = await pool.callEach<string>("workerName");
    assert.deepEqual(names, ["sluice-pool-0", "sluice-pool-1"]);
    assert.deepEqual(await Promise.all(busy), [2, 4]);
    assert.deepEqual(await pool.callEach<number>("double", [21]), [42, 42]);
  } finally {
    await pool.close();
  }
});
