// The bottleneck verdict of real loaders (issue 23 item 5): `loader.stats().pipeline.bottleneck` names the stage
// that limits throughput. In-process, demux and decode share one WorkerPool: a demux task queued behind decode's
// Workers is waiting, not working, so a loader whose decode saturates the Workers is decode-bound (the old
// verdict named demux). Three loaders built to be limited by one stage each: decode (large frames, cheap
// demux), fetch (a throttled HTTP server) and demux (MPEG-TS files, whose header lacks the picture size, so every
// open runs `avformat_find_stream_info`, over long windows of which one small frame is decoded).
import assert from "node:assert/strict";
import { type LoaderOptions, videoClassificationLoader } from "../../src/loader/loader.ts";
import { formatStats } from "../../src/pipeline/format_stats.ts";
import { generateClip, hasFfmpegCliSync } from "../helpers/media.ts";
import { serveDir } from "../helpers/http_server.ts";

const CLI = hasFfmpegCliSync();

/** Runs `epochs` epochs of a loader over `rows` (`path,label[,start,end]`) and returns its verdict and stats. */
async function verdict(
  rows: string[],
  opts: Partial<LoaderOptions>,
  epochs = 1,
): Promise<{ bottleneck: string | null; table: string }> {
  const dir = await Deno.makeTempDir({ prefix: "sluice-verdict-" });
  try {
    const manifest = `${dir}/m.csv`;
    Deno.writeTextFileSync(manifest, ["path,label,start,end", ...rows].join("\n") + "\n");
    await using loader = await videoClassificationLoader({
      dataset: manifest,
      batchSize: 4,
      log: () => {},
      ...opts,
    } as LoaderOptions);
    let clips = 0;
    for (let e = 0; e < epochs; e++) for await (using b of loader) clips += b.labels.length;
    assert.equal(clips, epochs * loader.clipsPerEpoch, "every clip arrived");
    const s = loader.stats();
    return { bottleneck: s.pipeline.bottleneck, table: formatStats(s.pipeline) };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

for (const backend of ["inprocess", "subprocess"] as const) {
  Deno.test({
    name: `loader verdict (${backend}): full-size frames from local files are decode-bound`,
    ignore: !CLI,
    fn: async () => {
      // 640×480, 16 frames per clip kept at full size: decoding and scaling are the work; demux opens each file
      // once for its 4 clips.
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
      const v = await verdict(videos.map((p, i) => `${p},${i % 2},,`), {
        backend,
        clip: { numFrames: 16, width: 640, height: 480 },
        sampler: { seed: 3, clipsPerVideo: 4 },
      });
      assert.equal(v.bottleneck, "decode", v.table);
    },
  });
}

Deno.test({
  name: "loader verdict: a throttled fetch (400 ms per file over HTTP) is fetch-bound",
  ignore: !CLI,
  fn: async () => {
    const clip = await generateClip({ width: 160, height: 120, durationSec: 2, gop: 25 });
    const dir = clip.slice(0, clip.lastIndexOf("/"));
    await using srv = serveDir(dir);
    const name = clip.slice(dir.length);
    // Eight names of one file (a query string each), so every row is its own video to fetch.
    const rows = Array.from({ length: 8 }, (_, i) => `${srv.base}slow/400${name}?v=${i},${i % 2},,`);
    const v = await verdict(rows, {
      clip: { numFrames: 2, width: 32, height: 32 },
      sampler: { seed: 3, clipsPerVideo: 1 },
      concurrency: { fetch: 1 },
    });
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
          durationSec: 10,
          gop: 5,
          source: i % 2 ? "testsrc2" : "mandelbrot",
        })
      ),
    );
    // Each row is one 9 s window read from the start; the clip is its first frame, at 32×32.
    const rows = Array.from({ length: 16 }, (_, i) => `${videos[i % 4]},${i % 2},0,9`);
    const v = await verdict(rows, {
      clip: { numFrames: 1, width: 32, height: 32 },
      sampler: { seed: 3, clipsPerVideo: 1, clipDurationSec: 3600, shuffle: false },
    });
    assert.equal(v.bottleneck, "demux", v.table);
  },
});
