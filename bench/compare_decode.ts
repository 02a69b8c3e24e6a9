/**
 * Side-by-side decode throughput: decode + resize to 112×112 RGB24 (bilinear), frames per second, for
 * - sluice, one thread, in-process (`demuxVideo` + `decodeVideo`, threads: 1),
 * - the ffmpeg CLI: `ffmpeg -threads 1 -stream_loop R-1 -i F -vf scale=112:112:flags=bilinear -f rawvideo
 *   -pix_fmt rgb24 -y /dev/null` (R passes in one process, so process start-up is amortised),
 * - PyAV (`/usr/bin/python3`, `thread_count=1`, `frame.to_ndarray(width=112, height=112, format="rgb24")`, timed
 *   inside Python),
 * - sluice in a WorkerPool of 1 and of 2 Workers (`decode_worker.ts#decodeFile`).
 * All measured in the same run on the same files; the table reports ratios, which survive a noisy machine.
 *
 * Run: `deno run --allow-all bench/compare_decode.ts [--passes N]`
 * @module
 */
import { decodeVideo } from "../src/media/decode.ts";
import { demuxVideo } from "../src/media/demux.ts";
import { WorkerPool } from "../src/pipeline/worker_pool.ts";
import type { VideoFrames } from "../src/media/frames.ts";
import { generateClip, sharedMedia } from "../tests/helpers/media.ts";
import { runFfmpegBaseline } from "./fixtures/ffmpeg_baseline.ts";

const passesArg = Deno.args.indexOf("--passes");
const PASSES = passesArg >= 0 ? Number(Deno.args[passesArg + 1]) : 3;
/** Each tool is measured this many times, interleaved, and the median kept (the machine is shared and noisy). */
const ROUNDS = 3;
/** Stream 0 everywhere: what `-map 0:v:0` and PyAV's `streams.video[0]` pick (the NASA file has two). */
const SIZE = { width: 112, height: 112, streamIndex: 0 };

async function files(): Promise<{ name: string; path: string }[]> {
  const out = [{
    name: "generated H.264 340x256 (bf=2)",
    path: await generateClip({ width: 340, height: 256, durationSec: 10, bframes: 2, gop: 25 }),
  }];
  for (const f of ["h264_nasa_bframes_aac.mp4", "h264_opus_pancake.mkv", "vp9_opus_bbb.webm"]) {
    const p = sharedMedia(f);
    if (p) out.push({ name: f, path: p });
  }
  return out;
}

async function sluice(path: string): Promise<number> {
  await decodeVideo(await demuxVideo(path, SIZE), SIZE); // warm-up: libraries, decoder, scaler
  let frames = 0;
  const t0 = performance.now();
  for (let i = 0; i < PASSES; i++) frames += (await decodeVideo(await demuxVideo(path, SIZE), SIZE)).shape[0];
  return frames / ((performance.now() - t0) / 1000);
}

async function ffmpegCli(path: string, framesPerPass: number): Promise<number> {
  return (framesPerPass * PASSES) / await runFfmpegBaseline(path, PASSES);
}

const PYAV = `
import sys, time, av
path, passes = sys.argv[1], int(sys.argv[2])
def run():
    n = 0
    with av.open(path) as c:
        s = c.streams.video[0]
        s.thread_count = 1
        for f in c.decode(s):
            f.to_ndarray(width=112, height=112, format="rgb24")
            n += 1
    return n
run()
t = time.perf_counter(); n = sum(run() for _ in range(passes)); dt = time.perf_counter() - t
print(n / dt)
`;

async function pyav(path: string): Promise<number | null> {
  try {
    const r = await new Deno.Command("/usr/bin/python3", {
      args: ["-c", PYAV, path, String(PASSES)],
      stdout: "piped",
      stderr: "piped",
    })
      .output();
    if (r.code !== 0) return null;
    return Number(new TextDecoder().decode(r.stdout).trim());
  } catch {
    return null;
  }
}

async function pool(path: string, size: number, tasks: number): Promise<number> {
  const p = new WorkerPool(new URL("../src/media/decode_worker.ts", import.meta.url), { size });
  try {
    await Promise.all(Array.from({ length: size }, () => p.call("decodeFile", [path, SIZE]))); // warm every Worker
    const t0 = performance.now();
    const results = await Promise.all(
      Array.from({ length: tasks }, () => p.call<VideoFrames>("decodeFile", [path, SIZE])),
    );
    const frames = results.reduce((a, r) => a + r.shape[0], 0);
    return frames / ((performance.now() - t0) / 1000);
  } finally {
    p.close();
  }
}

const fmt = (x: number | null) => (x === null ? "n/a" : x.toFixed(0).padStart(6));
const ratio = (a: number, b: number | null) => (b === null || b === 0 ? "n/a" : (a / b).toFixed(2) + "×");

console.log(
  `decode + resize to 112x112 rgb24, frames/s (${PASSES} passes per file; 1 decoder thread everywhere)\n`,
);
console.log(
  "| file | sluice 1T | ffmpeg CLI | PyAV | sluice/CLI | sluice/PyAV | pool 1W | pool 2W | 2W/1W |",
);
console.log("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
function median(xs: (number | null)[]): number | null {
  const v = xs.filter((x): x is number => x !== null).sort((a, b) => a - b);
  return v.length === 0 ? null : v[Math.floor(v.length / 2)];
}

for (const { name, path } of await files()) {
  const framesPerPass = (await decodeVideo(await demuxVideo(path, SIZE), SIZE)).shape[0];
  const m: Record<string, (number | null)[]> = { s: [], c: [], py: [], w1: [], w2: [] };
  for (let r = 0; r < ROUNDS; r++) {
    m.s.push(await sluice(path));
    m.c.push(await ffmpegCli(path, framesPerPass));
    m.py.push(await pyav(path));
    m.w1.push(await pool(path, 1, 4 * PASSES));
    m.w2.push(await pool(path, 2, 4 * PASSES));
  }
  const [s, c, py, w1, w2] = [m.s, m.c, m.py, m.w1, m.w2].map(median) as [
    number,
    number,
    number | null,
    number,
    number,
  ];
  console.log(
    `| ${name} | ${fmt(s)} | ${fmt(c)} | ${fmt(py)} | ${ratio(s, c)} | ${ratio(s, py)} | ${fmt(w1)} | ${
      fmt(w2)
    } | ${ratio(w2, w1)} |`,
  );
}
