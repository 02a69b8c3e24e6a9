/**
 * Demux throughput under concurrency, and the cost of `avformat_find_stream_info` (which opens decoders, some
 * behind FFmpeg's process-wide codec lock). Each iteration: `c` Worker threads each demux one 1-second window
 * from each of the media files (header-only open, sluice's default), versus the same with find_stream_info
 * forced on (`streamInfo: "always"`), at c = 1, 2, 4, 8. Prints the median per-item latency measured inside
 * the workers and the ratio forced / default measured in the same run (runs interleaved).
 * Run: `deno run --allow-all bench/demux.bench.ts` (also runs under `deno bench`, which just executes it).
 */
import { generateClip, sharedMedia } from "../tests/helpers/media.ts";

const shared = ["h264_nasa_bframes_aac.mp4", "h264_opus_pancake.mkv", "vp9_opus_bbb.webm", "av1_aac.mp4"]
  .map(sharedMedia).filter((p): p is string => p !== null);
const files = shared.length > 0 ? shared : [
  await generateClip({ bframes: 2, durationSec: 4, audio: true }),
  await generateClip({ container: "mkv", durationSec: 4, audio: true }),
];
const WINDOW: [number, number] = [0.5, 1.0];
const ROUNDS = 4; // files demuxed ROUNDS times per worker per iteration

const workers: Worker[] = [];
for (let i = 0; i < 8; i++) {
  workers.push(new Worker(import.meta.resolve("./fixtures/demux_worker.ts"), { type: "module" }));
}

function run(c: number, streamInfo: "auto" | "always"): Promise<number[]> {
  const list = Array.from({ length: ROUNDS }, () => files).flat();
  return Promise.all(
    workers.slice(0, c).map((w) =>
      new Promise<number[]>((resolve) => {
        w.onmessage = (ev: MessageEvent<{ ms: number[] }>) => resolve(ev.data.ms);
        w.postMessage({ files: list, window: WINDOW, streamInfo });
      })
    ),
  ).then((all) => all.flat());
}

const median = (a: number[]) => a.slice().sort((x, y) => x - y)[a.length >> 1];

await run(8, "always"); // warm every worker (dlopen, page cache)
console.log(
  `demux of one ${WINDOW[1] - WINDOW[0]} s window per item, ${files.length} files, ${Deno.build.os}`,
);
console.log("workers | header only: ms/item (median) | find_stream_info forced: ms/item | forced / default");
const REPEATS = 3;
for (const c of [1, 2, 4, 8]) {
  const auto: number[] = [], forced: number[] = [];
  for (let r = 0; r < REPEATS; r++) { // interleaved so machine noise hits both alike
    auto.push(...await run(c, "auto"));
    forced.push(...await run(c, "always"));
  }
  const a = median(auto), f = median(forced);
  console.log(
    `${String(c).padStart(7)} | ${a.toFixed(3).padStart(29)} | ${f.toFixed(3).padStart(32)} | ${
      (f / a).toFixed(2)
    }x`,
  );
}
for (const w of workers) w.terminate();
