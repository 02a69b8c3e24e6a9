/**
 * Bounded memory over many decodes. The measurement runs in a child process (this same file, run with
 * `SLUICE_MEMORY_CHILD=<clip>`), because `deno test --parallel` runs test files in one process and the
 * resident set size would include every other file's work.
 *
 * What is measured is settled first, because two things move a plain RSS reading by ±20 MB between identical
 * runs on every FFmpeg release (measured: 8 runs each of the old check grew -10.8 to +18.9 MB on 8.1 and -6.0 to
 * +26.7 MB on 5.1, against its 30 MB bound): the output arrays a single `gc()` leaves to V8's concurrent
 * ArrayBuffer sweeper (still allocated when read) and the free memory glibc's malloc arenas keep. The child runs
 * `gc()` twice (the second finishes the first's sweep) over event-loop turns until V8's external memory and heap
 * stop changing, then `malloc_trim(0)`, and reports the bytes in use (malloc's, all arenas, and V8's heap) as
 * well as RSS. Settled, 200 decodes grow the bytes in use by 0.2-0.3 MB on 5.1 and 8.1 alike.
 * @module
 */
import assert from "node:assert/strict";
import { decodeVideo, releaseDecoder } from "../../src/media/decode.ts";
import { demuxVideo } from "../../src/media/demux.ts";
import { generateClip, hasFfmpegCliSync } from "../helpers/media.ts";

/** Decodes measured after the warm-up. */
const RUNS = 200;
/**
 * Growth of the bytes in use allowed over {@link RUNS} decodes: 1 MiB, 5 KiB a decode, under the smallest leak
 * worth catching (one 160×120 frame's YUV buffers are 28.8 KB, the clip's packets more).
 */
const IN_USE_LIMIT = 1 << 20;
/**
 * Growth of the resident set allowed (after trimming): what users see. Measured 3-4 MB over 200 decodes (malloc
 * arenas' fragmentation and code pages of the deno binary, not bytes in use); the bound leaves room for that.
 */
const RSS_LIMIT = 16 << 20;

/** glibc's allocator statistics and trimming (the child only). */
function glibc() {
  return Deno.dlopen(
    "libc.so.6",
    {
      // struct mallinfo2 mallinfo2(void): ten size_t, of which hblkhd (5th) and uordblks (8th) are in use.
      mallinfo2: { parameters: [], result: { struct: [...Array(10).keys()].map(() => "usize" as const) } },
      malloc_trim: { parameters: ["usize"], result: "i32" }, // int malloc_trim(size_t pad)
    } as const,
  );
}

/** Memory of the whole process after settling (see the module doc): bytes in use and the resident set. */
async function settled(libc: ReturnType<typeof glibc>): Promise<{ inUse: number; rss: number }> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error("the child needs --v8-flags=--expose-gc");
  let last = "";
  for (let turn = 0; turn < 20; turn++) {
    // A collection leaves the ArrayBuffers it found dead to a concurrent sweeper, which the next one finishes
    // first: one gc() read at once still counts them (125 MB of dropped arrays: 125 MB after one, 0.3 after two).
    gc();
    gc();
    await new Promise((r) => setTimeout(r, 10)); // FinalizationRegistry callbacks (native objects' safety net)
    const { external, heapUsed } = Deno.memoryUsage();
    if (`${external}/${heapUsed}` === last) break;
    last = `${external}/${heapUsed}`;
  }
  libc.symbols.malloc_trim(0n);
  const info = new BigUint64Array(libc.symbols.mallinfo2().buffer);
  const m = Deno.readTextFileSync("/proc/self/status").match(/VmRSS:\s+(\d+) kB/);
  return { inUse: Number(info[7] + info[4]) + Deno.memoryUsage().heapUsed, rss: Number(m![1]) * 1024 };
}

/** The child: warm up, then {@link RUNS} demux + decode runs; prints the memory before and after as JSON. */
async function child(clip: string): Promise<void> {
  const libc = glibc();
  const run = async (i: number) => {
    const packets = await demuxVideo(clip);
    // Alternate options so the scaler is rebuilt and the decoder both reused and re-opened.
    const frames = await decodeVideo(
      packets,
      i % 2 ? { width: 64, height: 48 } : { threads: i % 4 === 0 ? 2 : 1 },
    );
    if (frames.shape[0] !== 25) throw new Error(`expected 25 frames, got ${frames.shape[0]}`);
  };
  // The instrument first: 64 MiB of arrays dropped must not count once settled.
  const empty = await settled(libc);
  let dropped: Uint8Array[] | null = Array.from({ length: 1024 }, () => new Uint8Array(65536).fill(1));
  const held = { ...await settled(libc), arrays: dropped.length }; // read after settling: kept alive until here
  dropped = null;
  const freed = await settled(libc);
  if (held.inUse - empty.inUse < 60 << 20 || freed.inUse - empty.inUse > 1 << 20) {
    throw new Error(`settling does not free dropped arrays: ${JSON.stringify({ empty, held, freed })}`);
  }
  for (let i = 0; i < 100; i++) await run(i); // warm-up: heaps and malloc arenas reach their working size
  const before = await settled(libc);
  for (let i = 0; i < RUNS; i++) await run(i);
  const after = await settled(libc);
  releaseDecoder();
  libc.close();
  console.log(JSON.stringify({ before, after }));
}

const childClip = Deno.env.get("SLUICE_MEMORY_CHILD");
if (childClip) await child(childClip);

Deno.test({
  name: `memory: demux + decode of the same file ${RUNS} times after warm-up keeps the bytes in use within ` +
    `${IN_USE_LIMIT >> 20} MiB and the RSS within ${RSS_LIMIT >> 20} MiB`,
  ignore: childClip !== undefined || !hasFfmpegCliSync() || Deno.build.os !== "linux",
  fn: async () => {
    const clip = await generateClip({ width: 160, height: 120, durationSec: 1, bframes: 2 });
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-all", "--v8-flags=--expose-gc", new URL(import.meta.url).pathname],
      env: { SLUICE_MEMORY_CHILD: clip },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 0, `child failed: ${stderr.slice(-2000)}`);
    const { before, after } = JSON.parse(new TextDecoder().decode(out.stdout).trim().split("\n").pop()!);
    const mb = (n: number) => `${(n / 1048576).toFixed(2)} MB`;
    const inUse = after.inUse - before.inUse, rss = after.rss - before.rss;
    assert.ok(
      inUse < IN_USE_LIMIT,
      `bytes in use grew by ${mb(inUse)} over ${RUNS} decodes (RSS ${mb(rss)})`,
    );
    assert.ok(rss < RSS_LIMIT, `RSS grew by ${mb(rss)} over ${RUNS} decodes (bytes in use ${mb(inUse)})`);
  },
});
