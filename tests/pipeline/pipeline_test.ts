import assert from "node:assert/strict";
import { PipelineBuilder } from "../../src/pipeline/builder.ts";
import type { Pipeline } from "../../src/pipeline/pipeline.ts";
import type { PipelineStats } from "../../src/pipeline/stats.ts";
import { InvalidArgumentError, PipelineFailure } from "../../src/errors.ts";
import { formatStats } from "../../src/pipeline/format_stats.ts";
import type { PipelineEvent } from "../../src/pipeline/hooks.ts";
import { FakeClock } from "../helpers/fake_clock.ts";

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const range = (n: number) => Array.from({ length: n }, (_, i) => i);
const quiet = { log: () => {} };

async function collect<T>(p: Pipeline<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of p) out.push(x);
  return out;
}

/** Every stage accounts for every item it took in. */
function assertAccounting(stats: PipelineStats): void {
  for (const s of stats.stages) {
    const accounted = s.done + s.dropped + s.failed + s.cancelled + s.inFlight + s.held;
    assert.equal(s.tasksIn, accounted, `stage ${s.name}: ${JSON.stringify(s)}`);
  }
}

/** Deterministic pseudo-random latencies. */
function lcg(seed: number): () => number {
  return () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
}

Deno.test("ordered: input order under random task latencies", async () => {
  const rnd = lcg(7);
  const p = new PipelineBuilder()
    .addSource(range(60))
    .pipe(async (x: number) => {
      await sleep(rnd() * 8);
      return x;
    }, { concurrency: 8, ordered: true })
    .build();
  assert.deepEqual(await collect(p), range(60));
  assertAccounting(p.stats());
});

Deno.test("unordered: completion order, nothing lost", async () => {
  const p = new PipelineBuilder()
    .addSource(range(20))
    .pipe(async (x: number) => {
      await sleep(x % 2 === 0 ? 10 : 0);
      return x;
    }, { concurrency: 4 })
    .build();
  const out = await collect(p);
  assert.notDeepEqual(out, range(20));
  assert.deepEqual([...out].sort((a, b) => a - b), range(20));
});

Deno.test("concurrency: N slow tasks at concurrency N all run at once", async () => {
  const n = 8;
  let running = 0;
  let maxRunning = 0;
  const p = new PipelineBuilder().addSource(range(n)).pipe(async (x: number) => {
    running++;
    maxRunning = Math.max(maxRunning, running);
    await sleep(20);
    running--;
    return x;
  }, { concurrency: n }).build();
  assert.equal((await collect(p)).length, n);
  assert.equal(maxRunning, n, "every task was in flight at the same time");
});

Deno.test("bounded memory: a lazy 10^6 x 1 MB source never has more items alive than the queue bounds", async () => {
  let alive = 0;
  let maxAlive = 0;
  let produced = 0;
  function* source() {
    for (let i = 0; i < 1_000_000; i++) {
      produced++;
      alive++;
      maxAlive = Math.max(maxAlive, alive);
      yield { i, mb: 1 }; // stands for a 1 MB buffer: counted, not allocated
    }
  }
  const conc = 2;
  const p = new PipelineBuilder()
    .addSource(source())
    .pipe((x: { i: number }) => x, { concurrency: conc, name: "fast" })
    .pipe(async (x: { i: number }) => {
      await sleep(1);
      return x;
    }, { concurrency: conc, name: "slow" })
    .addSink({ bufferSize: 3 })
    .build();
  let consumed = 0;
  for await (const _ of p) {
    alive--;
    if (++consumed === 100) break;
  }
  // queues: fast.in (2+2) + slow.in (2+2) + sink 3; in flight: 2 + 2; one item held by each producer waiting to put.
  const bound = (conc + 2) * 2 + 3 + conc * 2 + 3;
  assert.ok(maxAlive <= bound, `max alive ${maxAlive} > bound ${bound}`);
  assert.ok(produced < 100 + bound + 1, `produced ${produced}`);
  assertAccounting(p.stats());
});

Deno.test("drops: undefined drops the item and is counted", async () => {
  const p = new PipelineBuilder().addSource(range(10)).pipe((x: number) => x % 2 ? x : undefined).build();
  assert.deepEqual(await collect(p), [1, 3, 5, 7, 9]);
  const s = p.stats().stages[1];
  assert.equal(s.dropped, 5);
  assert.equal(s.done, 5);
  assertAccounting(p.stats());
});

