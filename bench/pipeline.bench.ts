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
