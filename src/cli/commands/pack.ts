/**
 * `sluice pack MANIFEST OUT_DIR`: tar shards in WebDataset's layout with a sidecar index each.
 * @module
 */

import { packShards, parseByteSize } from "../../prep/pack.ts";
import { bytesText, summaryTable } from "../../prep/progress.ts";
import { defineCommand, UsageError } from "../args.ts";
import { print } from "../tty.ts";
import { PrepProgress } from "./prep_progress.ts";

/** The `pack` command. */
export const packCommand = defineCommand({
  name: "pack",
  summary: "pack a dataset into WebDataset tar shards with sidecar indexes (random access by HTTP range)",
  description: "Each sample is <key>.mp4 (the video's bytes) then <key>.json (path, label, class and the " +
    "manifest's other columns); `tar tf`, Python's tarfile and webdataset read the shards. Beside each shard " +
    "goes <shard>.idx.json (offsets, sizes, SHA-256s, labels, time ranges, keyframes; checksummed), and " +
    "OUT_DIR/shards.json lists them: `sluice load OUT_DIR` reads the shards.",
  positionals: [
    {
      name: "MANIFEST",
      help: "a prepared manifest (from transcode), any .csv/.jsonl manifest, or a directory tree",
    },
    { name: "OUT_DIR", help: "where the shards go (created)" },
  ],
  options: {
    "shard-size": {
      type: "string",
      default: "1GiB",
      placeholder: "SIZE",
      help: "largest shard (e.g. 1GiB, 500MB)",
    },
    prefix: { type: "string", default: "shard", help: "shard file name prefix" },
  },
  examples: ["pack /data/k128/manifest.jsonl /data/k128-shards --shard-size 1GiB"],
  async run({ values, positionals }) {
    const [manifest, outDir] = positionals;
    let shardSize: number;
    try {
      shardSize = parseByteSize(values["shard-size"]);
    } catch (e) {
      throw new UsageError(`--shard-size: ${e instanceof Error ? e.message : e}`);
    }
    const view = new PrepProgress();
    const s = await packShards({
      manifest,
      outDir,
      shardSize,
      prefix: values.prefix,
      onProgress: (p, last) =>
        view.update(p, last.status === "failed" ? { path: last.path, error: last.error ?? "" } : undefined),
    });
    view.finish();
    const bytes = s.shards.reduce((n, x) => n + x.size, 0);
    print(
      Deno.stdout,
      `packed into ${s.shards.length} shard(s), ${bytesText(bytes)}: ${s.setFile}\n${
        summaryTable(s.progress, s.failures)
      }`,
    );
    return 0;
  },
});