Deno.test("generators: many outputs per input", async () => {
  const p = new PipelineBuilder()
    .addSource([1, 2, 3])
    .pipe(async function* (x: number) {
      for (let i = 0; i < x; i++) yield x;
    }, { ordered: true, concurrency: 2 })
    .build();
  assert.deepEqual(await collect(p), [1, 2, 2, 3, 3, 3]);
  const s = p.stats().stages[1];
  assert.equal(s.itemsOut, 6);
  assert.equal(s.done, 3);
});

Deno.test("failures: counted, logged once each, item dropped, invariant holds", async () => {
  const logs: string[] = [];
  const p = new PipelineBuilder()
    .addSource(range(30))
    .pipe((x: number) => {
      if (x % 5 === 0) throw new Error(`bad ${x}`);
      return x;
    }, { name: "picky", concurrency: 3, maxFailures: 10 })
    .build({ log: (m) => logs.push(m) });
  const out = await collect(p);
  assert.equal(out.length, 24);
  const s = p.stats().stages[1];
  assert.equal(s.failed, 6);
  assert.equal(logs.length, 6);
  assert.match(logs[0], /stage "picky" failed on 0: Error: bad 0/);
  assert.equal(s.tasksIn, s.done + s.failed);
  assertAccounting(p.stats());
});

Deno.test("maxFailures: a count ends the pipeline with PipelineFailure", async () => {
  const p = new PipelineBuilder()
    .addSource(range(100))
    .pipe((x: number) => {
      if (x >= 10) throw new Error(`bad ${x}`);
      return x;
    }, { name: "decode", maxFailures: 3 })
    .build(quiet);
  const err = await collect(p).then(() => undefined, (e) => e);
  assert.ok(err instanceof PipelineFailure, String(err));
  assert.match(err.message, /stage "decode" exceeded its maxFailures/);
  assert.equal(err.counts.find((c) => c.stage === "decode")!.failed, 4);
  assert.equal(err.errors[0].item, "10");
  assertAccounting(p.stats());
});

Deno.test("maxFailures: a rate triggers only after `after` tasks", async () => {
  const p = new PipelineBuilder()
    .addSource(range(100))
    .pipe((x: number) => {
      if (x % 2 === 0) throw new Error("even");
      return x;
    }, { maxFailures: { rate: 0.4, after: 10 } })
    .build(quiet);
  await assert.rejects(collect(p), PipelineFailure);
  const s = p.stats().stages[1];
  assert.ok(s.done + s.failed >= 10 && s.done + s.failed < 20, JSON.stringify(s));
});

Deno.test("a throwing source ends the pipeline with PipelineFailure", async () => {
  function* src() {
    yield 1;
    throw new Error("disk gone");
  }
  const p = new PipelineBuilder().addSource(src()).pipe((x: number) => x).build(quiet);
  await assert.rejects(collect(p), /source "source" threw: Error: disk gone/);
});

Deno.test("aggregate: batches, short last batch, dropLast", async () => {
  const a = new PipelineBuilder().addSource(range(7)).aggregate(3).build();
  assert.deepEqual(await collect(a), [[0, 1, 2], [3, 4, 5], [6]]);
  assertAccounting(a.stats());
  const b = new PipelineBuilder().addSource(range(7)).aggregate(3, { dropLast: true }).build();
  assert.deepEqual(await collect(b), [[0, 1, 2], [3, 4, 5]]);
  const s = b.stats().stages[1];
  assert.equal(s.dropped, 1);
  assert.equal(s.done, 6);
  assertAccounting(b.stats());
  const c = new PipelineBuilder().addSource(range(2)).aggregate(3, { dropLast: true }).build();
  assert.deepEqual(await collect(c), []);
  const d = new PipelineBuilder().addSource([]).aggregate(3).build();
  assert.deepEqual(await collect(d), []);
  const e = new PipelineBuilder().addSource(range(6)).aggregate(3).build();
  assert.deepEqual(await collect(e), [[0, 1, 2], [3, 4, 5]]);
  assert.throws(() => new PipelineBuilder().addSource([]).aggregate(0), InvalidArgumentError);
});

