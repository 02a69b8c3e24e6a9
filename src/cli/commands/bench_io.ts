/**
 * `sluice bench-io DATASET... [--cold]`: storage throughput of datasets, cold (page cache dropped) and warm.
 * @module
 */

import { benchIo, type IoPass } from "../../prep/bench_io.ts";
import { defineCommand } from "../args.ts";
import { alignTable } from "../table.ts";
import { print } from "../tty.ts";

/** The passes as an aligned table, with clips/s relative to the first pass of the same cache state. */
export function ioTable(passes: IoPass[]): string {
  const first = (cache: string) => passes.find((p) => p.cache === cache)!.clipsPerSec;
  const rows = [
    [
      "dataset",
      "layout",
      "access",
      "cache",
      "files",
      "clips",
      "MB",
      "s",
      "MB/s",
      "files/s",
      "clips/s",
      "vs 1st",
    ],
    ...passes.map((p) => [
      p.dataset,
      p.layout,
      p.access,
      p.cache,
      String(p.files),
      String(p.clips),
      (p.bytes / 1e6).toFixed(1),
      p.seconds.toFixed(3),
      p.mbPerSec.toFixed(1),
      p.filesPerSec.toFixed(1),
      p.clipsPerSec.toFixed(1),
      first(p.cache) > 0 ? `${(p.clipsPerSec / first(p.cache)).toFixed(2)}x` : "-",
    ]),
  ];
  const lines = [alignTable(rows, [4, 5, 6, 7, 8, 9, 10, 11])];
  for (const warm of passes.filter((p) => p.cache === "warm")) {
    const cold = passes.find((p) =>
      p.cache === "cold" && p.dataset === warm.dataset && p.access === warm.access
    );
    if (cold && cold.clipsPerSec > 0) {
      lines.push(
        `${warm.dataset} ${warm.access}: warm/cold ${(warm.clipsPerSec / cold.clipsPerSec).toFixed(2)}x`,
      );
    }
  }
  return lines.join("\n");
}

/** The `bench-io` command. */
export const benchIoCommand = defineCommand({
  name: "bench-io",
  summary: "measure how fast a dataset's bytes come off the disk: cold vs warm page cache, files vs shards",
  description:
    "Reads every video of each DATASET the way the loader does: one file per video read whole, or " +
    "shards read whole (sequential) and by index (one positioned read per video), in a shuffled order. With " +
    "--cold the page cache is dropped for the dataset's files first (posix_fadvise DONTNEED: no root needed), " +
    "then the same pass runs warm. Reports MB/s, files/s and clips/s, and each pass's clips/s relative to the " +
    "first dataset's.",
  positionals: [{
    name: "DATASET",
    variadic: true,
    help: "a directory tree, manifest, or packed shard directory",
  }],
  options: {
    cold: {
      type: "boolean",
      help: "also measure with the page cache dropped (the dataset does not fit in RAM)",
    },
    seed: { type: "integer", default: 0, min: 0, help: "seed of the shuffled read order" },
    concurrency: { type: "integer", default: 1, min: 1, max: 256, help: "reads in flight" },
    repeat: {
      type: "integer",
      default: 1,
      min: 1,
      max: 1000,
      help: "passes per measurement; the median is reported (cold ones each start cold)",
    },
    json: { type: "boolean", help: "print the passes as JSON" },
  },
  examples: ["bench-io /data/kinetics /data/k128/manifest.jsonl /data/k128-shards --cold"],
  async run({ values, positionals }) {
    const passes = await benchIo(positionals, {
      cold: values.cold,
      seed: values.seed,
      concurrency: values.concurrency,
      repeat: values.repeat,
    });
    print(Deno.stdout, values.json ? JSON.stringify(passes, null, 2) : ioTable(passes));
    return 0;
  },
});
