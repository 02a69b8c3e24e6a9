import assert from "node:assert/strict";
import { benchIo } from "../../src/prep/bench_io.ts";
import { ioTable } from "../../src/cli/commands/bench_io.ts";
import { canDropPageCache } from "../../src/prep/page_cache.ts";
import { hasFfmpegCliSync } from "../helpers/media.ts";
import { makePacked } from "../dataset/shards/shard_fixture.ts";
import { withTempDir } from "../helpers/temp_dir.ts";

const skip = !hasFfmpegCliSync()
  ? "ffmpeg CLI not found (test clips are made with it)"
  : !canDropPageCache()
  ? "needs Linux and --allow-ffi"
  : "";
if (skip) console.log(`bench_io_test: skipped: ${skip}`);

Deno.test({
  name: "benchIo reads every byte of files and shards, cold and warm, and counts files and clips",
  ignore: skip !== "",
  fn: () =>
    withTempDir("sluice-benchio-", async (dir) => {
      const p = await makePacked(dir, 5, 48 * 1024);
      const passes = await benchIo([p.manifest, p.out], { cold: true });
      const videoBytes = (await Promise.all(p.videos.map((v) => Deno.stat(v)))).reduce(
        (n, s) => n + s.size,
        0,
      );
      const tarBytes = p.summary.shards.reduce((n, s) => n + s.size, 0);
      assert.deepEqual(
        passes.map((x) => [x.layout, x.access, x.cache, x.files, x.clips, x.bytes]),
        [
          ["files", "whole-file", "cold", 5, 5, videoBytes],
          ["files", "whole-file", "warm", 5, 5, videoBytes],
          ["shards", "sequential", "cold", p.summary.shards.length, 5, tarBytes],
          ["shards", "sequential", "warm", p.summary.shards.length, 5, tarBytes],
          ["shards", "indexed", "cold", 5, 5, videoBytes],
          ["shards", "indexed", "warm", 5, 5, videoBytes],
        ],
      );
      for (const x of passes) assert.ok(x.clipsPerSec > 0 && x.mbPerSec > 0);
      // --repeat: the median pass of several, the same bytes.
      const again = await benchIo([p.out], { cold: true, repeat: 3 });
      assert.deepEqual(again.map((x) => x.bytes), passes.slice(2).map((x) => x.bytes));
      const table = ioTable(passes);
      assert.match(table, /warm\/cold/);
      assert.equal(table.split("\n").filter((l) => l.includes(" cold ")).length, 3);
    }),
});
