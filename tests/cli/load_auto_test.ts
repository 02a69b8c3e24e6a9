/** `sluice load --X-concurrency auto`: the stage is handed to the pipeline's controller. */
import assert, { deepStrictEqual as assertEquals } from "node:assert/strict";
import { sluice, tinyDataset } from "./helpers.ts";
import type { PipelineStats } from "../../src/pipeline/stats.ts";

Deno.test("sluice load --demux-concurrency auto --decode-concurrency auto: both stages auto, the run whole", async () => {
  const dir = await tinyDataset({ videos: 4 });
  try {
    const r = await sluice([
      "load",
      dir,
      "--batches",
      "4",
      "--batch-size",
      "2",
      "--frames",
      "4",
      "--width",
      "32",
      "--height",
      "32",
      "--demux-concurrency",
      "auto",
      "--decode-concurrency",
      "auto",
      "--json",
    ]);
    assertEquals(r.code, 0, r.stderr);
    const s = JSON.parse(r.stdout) as { batches: number; pipeline: PipelineStats };
    assertEquals(s.batches, 4);
    const row = (name: string) => s.pipeline.stages.find((x) => x.name === name)!;
    assertEquals([row("demux").auto, row("decode").auto, row("fetch").auto], [true, true, false]);
    assert(row("decode").concurrency >= 1);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("sluice load: a concurrency that is neither an integer in range nor auto is a usage error", async () => {
  for (const bad of ["0", "2.5", "257", "fast", "-1"]) {
    const r = await sluice(["load", "unused", "--decode-concurrency", bad]);
    assertEquals(r.code, 2);
    assert(
      r.stderr.startsWith(
        `sluice load: --decode-concurrency must be an integer from 1 to 256 or "auto", got "${bad}"`,
      ),
      r.stderr,
    );
  }
  const help = await sluice(["load", "--help"]);
  assert(help.stdout.includes("--decode-concurrency N|auto"), help.stdout);
  const flat = help.stdout.replace(/\s+/g, " ");
  assert(
    /decode tasks at once, or auto: [^[]*\[default: the number of cores[^\]]*; an integer from 1 to 256 or "auto"\]/
      .test(flat),
    help.stdout,
  );
});