Deno.test("disaggregate: flattens, empty batches emit nothing, round-trips with aggregate", async () => {
  const p = new PipelineBuilder().addSource([[1, 2], [], [3]]).disaggregate().build();
  assert.deepEqual(await collect(p), [1, 2, 3]);
  assertAccounting(p.stats());
  const q = new PipelineBuilder().addSource(range(10)).aggregate(4).disaggregate().build();
  assert.deepEqual(await collect(q), range(10));
});

Deno.test("continuous: each for-await is a new epoch over the source", async () => {
  const p = new PipelineBuilder()
    .addSource(range(5), { continuous: true })
    .pipe((x: number) => x + 1)
    .build();
  assert.deepEqual(await collect(p), [1, 2, 3, 4, 5]);
  assert.deepEqual(await collect(p), [1, 2, 3, 4, 5]);
  assert.equal(p.stats().epochs, 2);
  assert.equal(p.stats().stages[1].tasksIn, 10);
  await p.stop();
});

Deno.test("not continuous: a second pass is refused", async () => {
  const p = new PipelineBuilder().addSource(range(3)).build();
  await collect(p);
  assert.throws(() => p[Symbol.asyncIterator](), InvalidArgumentError);
});

Deno.test("cancellation: break stops everything, no pending ops or timers", async () => {
  let finished = 0;
  const p = new PipelineBuilder()
    .addSource(range(1000))
    .pipe(async (x: number, ctx) => {
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 20);
        ctx.signal.addEventListener("abort", () => {
          clearTimeout(t);
          resolve();
        }, { once: true });
      });
      finished++;
      return x;
    }, { concurrency: 4 })
    .build({ hooks: [{ report: () => {} }], reportInterval: 5 });
  for await (const _ of p) break;
  const s = p.stats();
  assert.equal(s.running, false);
  assert.equal(s.stages[1].inFlight, 0);
  assert.ok(finished < 20);
  assertAccounting(s);
});

Deno.test("cancellation: stop() while the consumer waits", async () => {
  const p = new PipelineBuilder().addSource((async function* () {
    for (let i = 0;; i++) {
      await sleep(1);
      yield i;
    }
  })()).pipe((x: number) => x).build();
  const it = p[Symbol.asyncIterator]();
  await it.next();
  const pending = it.next();
  await p.stop();
  const r = await pending;
  assert.equal(r.done, true);
  assert.throws(() => p[Symbol.asyncIterator]());
});

Deno.test("cancellation: an aborted signal ends the loop with its reason", async () => {
  const ac = new AbortController();
  const p = new PipelineBuilder().addSource(range(1000)).pipe(async (x: number) => {
    await sleep(1);
    return x;
  }).build({ signal: ac.signal });
  let n = 0;
  await assert.rejects(
    (async () => {
      for await (const _ of p) if (++n === 5) ac.abort(new Error("user abort"));
    })(),
    /user abort/,
  );
  assertAccounting(p.stats());
});

Deno.test("cancellation: an exception in the consumer stops the pipeline", async () => {
  const p = new PipelineBuilder().addSource(range(100)).pipe(async (x: number) => {
    await sleep(1);
    return x;
  }, { concurrency: 3 }).build();
  await assert.rejects(
    (async () => {
      for await (const x of p) if (x >= 2) throw new Error("consumer bug");
    })(),
    /consumer bug/,
  );
  assert.equal(p.stats().running, false);
  assert.equal(p.stats().stages[1].inFlight, 0);
});

Deno.test("setConcurrency: raising it while running lets more tasks overlap", async () => {
  let running = 0;
  let maxRunning = 0;
  const p = new PipelineBuilder().addSource(range(40)).pipe(async (x: number) => {
    running++;
    maxRunning = Math.max(maxRunning, running);
    await sleep(2);
    running--;
    return x;
  }, { name: "work", concurrency: 1 }).build();
  let n = 0;
  for await (const _ of p) {
    if (++n === 5) {
      assert.equal(maxRunning, 1);
      p.stage("work").setConcurrency(6);
    }
  }
  assert.equal(n, 40);
  assert.ok(maxRunning > 1 && maxRunning <= 6, `max running ${maxRunning}`);
  assert.equal(p.stats().stages[1].concurrency, 6);
  assert.equal(p.stats().stages[1].input!.capacity, 8);
  assert.throws(() => p.stage("work").setConcurrency(0), InvalidArgumentError);
  assert.throws(() => p.stage("nope"), InvalidArgumentError);
});

