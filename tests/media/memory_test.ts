import assert from "node:assert/strict";
import { decodeVideo, releaseDecoder } from "../../src/media/decode.ts";
import { demuxVideo } from "../../src/media/demux.ts";
import { generateClip, hasFfmpegCliSync } from "../helpers/media.ts";

/** Resident set size in bytes, from /proc (the whole process: native FFmpeg memory included). */
function rss(): number {
  const status = Deno.readTextFileSync("/proc/self/status");
  const m = status.match(/VmRSS:\s+(\d+) kB/);
  return m ? Number(m[1]) * 1024 : Deno.memoryUsage().rss;
}

Deno.test({
  name: "memory: demux + decode of the same file 200 times keeps RSS growth under 30 MB after warm-up",
  ignore: !hasFfmpegCliSync() || Deno.build.os !== "linux",
  fn: async () => {
    const clip = await generateClip({ width: 160, height: 120, durationSec: 1, bframes: 2 });
    const run = async (i: number) => {
      const packets = await demuxVideo(clip);
      // Alternate options so the scaler is rebuilt and the decoder both reused and re-opened.
      const frames = await decodeVideo(
        packets,
        i % 2 ? { width: 64, height: 48 } : { threads: i % 4 === 0 ? 2 : 1 },
      );
      assert.equal(frames.shape[0], 25);
    };
    for (let i = 0; i < 100; i++) await run(i); // warm-up: heaps and malloc arenas reach their working size
    const gc = (globalThis as { gc?: () => void }).gc;
    gc?.();
    const before = rss();
    for (let i = 0; i < 200; i++) await run(i);
    gc?.();
    const grown = rss() - before;
    releaseDecoder();
    assert.ok(grown < 30 * 1024 * 1024, `RSS grew by ${(grown / 1048576).toFixed(1)} MB over 200 decodes`);
  },
});
