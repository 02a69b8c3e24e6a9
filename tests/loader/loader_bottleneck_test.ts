// The bottleneck verdict of real loaders (issue 23 item 5), as `sluice load` reports it from
// `loader.stats().pipeline.bottleneck`: it names the stage
// that limits throughput. In-process, demux and decode share one WorkerPool: a demux task queued behind decode's
// Workers is waiting, not working, so a loader whose decode saturates the Workers is decode-bound (the old
// verdict named demux). Three loaders built to be limited by one stage each: decode (large frames, cheap
// demux), fetch (a throttled HTTP server) and demux (MPEG-TS files, whose header lacks the picture size, so every
// open runs `avformat_find_stream_info`, over long windows of which one small frame is decoded).
import assert from "node:assert/strict";
import { generateClip, hasFfmpegCliSync } from "../helpers/media.ts";
import { serveDir } from "../helpers/http_server.ts";
import { sluice } from "../cli/helpers.ts";

const CLI = hasFfmpegCliSync();

/**
 * Runs `sluice load --json` (a fresh `deno run`: its Workers start without the type-check `deno test` gives them)
 * over a manifest of `rows` (`path,label,start,end`) and returns the verdict it reports, which is
 * `loader.stats().pipeline.bottleneck`, with the per-stage rows for a failure's message.
 */
async function verdict(
  rows: string[],
  flags: string,
): Promise<{ bottleneck: string | null; table: string; utilization: Record<string, number> }> {
  const dir = await Deno.makeTempDir({ prefix: "sluice-verdict-" });
  try {
    const manifest = `${dir}/m.csv`;
    Deno.writeTextFileSync(manifest, ["path,label,start,end", ...rows].join("\n") + "\n");
    const r = await sluice(["load", manifest, "--json", "--batch-size", "4", ...flags.split(" ")]);
    assert.equal(r.code, 0, r.stderr);
    const s = JSON.parse(r.stdout);
    assert.equal(s.clips.delivered, s.clips.planned, "every clip arrived");
    const table = JSON.stringify(
      s.pipeline.stages.map((x: Record<string, unknown>) => [x.name, x.utilization, x.busyMs]),
    );
    const utilization = Object.fromEntries(
      s.pipeline.stages.map((x: { name: string; utilization: number }) => [x.name, x.utilization]),
    );
    return { bottleneck: s.bottleneck, table, utilization };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

for (const backend of ["inprocess", "subprocess"] as const) {
  Deno.test({
    name: `loader verdict (${backend}): full-size frames from local files are decode-bound`,
    ignore: !CLI,
    fn: async () => {
      // 640×480, 16 frames per clip kept at full size: decoding and scaling are the work. One clip per row, so
      // demux runs once per clip and, in-process, queues for a Worker that decode holds (the old verdict named it).
      const videos = await Promise.all(
        [0, 1, 2, 3].map((i) =>
          generateClip({
            width: 640,
            height: 480,
            durationSec: 4,
            gop: 25,
            source: i % 2 ? "testsrc2" : "mandelbrot",
          })
        ),
      );
      const rows = Array.from(
        { length: 16 },
        (_, i) => `${videos[i % 4]},${i % 2},${(i >> 2) * 0.8},${(i >> 2) * 0.8 + 0.9}`,
      );
      const v = await verdict(rows, `--backend ${backend} --frames 16 --width 640 --height 480 --seed 3`);
      assert.equal(v.bottleneck, "decode", v.table);
      if (backend === "inprocess") {
        // Demux's own work is a fraction of decode's; its time queued behind decode's Workers is not work, so it
        // must not look the busier stage (the old accounting showed demux ~100% busy here).
        assert.ok(v.utilization.demux < v.utilization.decode, v.table);
      }
    },
  });
}

Deno.test({
  name: "loader verdict: a throttled fetch (600 ms per file over HTTP) is fetch-bound",
  ignore: !CLI,
  fn: async () => {
    const clip = await generateClip({ width: 160, height: 120, durationSec: 2, gop: 25 });
    const dir = clip.slice(0, clip.lastIndexOf("/"));
    await using srv = serveDir(dir);
    const name = clip.slice(dir.length);
    // Sixteen names of one file (a query string each), so every row is its own video to fetch.
    const rows = Array.from({ length: 16 }, (_, i) => `${srv.base}slow/600${name}?v=${i},${i % 2},,`);
    const v = await verdict(rows, "--frames 2 --width 32 --height 32 --seed 3 --fetch-concurrency 1");
    assert.equal(v.bottleneck, "fetch", v.table);
  },
});

Deno.test({
  name:
    "loader verdict: MPEG-TS (find_stream_info at every open) over long windows, one small frame each, is demux-bound",
  ignore: !CLI,
  fn: async () => {
    const videos = await Promise.all(
      [0, 1, 2, 3].map((i) =>
        generateClip({
          container: "ts",
          width: 640,
          height: 480,
          durationSec: 8,
          gop: 5,
          source: i % 2 ? "testsrc2" : "mandelbrot",
        })
      ),
    );
    // Each row is one 7 s window read from the start; the clip is its first frame, at 32×32. Each row names its
    // video by a path of its own (a link), so rows of one file do not share one demux and decode pass (decode once
    // across rows would leave demux mostly idle: 9 of 12 rows served by another's pass).
    const links = await Deno.makeTempDir({ prefix: "sluice-verdict-links-" });
    try {
      const rows = Array.from({ length: 12 }, (_, i) => {
        const link = `${links}/v${i}.ts`;
        Deno.symlinkSync(videos[i % 4], link);
        return `${link},${i % 2},0,7`;
      });
      const v = await verdict(rows, "--frames 1 --width 32 --height 32 --seed 3 --clip-duration 3600");
      assert.equal(v.bottleneck, "demux", v.table);
    } finally {
      await Deno.remove(links, { recursive: true });
    }
  },
});
