/**
 * The decode floor's sum over clips measured two at a time: every clip's seconds count once. (Concurrent jobs
 * once added with `cpuSec += await …`, which reads the sum before awaiting and dropped the other job's clips:
 * the floor in bench/RESULTS.md came out about half of what FFmpeg's decoder spends.)
 */
import assert from "node:assert/strict";
import { sumConcurrently } from "../../bench/decode_floor.ts";
import type { Clip } from "../../bench/contenders/harness.ts";

Deno.test("decode floor: clips measured concurrently are all summed", async () => {
  const clips: Clip[] = Array.from(
    { length: 9 },
    (_, i) => ({ path: `v${i}.mp4`, label: 0, start: i, end: i + 1 }),
  );
  // Clip i takes i + 1 ms of (fake) wall time and measures (i + 1) / 1000 s: uneven, so the jobs interleave.
  const measure = (c: Clip) =>
    new Promise<number>((r) => setTimeout(() => r((c.start + 1) / 1000), c.start + 1));
  for (const jobs of [1, 2, 3]) {
    const f = await sumConcurrently(clips, measure, jobs);
    assert.equal(f.clips, 9);
    assert.ok(Math.abs(f.cpuSec - 0.045) < 1e-12, `jobs ${jobs}: ${f.cpuSec} s, want 0.045`);
    assert.ok(Math.abs(f.perClip - 0.005) < 1e-12);
  }
});
