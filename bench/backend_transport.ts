/**
 * Transport throughput of the subprocess backend: items/s and MB/s for 4 KB, 64 KB and 1 MB payloads streamed
 * from a child (`spawnBackend`) to a consumer that only counts them, against the same pipeline iterated in this
 * process (no transport, no copy: an upper bound) in the same run, for bufferSize 3, 8 and 64. Throughput is
 * timed from the first item received (the child's start-up, ~0.1 s, is reported apart) and each backend row is
 * the median of `--repeat` runs (default 3), since other processes share this machine's cores. Also the time
 * from SIGKILL of a streaming child to the consumer's BackendExitedError.
 *
 * Run: `deno run --allow-all bench/backend_transport.ts [--seconds 2] [--repeat 3] [--json]`
 * @module
 */

import { PipelineBuilder } from "../src/pipeline/builder.ts";
import { spawnBackend } from "../src/backend/spawn.ts";
import { BackendExitedError } from "../src/errors.ts";

/** The backend the bench spawns: `count` items of `size` bytes (one buffer, reused: transport only). */
export function payloads(args: { size: number; count: number }): PipelineBuilder<Uint8Array> {
  const buf = new Uint8Array(args.size).fill(7);
  function* gen() {
    for (let i = 0; i < args.count; i++) yield buf;
  }
  return new PipelineBuilder().addSource(gen());
}

interface Row {
  size: string;
  mode: string;
  items: number;
  /** Seconds from the first item to the last. */
  seconds: number;
  /** Seconds from the start of the iteration to the first item (the child's start-up for a backend). */
  firstItemSeconds: number;
  itemsPerSec: number;
  mbPerSec: number;
}

async function measure(label: string, mode: string, size: number, it: AsyncIterable<unknown>): Promise<Row> {
  let n = 0;
  let bytes = 0;
  const t0 = performance.now();
  let t1 = 0;
  for await (const x of it) {
    if (n === 0) t1 = performance.now();
    n++;
    bytes += (x as Uint8Array).length;
  }
  const seconds = (performance.now() - t1) / 1000;
  if (bytes !== n * size) throw new Error(`${label}: got ${bytes} bytes for ${n} items`);
  // The first item is the start of the clock, so n - 1 items are timed.
  return {
    size: label,
    mode,
    items: n,
    seconds,
    firstItemSeconds: (t1 - t0) / 1000,
    itemsPerSec: (n - 1) / seconds,
    mbPerSec: (bytes - size) / 1e6 / seconds,
  };
}

function median(rows: Row[]): Row {
  const sorted = [...rows].sort((a, b) => a.itemsPerSec - b.itemsPerSec);
  return sorted[Math.floor(sorted.length / 2)];
}

async function killLatency(): Promise<number> {
  const source = spawnBackend({
    module: import.meta.url,
    export: "payloads",
    args: { size: 4096, count: 1e9 },
  });
  const it = source[Symbol.asyncIterator]();
  for (let i = 0; i < 100; i++) await it.next();
  const t0 = performance.now();
  Deno.kill(source.pid, "SIGKILL");
  try {
    for (;;) if ((await it.next()).done) break;
  } catch (e) {
    if (!(e instanceof BackendExitedError)) throw e;
  }
  const ms = performance.now() - t0;
  await source.close();
  return ms;
}

async function main(): Promise<void> {
  const arg = (name: string, dflt: number) => {
    const i = Deno.args.indexOf(name);
    return i >= 0 ? Number(Deno.args[i + 1]) : dflt;
  };
  const seconds = arg("--seconds", 2);
  const repeat = arg("--repeat", 3);
  const sizes: [string, number, number][] = [
    ["4 KB", 4096, 50_000],
    ["64 KB", 65536, 8_000],
    ["1 MB", 1 << 20, 600],
  ];
  const rows: Row[] = [];
  for (const [label, size, count0] of sizes) {
    // Calibrate the count to about `seconds` in process (a lower bound for the backend's time).
    const count = Math.max(100, Math.round(count0 * seconds / 2));
    const inproc = await measure(label, "in-process", size, payloads({ size, count }).build());
    rows.push(inproc);
    for (const bufferSize of [3, 8, 64]) {
      const runs: Row[] = [];
      for (let r = 0; r < repeat; r++) {
        const args = { size, count };
        const source = spawnBackend({ module: import.meta.url, export: "payloads", args, bufferSize });
        runs.push(await measure(label, `backend, bufferSize ${bufferSize}`, size, source));
        await source.close();
      }
      rows.push(median(runs));
    }
  }
  if (Deno.args.includes("--json")) {
    console.log(JSON.stringify(rows));
    return;
  }
  console.log(`| payload | mode | items | s | items/s | MB/s | ratio to in-process | first item, s |`);
  console.log("| --- | --- | --- | --- | --- | --- | --- | --- |");
  let base = rows[0];
  for (const x of rows) {
    if (x.mode === "in-process") base = x;
    console.log(
      `| ${x.size} | ${x.mode} | ${x.items} | ${x.seconds.toFixed(2)} | ${x.itemsPerSec.toFixed(0)} | ` +
        `${x.mbPerSec.toFixed(0)} | ${(x.itemsPerSec / base.itemsPerSec).toFixed(3)} | ` +
        `${x.firstItemSeconds.toFixed(3)} |`,
    );
  }
  const kills = [];
  for (let k = 0; k < 3; k++) kills.push(await killLatency());
  console.log(`SIGKILL → BackendExitedError: ${kills.map((k) => k.toFixed(1)).join(", ")} ms`);
}

if (import.meta.main) await main();