Deno.test("builder: checks its arguments", () => {
  assert.throws(() => new PipelineBuilder().pipe((x: never) => x), InvalidArgumentError);
  assert.throws(() => new PipelineBuilder().addSource([1]).pipe((x: number) => x, { concurrency: 0 }));
  assert.throws(() => new PipelineBuilder().addSource([1]).pipe("decode" as never, {} as never));
  assert.throws(() => new PipelineBuilder().addSource([1]).addSink({ bufferSize: 0 }));
});

Deno.test("ordered: a finished task frees its slot at once; behind a slow task the reorder buffer stops at its bound", async () => {
  const conc = 2;
  const window = 2 * conc + 2; // tasks between admission and emission (run_pipe.ts reorderWindow)
  let release!: () => void;
  const gate = new Promise<void>((r) => release = r);
  const started: number[] = [];
  let running = 0;
  let maxRunning = 0;
  const p = new PipelineBuilder().addSource(range(40)).pipe(async (x: number) => {
    started.push(x);
    maxRunning = Math.max(maxRunning, ++running);
    if (x === 0) await gate; // the head task is slow; every other task finishes at once
    running--;
    return x;
  }, { name: "work", concurrency: conc, ordered: true }).build();
  const it = p[Symbol.asyncIterator]();
  const first = it.next();
  await sleep(20); // everything but the head task runs in microtasks
  // Holding finished tasks' slots (the old behaviour) would have let only task 1 run beside task 0.
  assert.deepEqual(started, range(window), "tasks behind the slow one ran, up to the reorder window");
  const s = p.stats().stages[1];
  assert.equal(s.inFlight, 1);
  assert.equal(s.held, window - 1, "finished outputs wait for their turn, counted as held");
  assertAccounting(p.stats());
  release();
  const out = [(await first).value];
  for (let r = await it.next(); !r.done; r = await it.next()) out.push(r.value);
  assert.deepEqual(out, range(40));
  assert.ok(maxRunning <= conc, `max running ${maxRunning}`);
  assertAccounting(p.stats());
});

Deno.test("ordered: drops and failures keep the order of the rest", async () => {
  const rnd = lcg(3);
  const p = new PipelineBuilder().addSource(range(50)).pipe(async (x: number) => {
    await sleep(rnd() * 4);
    if (x % 7 === 3) throw new Error(`bad ${x}`);
    return x % 5 === 1 ? undefined : x;
  }, { concurrency: 4, ordered: true, maxFailures: 100 }).build(quiet);
  const out = await collect(p);
  assert.deepEqual(out, range(50).filter((x) => x % 7 !== 3 && x % 5 !== 1));
  const s = p.stats().stages[1];
  assert.equal(s.failed, range(50).filter((x) => x % 7 === 3).length);
  assert.equal(s.held, 0);
  assertAccounting(p.stats());
});

Deno.test("ordered: bounded memory with a slow ordered stage (queues + running + reorder window)", async () => {
  let alive = 0;
  let maxAlive = 0;
  function* source() {
    for (let i = 0; i < 1_000_000; i++) {
      alive++;
      maxAlive = Math.max(maxAlive, alive);
      yield i;
    }
  }
  const conc = 3;
  const rnd = lcg(11);
  const p = new PipelineBuilder()
    .addSource(source())
    .pipe(async (x: number) => {
      await sleep(x % 10 === 0 ? 15 : rnd() * 2);
      return x;
    }, { concurrency: conc, ordered: true, name: "slow" })
    .addSink({ bufferSize: 3 })
    .build();
  let consumed = 0;
  for await (const x of p) {
    assert.equal(x, consumed);
    alive--;
    if (++consumed === 200) break;
  }
  // slow.in (conc + 2) + reorder window (2 conc + 2: running and finished) + sink 3 + one item held by each
  // producer waiting to put (source, emitter).
  const bound = (conc + 2) + (2 * conc + 2) + 3 + 2;
  assert.ok(maxAlive <= bound, `max alive ${maxAlive} > bound ${bound}`);
  assertAccounting(p.stats());
});

