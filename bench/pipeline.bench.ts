/**
 * Pipeline engine costs: per-item overhead of a no-op main-thread stage (baseline: a plain loop over the same
 * source, so `deno bench` reports the ratio), and the WorkerPool round trip of a 1 MB transferable.
 */
import { PipelineBuilder } from "../src/pipeline/builder.ts";
import { WorkerPool } from "../src/pipeline/worker_pool.ts";

const N = 20_000;
const items = Array.from({ length: N }, (_, i) => i);
const noop = (x: number) => x;

async function drain(stages: number): Promise<void> {
  let b = new PipelineBuilder().addSource(items) as PipelineBuilder<number>;
  for (let i = 0; i < stages; i++) b = b.pipe(noop, { concurrency: 4 });
  let n = 0;
  for await (const _ of b.build()) n++;
  if (n !== N) throw new Error(`lost items: ${n}`);
}

Deno.bench(
  { name: `baseline: for-await over ${N} items`, group: "engine", baseline: true, n: 40, warmup: 5 },
  async () => {
    let n = 0;
    for await (
      const _ of (async function* () {
        yield* items;
      })()
    ) n++;
    if (n !== N) throw new Error("lost");
  },
);
Deno.bench(
  { name: `source + 1 no-op stage, ${N} items`, group: "engine", n: 40, warmup: 5 },
  async () => await drain(1),
);
Deno.bench(
  { name: `source + 4 no-op stages, ${N} items`, group: "engine", n: 40, warmup: 5 },
  async () => await drain(4),
);

const pool = new WorkerPool(import.meta.resolve("../tests/pipeline/fixtures/worker_mod.ts"), { size: 1 });
await pool.call("double", [1]); // start the worker outside the timing
let buf: Uint8Array<ArrayBuffer> = new Uint8Array(1 << 20);
const kept = new Uint8Array(1 << 20);

Deno.bench(
  { name: "WorkerPool round trip, 1 MB transferred both ways", group: "worker", n: 300, warmup: 20 },
  async () => {
    const r = await pool.call<{ buf: Uint8Array<ArrayBuffer> }>("echo", [buf], [buf.buffer]);
    buf = r.buf;
  },
);
Deno.bench({
  name: "WorkerPool round trip, small number",
  group: "worker",
  baseline: true,
  n: 300,
  warmup: 20,
}, async () => {
  await pool.call("double", [2]);
});
Deno.bench(
  {
    name: "WorkerPool round trip, 1 MB copied in (no transfer list), moved back",
    group: "worker",
    n: 300,
    warmup: 20,
  },
  async () => {
    await pool.call("echo", [kept]);
  },
);

globalThis.addEventListener("unload", () => pool.close());

// Ordered vs unordered with uneven task times (issue 15): 40 tasks, one in four 100 ms and the rest 10 ms, at
// concurrency 2. Ideal ≈ (10·100 + 30·10) / 2 = 650 ms; an ordered stage that frees a finished task's slot at
// once should be as fast as an unordered one.
const UNEVEN = Array.from({ length: 40 }, (_, i) => i);
const unevenTask = (i: number) => new Promise<number>((r) => setTimeout(() => r(i), i % 4 === 0 ? 100 : 10));
async function drainUneven(ordered: boolean): Promise<void> {
  const p = new PipelineBuilder().addSource(UNEVEN).pipe(unevenTask, { concurrency: 2, ordered }).build();
  let n = 0;
  for await (const _ of p) n++;
  if (n !== UNEVEN.length) throw new Error(`lost items: ${n}`);
}
Deno.bench(
  { name: "uneven tasks, unordered, concurrency 2", group: "ordered", baseline: true, n: 8, warmup: 1 },
  async () => await drainUneven(false),
);
Deno.bench(
  { name: "uneven tasks, ordered, concurrency 2", group: "ordered", n: 8, warmup: 1 },
  async () => await drainUneven(true),
);
