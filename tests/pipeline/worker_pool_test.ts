import assert from "node:assert/strict";
import { PipelineBuilder } from "../../src/pipeline/builder.ts";
import { WorkerPool } from "../../src/pipeline/worker_pool.ts";
import {
  FetchError,
  InvalidArgumentError,
  MediaError,
  PipelineFailure,
  PipelineStoppedError,
  ProtocolError,
  WorkerCrashedError,
} from "../../src/errors.ts";

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

Deno.test("WorkerPool: close lets a running call finish before the release export runs and the Worker ends", async () => {
  const pool = new WorkerPool(MOD, { size: 1, releaseTimeoutMs: 5000 });
  const turns = new Int32Array(new SharedArrayBuffer(12));
  await pool.call("recordOrder", [turns.buffer]);
  const slow = pool.call("slowTask", [300]).catch((e) => e);
  await new Promise((r) => setTimeout(r, 50)); // the task is awaiting inside the Worker
  await pool.close();
  assert.ok((await slow) instanceof PipelineStoppedError, "the caller is told the pool stopped");
  // The task ended (turn 1) before the release ran (turn 2), both before close() resolved: no release under a
  // running task, and nothing of it still running once its owner frees what it writes into.
  assert.deepEqual([turns[0], turns[1]], [1, 2]);
});