Deno.test("stalls: a stage with work running and no progress is reported once, in stats, formatStats, log and events", async () => {
  const clock = new FakeClock();
  try {
    const logs: string[] = [];
    const events: PipelineEvent[] = [];
    const stalls = () => events.filter((e) => e.type === "stall");
    let release!: () => void;
    const gate = new Promise<void>((r) => release = r);
    const p = new PipelineBuilder()
      .addSource(range(5))
      .pipe(async (x: number) => {
        if (x === 2) await gate; // blocks, like a read from a hung mount
        return x;
      }, { name: "fetch", concurrency: 1 })
      .build({
        stallThresholdMs: 100,
        clock,
        log: (m) => logs.push(m),
        hooks: [{ event: (e) => events.push(e) }],
      });
    const it = p[Symbol.asyncIterator]();
    assert.equal((await it.next()).value, 0);
    assert.equal((await it.next()).value, 1);
    const third = it.next();
    await clock.runUntil(99); // the watch looks every 25 ms: no progress for 75 ms is no stall
    assert.deepEqual(stalls(), []);
    await clock.runUntil(100);
    assert.equal(stalls().length, 1);
    const stats = p.stats();
    assert.deepEqual(stats.stalled, ["fetch"]);
    const row = stats.stages.find((s) => s.name === "fetch")!;
    assert.equal(row.stalledMs, 100);
    assert.equal(row.stalls, 1);
    assert.match(formatStats(stats), /^STALLED: fetch: no progress for 0\.1 s \(1 task\(s\) running\)$/m);
    await clock.runUntil(220); // still stalled: no second report
    assert.equal(stalls().length, 1);
    assert.equal(logs.filter((l) => /stalled/.test(l)).length, 1, logs.join("\n"));
    assert.match(logs[0], /stage "fetch" stalled: no progress for 0\.1 s \(1 task\(s\) running\)/);
    release();
    assert.equal((await third).value, 2);
    for (let r = await it.next(); !r.done; r = await it.next()) { /* drain */ }
    // stalled from 0 (its last progress) until the release at 220
    assert.deepEqual(events.filter((e) => e.type === "resume"), [{
      type: "resume",
      stage: "fetch",
      stalledMs: 220,
    }]);
    assert.match(logs.at(-1)!, /stage "fetch" made progress again after 0\.2 s/);
    const after = p.stats();
    assert.deepEqual(after.stalled, []);
    assert.equal(after.stages[1].stalledMs, 0);
    assert.equal(after.stages[1].stalls, 1);
  } finally {
    clock.close();
  }
});

Deno.test("stalls: a source waiting on its iterator is reported; a stage blocked by a slow consumer is not", async () => {
  const clock = new FakeClock();
  try {
    const logs: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => release = r);
    const p = new PipelineBuilder()
      .addSource(
        (async function* () {
          yield 0;
          await gate; // a backend child that stopped answering
          yield 1;
        })(),
        { name: "backend" },
      )
      .pipe((x: number) => x, { name: "work" })
      .build({ stallThresholdMs: 50, clock, log: (m) => logs.push(m) });
    const it = p[Symbol.asyncIterator]();
    await it.next();
    const next = it.next();
    await clock.runUntil(49);
    assert.deepEqual(logs, []);
    await clock.runUntil(50);
    assert.equal(logs.length, 1, logs.join("\n"));
    assert.match(logs[0], /stage "backend" stalled: no progress for 0\.1 s \(waiting on its iterator\)/);
    assert.deepEqual(p.stats().stalled, ["backend"]);
    release();
    await next;
    await it.return!();

    // The consumer is slow (75 ms an item, 50 ms the threshold): "fast" waits on a full sink, never stalled.
    const quiet: string[] = [];
    const q = new PipelineBuilder().addSource(range(50)).pipe((x: number) => x, { name: "fast" })
      .build({ stallThresholdMs: 50, clock, log: (m) => quiet.push(m) });
    const consumer = (async () => {
      for await (const _ of q) await clock.sleep(75);
    })();
    await clock.runUntil(50 * 75 + 1000);
    await consumer;
    assert.deepEqual(quiet, []);
    assert.equal(q.stats().stages[1].stalls, 0);
  } finally {
    clock.close();
  }
});
