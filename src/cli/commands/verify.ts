/**
 * `sluice verify SHARD...`: checks tar shards against their sidecar indexes (exit 1 on any problem).
 * @module
 */

import { verifyShard } from "../../prep/verify_shard.ts";
import { bytesText } from "../../prep/progress.ts";
import { openShards } from "../../dataset/shards/reader.ts";
import { defineCommand } from "../args.ts";
import { alignTable } from "../table.ts";
import { print } from "../tty.ts";

/** The `verify` command. */
export const verifyCommand = defineCommand({
  name: "verify",
  summary: "check tar shards against their indexes: headers, offsets, sizes and every member's SHA-256",
  description: "A SHARD is a .tar (its index beside it), or a packed directory / shards.json / URL (every " +
    "shard it lists). Each problem is printed naming the shard and the member; the exit status is 1 if any.",
  positionals: [{
    name: "SHARD",
    variadic: true,
    help: "shard files, packed directories, shards.json paths or URLs",
  }],
  options: {},
  examples: ["verify /data/k128-shards/shard-000000.tar", "verify /data/k128-shards"],
  async run({ positionals }) {
    const tars: string[] = [];
    for (const p of positionals) {
      if (/\.tar(\?.*)?$/.test(p)) tars.push(p);
      else tars.push(...(await openShards(p)).shards.map((s) => s.tar));
    }
    const rows: string[][] = [["shard", "result", "samples", "bytes", "members checked"]];
    const problems: string[] = [];
    for (const tar of tars) {
      const r = await verifyShard(tar);
      rows.push([
        tar,
        r.ok ? "ok" : `${r.problems.length} problem(s)`,
        String(r.samples),
        bytesText(r.bytes),
        String(r.verifiedMembers),
      ]);
      problems.push(...r.problems.map((e) => e.message));
    }
    print(Deno.stdout, alignTable(rows, [2, 3, 4]));
    for (const p of problems) print(Deno.stderr, `sluice verify: ${p}`);
    return problems.length ? 1 : 0;
  },
});
