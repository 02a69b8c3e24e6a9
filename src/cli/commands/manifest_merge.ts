/**
 * `sluice manifest merge`: joins the manifests the shards of a `transcode` wrote into one, in input order.
 * @module
 */

import { findShardManifests, mergeManifests } from "../../prep/merge.ts";
import { defineCommand, UsageError } from "../args.ts";
import { print } from "../tty.ts";

/** The `manifest merge` command. */
export const manifestMergeCommand = defineCommand({
  name: "manifest merge",
  summary: "join the per-shard manifests of a sharded transcode into one manifest",
  description:
    "Takes manifest.shard-I-of-N.jsonl files (or directories holding them), checks that every shard " +
    "of N is there (unless --allow-missing), that no input or output appears twice, and writes the rows in " +
    "input order.",
  positionals: [{ name: "MANIFEST", variadic: true, help: "shard manifests, or directories of them" }],
  options: {
    output: {
      type: "string",
      defaultText: "DIR/manifest.jsonl when one directory is given",
      help: "merged manifest",
    },
    "allow-missing": { type: "boolean", help: "merge even when some shards' manifests are absent" },
  },
  examples: [
    "manifest merge /data/k128",
    "manifest merge a/manifest.shard-0-of-2.jsonl b/manifest.shard-1-of-2.jsonl --output m.jsonl",
  ],
  async run({ values, positionals }) {
    let output = values.output;
    if (output === undefined) {
      const dir = positionals.length === 1
        ? await Deno.stat(positionals[0]).then((s) => s.isDirectory, () => false)
        : false;
      if (!dir) throw new UsageError("--output is needed unless one directory is given");
      output = `${positionals[0].replace(/\/+$/, "")}/manifest.jsonl`;
    }
    const inputs = await findShardManifests(positionals);
    const r = await mergeManifests(inputs, output, { allowMissing: values["allow-missing"] });
    const missing = r.missing.length ? ` (shards missing: ${r.missing.join(", ")})` : "";
    print(Deno.stdout, `merged ${r.inputs.length} manifest(s), ${r.rows} rows, into ${r.output}${missing}`);
    return 0;
  },
});