Deno.test("WorkerPool: a second close() while the first runs also waits until every Worker has ended", async () => {
  const pool = new WorkerPool(MOD, { size: 1, releaseTimeoutMs: 5000 });
  const turns = new Int32Array(new SharedArrayBuffer(12));
  await pool.call("recordOrder", [turns.buffer]);
  const slow = pool.call("slowTask", [300]).catch((e) => e);
  await new Promise((r) => setTimeout(r, 50));
  const first = pool.close(); // e.g. the pipeline closing its executors when it stops
  await pool.close(); // and the loader's own close right after: its caller frees what the Workers wrote into
  assert.deepEqual([turns[0], turns[1]], [1, 2], "the second close returned before the Worker had released");
  await first;
  await slow;
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

Deno.test("WorkerPool: errors thrown in a Worker keep their class, fields and cause chain", async () => {
  const pool = new WorkerPool(MOD, { size: 1 });
  try {
    const media = await pool.call("throwTyped", ["media"]).then(() => undefined, (e) => e);
    assert.ok(media instanceof MediaError, `got ${media?.constructor?.name}: ${media}`);
    assert.equal(media.source, "clip.mp4");
    assert.equal(media.operation, "decode");
    assert.equal(media.reason, "no frame in window");
    assert.equal(media.code, undefined);
    assert.equal(
      media.message,
      "clip.mp4: decode failed: no frame in window",
      "the message is not rewritten",
    );
    assert.ok(media.cause instanceof MediaError);
    assert.equal(media.cause.code, -1094995529);
    assert.match(media.stack ?? "", /worker_mod\.ts/, "the Worker's stack is kept");
    assert.match(media.stack ?? "", /export "throwTyped"/, "where it ran is in the stack");
    const fetch = await pool.call("throwTyped", ["fetch"]).then(() => undefined, (e) => e);
    assert.ok(fetch instanceof FetchError);
    assert.deepEqual([fetch.status, fetch.attempts], [503, 3]);
    const proto = await pool.call("throwTyped", ["protocol"]).then(() => undefined, (e) => e);
    assert.ok(proto instanceof ProtocolError);
    assert.equal(proto.offset, 4);
    const arg = await pool.call("throwTyped", ["?"]).then(() => undefined, (e) => e);
    assert.ok(arg instanceof InvalidArgumentError && arg.cause instanceof MediaError);
    // An uncaught error that kills the Worker: WorkerCrashedError, with the typed error as its cause.
    const crash = await pool.call("crashTyped").then(() => undefined, (e) => e);
    assert.ok(crash instanceof WorkerCrashedError);
    assert.ok(crash.cause instanceof MediaError, String(crash.cause));
    assert.equal(crash.cause.source, "late.mp4");
  } finally {
    await pool.close();
  }
});

Deno.test("pipeline + WorkerPool: a stage's failures keep their class in PipelineFailure", async () => {
  const pool = new WorkerPool(MOD, { size: 1 });
  const p = new PipelineBuilder()
    .addSource(["media"])
    .pipe("throwTyped", { executor: pool, name: "decode", maxFailures: 0 })
    .build({ log: () => {} });
  const err = await (async () => {
    for await (const _ of p) { /* */ }
  })().then(() => undefined, (e) => e);
  assert.ok(err instanceof PipelineFailure);
  assert.ok(err.cause instanceof MediaError);
  assert.ok(err.errors[0].error instanceof MediaError);
});

Deno.test("WorkerPool.resize: growing starts queued calls at once", async () => {
  const pool = new WorkerPool(MOD, { size: 1 });
  try {
    const calls = [
      pool.call<string>("nap", [300]),
      pool.call<string>("nap", [10]),
      pool.call<string>("nap", [10]),
    ];
    assert.equal(pool.workers, 1, "two calls wait in the queue");
    pool.resize(3);
    assert.equal(pool.size, 3);
    assert.equal(pool.workers, 3, "the queued calls got Workers of their own");
    const names = await Promise.all(calls);
    assert.deepEqual(names, ["sluice-pool-0", "sluice-pool-1", "sluice-pool-2"]);
  } finally {
    await pool.close();
  }
});

Deno.test("WorkerPool.resize: shrinking lets running tasks finish, retires idle Workers at once (with release)", async () => {
  const dir = await Deno.makeTempDir();
  const pool = new WorkerPool(MOD, { size: 3 });
  try {
    await Promise.all([pool.call("nap", [1]), pool.call("nap", [1]), pool.call("nap", [1])]); // start three
    await pool.callEach("setReleaseMarker", [dir]);
    const running = [
      pool.call<string>("nap", [200]),
      pool.call<string>("nap", [200]),
      pool.call<string>("nap", [200]),
    ];
    pool.resize(1);
    assert.equal(pool.workers, 3, "busy Workers are not cut short");
    const queued = pool.call<string>("nap", [1]);
    assert.deepEqual((await Promise.all(running)).sort(), [
      "sluice-pool-0",
      "sluice-pool-1",
      "sluice-pool-2",
    ]);
    await queued;
    assert.equal(pool.workers, 1, "Workers above the new size retire as their tasks end");
    pool.resize(3);
    await Promise.all([pool.call("nap", [50]), pool.call("nap", [50]), pool.call("nap", [50])]);
    assert.equal(pool.workers, 3);
    await pool.callEach("setReleaseMarker", [dir]);
    pool.resize(2); // all idle: one retires now
    assert.equal(pool.workers, 2);
    await pool.close();
    assert.equal([...Deno.readDirSync(dir)].length, 5, "every retired Worker ran the release export");
  } finally {
    await pool.close();
    await Deno.remove(dir, { recursive: true });
  }
  assert.throws(() => pool.resize(0), InvalidArgumentError);
});

Deno.test("WorkerPool.reserve: a stage raised above the pool's size grows it; shared pools follow the largest claim", async () => {
  const pool = new WorkerPool(MOD, { size: 1 });
  let maxWorkers = 0;
  const p = new PipelineBuilder()
    .addSource(Array.from({ length: 30 }, (_, i) => i))
    .pipe<string>("nap", { executor: pool, name: "a", concurrency: 1 })
    .pipe((name: string) => name.length, { name: "b" })
    .build();
  let n = 0;
  for await (const _ of p) {
    if (++n === 3) p.stage("a").setConcurrency(3);
    maxWorkers = Math.max(maxWorkers, pool.workers);
  }
  assert.equal(pool.size, 3);
  assert.equal(maxWorkers, 3, "three Workers ran once the stage asked for three");

  const shared = new WorkerPool(MOD, { size: 1 });
  const q = new PipelineBuilder()
    .addSource([1, 2, 3, 4])
    .pipe<number>("double", { executor: shared, name: "first", concurrency: 2 })
    .pipe<number>("double", { executor: shared, name: "second", concurrency: 3 })
    .build();
  const out: number[] = [];
  for await (const x of q) out.push(x);
  assert.deepEqual(out.sort((a, b) => a - b), [4, 8, 12, 16]);
  assert.equal(shared.size, 3, "the largest claim, not the sum");
  q.stage("second").setConcurrency(1);
  assert.equal(shared.size, 2, "lowering a claim shrinks the pool back to the next largest");
  await shared.close();
});
