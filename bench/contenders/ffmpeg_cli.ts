/**
 * Contender: the ffmpeg CLI spawned once per clip, `--jobs` (2) at a time, its raw RGB24 output read from a pipe
 * and assembled, in list order, into `[B, T, H, W, 3]` batches. Per clip:
 *
 * `ffmpeg -ss X -copyts -i FILE -map 0:v:0 -frames:v T -fps_mode passthrough
 *   -vf scale=W:H:flags=bilinear -f rawvideo -pix_fmt rgb24 -`
 *
 * (input seeking: FFmpeg seeks to the keyframe before X and drops the frames before it; X is the time from which
 * the first frame kept is the one on screen at the clip's start, see `ffmpeg_seek.ts`, from each video's time
 * base and frame rate, probed once before the first pass; `-fps_mode passthrough` keeps the frames as decoded
 * instead of duplicating the first to X, see /work/shared/NOTES.md; everything else is the CLI's default,
 * threads included). In verify mode a `showinfo` filter after the scaler reports each frame's time (`-copyts`
 * keeps them in the file's time line).
 *
 * Contract and measurement: `harness.ts`. Run:
 * `deno run -A bench/contenders/ffmpeg_cli.ts --clips FILE --mode time|verify [--out DIR] [--jobs 2]`
 * @module
 */

import { type Clip, contenderArgs } from "./harness.ts";
import { probeAll, seekTime } from "./ffmpeg_seek.ts";

const { list, verify, out, opts } = contenderArgs(Deno.args, { jobs: "2" });
const { numFrames: T, width: W, height: H, batchSize } = list;
const clipBytes = T * W * H * 3;
const timing = await probeAll(list.passes.flat().map((c) => c.path));

async function decodeClip(c: Clip): Promise<{ data: Uint8Array; pts: number[] }> {
  const vf = `scale=${W}:${H}:flags=bilinear${verify ? ",showinfo" : ""}`;
  const args = [
    ...["-hide_banner", "-nostdin", "-loglevel", verify ? "info" : "error"],
    ...[
      "-ss",
      seekTime(c.start, timing.get(c.path)!),
      "-copyts",
      "-i",
      c.path,
      "-map",
      "0:v:0",
      "-frames:v",
      String(T),
    ],
    ...["-fps_mode", "passthrough", "-vf", vf, "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
  ];
  const r = await new Deno.Command("ffmpeg", { args, stdin: "null" }).output();
  const err = new TextDecoder().decode(r.stderr);
  if (!r.success) throw new Error(`ffmpeg ${args.join(" ")}: ${err.slice(-500)}`);
  if (r.stdout.length !== clipBytes) {
    throw new Error(`${c.path} @ ${c.start}: ffmpeg wrote ${r.stdout.length} bytes, not ${clipBytes}`);
  }
  const pts = verify ? [...err.matchAll(/pts_time:([-0-9.e]+)/g)].slice(0, T).map((m) => Number(m[1])) : [];
  return { data: r.stdout, pts };
}

/** Decodes `clips` `jobs` at a time; calls `onBatch` with each full batch, in list order. */
async function runPass(
  clips: Clip[],
  onBatch: (batch: Uint8Array, pts: number[][]) => void,
): Promise<number> {
  const results = new Map<number, { data: Uint8Array; pts: number[] }>();
  let next = 0, emitted = 0;
  let batch = new Uint8Array(0), pts: number[][] = [];
  const flush = () => {
    while (results.has(emitted)) {
      const r = results.get(emitted)!;
      results.delete(emitted);
      if (pts.length === 0) batch = new Uint8Array(Math.min(batchSize, clips.length - emitted) * clipBytes);
      batch.set(r.data, pts.length * clipBytes);
      pts.push(r.pts);
      emitted++;
      if (pts.length === batchSize || emitted === clips.length) {
        onBatch(batch, pts);
        pts = [];
      }
    }
  };
  const job = async () => {
    while (next < clips.length) {
      const i = next++;
      results.set(i, await decodeClip(clips[i]));
      flush();
    }
  };
  await Promise.all(Array.from({ length: Number(opts.jobs) }, job));
  return emitted;
}

if (verify) {
  const frames: Uint8Array[] = [], allPts: number[][] = [];
  await runPass(list.passes[0], (b, p) => {
    frames.push(b);
    allPts.push(...p);
  });
  const all = new Uint8Array(frames.reduce((a, f) => a + f.length, 0));
  let o = 0;
  for (const f of frames) all.set(f, (o += f.length) - f.length);
  Deno.writeFileSync(`${out}/frames.bin`, all);
  Deno.writeTextFileSync(`${out}/pts.json`, JSON.stringify(allPts));
} else {
  for (const [p, clips] of list.passes.entries()) {
    console.log(JSON.stringify({ event: "start", pass: p }));
    const t0 = performance.now();
    const n = await runPass(clips, () => {});
    const wall = (performance.now() - t0) / 1000;
    console.log(JSON.stringify({ event: "end", pass: p, wall, clips: n, frames: n * T, decoded: null }));
  }
}
