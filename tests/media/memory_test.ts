/**
 * Bounded memory over many decodes. The measurement runs in a child process (this same file, run with
 * `SLUICE_MEMORY_CHILD=<clip>`), because `deno test --parallel` runs test files in one process and the
 * resident set size would include every other file's work.
 * @module
 */
import assert from "node:assert/strict";
import { decodeVideo, releaseDecoder } from "../../src/media/decode.ts";
import { demuxVideo } from "../../src/media/demux.ts";
import { generateClip, hasFfmpegCliSync } from "../helpers/media.ts";

/** Resident set size in bytes, from /proc (the whole process: native FFmpeg memory included). */
function rss(): number {
  const m = Deno.readTextFileSync("/proc/self/status").match(/VmRSS:\s+(\d+) kB/);
  return m ? Number(m[1]) * 1024 : Deno.memoryUsage().rss;
}

/** The child: warm up, then 200 demux + decode runs; prints the RSS before and after as JSON. */
async function child(clip: string): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});
  const run = async (i: number) => {
    const packets = await demuxVideo(clip);
    // Alternate options so the scaler is rebuilt and the decoder both reused and re-opened.
    const frames = await decodeVideo(
      packets,
      i % 2 ? { width: 64, height: 48 } : { threads: i % 4 === 0 ? 2 : 1 },
    );
    if (frames.shape[0] !== 25) throw new Error(`expected 25 frames, got ${frames.shape[0]}`);
  };
  for (let i = 0; i < 100; i++) await run(i); // warm-up: heaps and malloc arenas reach their working size
  gc();
  const before = rss();
  for (let i = 0; i < 200; i++) await run(i);
  gc();
  const after = rss();
  releaseDecoder();
  console.log(JSON.stringify({ before, after }));
}

const childClip = Deno.env.get("SLUICE_MEMORY_CHILD");
if (childClip) await child(childClip);

Deno.test({
  name: "memory: demux + decode of the same file 200 times keeps RSS growth under 30 MB after warm-up",
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
    const grown = after - before;
    assert.ok(grown < 30 * 1024 * 1024, `RSS grew by ${(grown / 1048576).toFixed(1)} MB over 200 decodes`);
  },
});
