/**
 * Pipeline basics: a source, an async stage with concurrency, a CPU stage in a WorkerPool, batching, stats.
 * Run: deno run --allow-read examples/pipeline_basics.ts
 */
import { formatStats } from "@sluice/sluice";
import { PipelineBuilder, WorkerPool } from "@sluice/sluice/pipeline";

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

// Each Worker imports examples/pipeline_worker.ts and runs its exports (here `checksum`).
const pool = new WorkerPool(import.meta.resolve("./pipeline_worker.ts"), { size: 2 });

const pipeline = new PipelineBuilder()
  .addSource(Array.from({ length: 200 }, (_, i) => i), { name: "ids" })
  .pipe(async (id: number) => {
    await sleep(2); // stands for a fetch
    return new Uint8Array(64 * 1024).fill(id & 0xff);
  }, { name: "fetch", concurrency: 8 })
  .pipe<number>("checksum", { name: "checksum", executor: pool }) // buffers move to the Worker, not copied
  .aggregate(16, { name: "batch" })
  .addSink({ bufferSize: 3 })
  .build();

let batches = 0;
for await (const batch of pipeline) {
  batches++;
  if (batches === 3) pipeline.stage("fetch").setConcurrency(16); // tune while running
  if (batch.length === 0) break;
}
console.log(`${batches} batches`);
console.log(formatStats(pipeline.stats()));
await pipeline.stop(); // terminates the Workers (already done when the epoch ended)
