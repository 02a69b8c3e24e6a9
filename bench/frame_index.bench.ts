/**
 * `deno bench` for what frame identity costs the demuxer: 3 windows (after seeks) of a video demuxed from one open,
 * without `firstFrameIndex` (`frameIndex: false`, the baseline), with it and the stream's keyframe table read
 * cold (a file this thread has not seen: one read of every packet), and with the table kept from before (the
 * next epoch). Two videos: a 10 s 340×256 H.264 clip (a training clip) and a 2-minute 1280×720 H.264 MKV (44 MB,
 * a long recording). Each cold iteration demuxes a fresh copy (the copy is not timed).
 * @module
 */
import { demuxVideo, type TimeWindow } from "../src/media/demux.ts";
import { generateClip } from "../tests/helpers/media.ts";

const sources = [
  {
    name: "10 s 340x256",
    path: await generateClip({ width: 340, height: 256, durationSec: 10, bframes: 2, gop: 25 }),
  },
  {
    name: "2 min 720p MKV",
    path: await generateClip({
      width: 1280,
      height: 720,
      durationSec: 120,
      fps: 30,
      gop: 250,
      bframes: 2,
      container: "mkv",
    }),
  },
];
const dir = await Deno.makeTempDir({ prefix: "sluice-bench-fi-" });
globalThis.addEventListener("unload", () => Deno.removeSync(dir, { recursive: true }));
let copies = 0;

for (const src of sources) {
  const dur = src.name.startsWith("10") ? 10 : 120;
  const windows: TimeWindow[] = [[dur * 0.2, dur * 0.2 + 0.64], [dur * 0.5, dur * 0.5 + 0.64], [
    dur * 0.8,
    dur * 0.8 + 0.64,
  ]];
  const group = `demux 3 windows, ${src.name}`;
  Deno.bench({
    name: "without firstFrameIndex (frameIndex: false)",
    group,
    baseline: true,
    async fn() {
      await demuxVideo(src.path, { windows, frameIndex: false });
    },
  });
  Deno.bench({
    name: "with firstFrameIndex, keyframe table read (a file not seen before)",
    group,
    async fn(b) {
      const copy = `${dir}/${copies++}.${src.path.split(".").pop()}`;
      await Deno.copyFile(src.path, copy);
      b.start();
      await demuxVideo(copy, { windows });
      b.end();
      await Deno.remove(copy);
    },
  });
  Deno.bench({
    name: "with firstFrameIndex, keyframe table kept (seen before)",
    group,
    async fn() {
      await demuxVideo(src.path, { windows });
    },
  });
}
