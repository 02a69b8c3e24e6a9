/**
 * The decode floor of a clip list: the CPU time a single-threaded FFmpeg decoder needs to decode the frames each
 * clip requires, from its keyframe to its last frame, with nothing else (no scaling, no copies, no process or
 * pipeline overhead). Every contender's CPU per clip is shown against it, as a fraction of the physical limit.
 *
 * Method: per clip, `ffmpeg -benchmark_all -threads 1 -ss X -copyts -i FILE -map 0:v:0 -frames:v T
 * -fps_mode passthrough -f null -`, where `X` starts at the frame on screen at the clip's start (the seek of the
 * CLI contender, `contenders/ffmpeg_seek.ts`): FFmpeg seeks to the keyframe before it and decodes forward until
 * the clip's `T` frames are out. `-benchmark_all` prints the user and system time of each decoder call
 * (`decode_video`); their sum is the floor, so opening the file, probing, seeking and the null muxer are not in
 * it (no empty run to subtract). It decodes every frame from the keyframe on, plus the one to three frames the
 * decoder holds for reordering B-frames before it gives out the last one; sluice's `decodeLess.skip` leaves
 * undecoded the non-reference frames before a window, so its own decode can come in under this floor. Two clips
 * are measured at a time (one per core).
 *
 * Run alone: `deno run -A bench/decode_floor.ts --clips CLIPS.json [--passes 1-]` (a clip list written by
 * `bench/clip_workload.ts`; pass numbers or ranges, default all but the warm-up pass 0).
 * @module
 */

import { parseArgs } from "node:util";
import type { Clip, ClipList } from "./contenders/harness.ts";
import { probeAll, seekTime } from "./contenders/ffmpeg_seek.ts";

/** The floor of a list of clips. */
export interface DecodeFloor {
  clips: number;
  /** Decoder CPU seconds, summed over the clips. */
  cpuSec: number;
  /** `cpuSec / clips`. */
  perClip: number;
}

/** Decoder CPU seconds of one clip, decoded from `-ss ss`. */
export async function clipFloor(c: Clip, numFrames: number, ss: string): Promise<number> {
  const args = [
    ...["-hide_banner", "-nostdin", "-benchmark_all", "-threads", "1", "-ss", ss, "-copyts", "-i", c.path],
    ...["-map", "0:v:0", "-frames:v", String(numFrames), "-fps_mode", "passthrough", "-f", "null", "-"],
  ];
  const r = await new Deno.Command("ffmpeg", { args, stdin: "null", stdout: "null", stderr: "piped" })
    .output();
  const err = new TextDecoder().decode(r.stderr);
  if (!r.success) throw new Error(`ffmpeg ${args.join(" ")}: ${err.slice(-500)}`);
  let us = 0;
  // bench: <user µs> user <sys µs> sys <real µs> real decode_video <file>.<stream>
  for (const m of err.matchAll(/bench:\s+(\d+) user\s+(\d+) sys\s+\d+ real decode_video /g)) {
    us += Number(m[1]) + Number(m[2]);
  }
  if (us === 0) throw new Error(`ffmpeg ${args.join(" ")}: no decode_video timings in its output`);
  return us / 1e6;
}

/** The floor of `clips` (two measured at a time); see the module docs. */
export async function decodeFloor(clips: Clip[], numFrames: number, jobs = 2): Promise<DecodeFloor> {
  const timing = await probeAll(clips.map((c) => c.path));
  return await sumConcurrently(
    clips,
    (c) => clipFloor(c, numFrames, seekTime(c.start, timing.get(c.path)!)),
    jobs,
  );
}

/** `measure` of every clip, `jobs` at a time, summed (each clip's seconds counted once, whatever the order). */
export async function sumConcurrently(
  clips: Clip[],
  measure: (c: Clip) => Promise<number>,
  jobs: number,
): Promise<DecodeFloor> {
  let next = 0, cpuSec = 0;
  const one = async () => {
    while (next < clips.length) {
      // Awaited before it is added: `cpuSec += await …` would read cpuSec first and lose the other job's sums.
      const sec = await measure(clips[next++]);
      cpuSec += sec;
    }
  };
  await Promise.all(Array.from({ length: jobs }, one));
  return { clips: clips.length, cpuSec, perClip: clips.length > 0 ? cpuSec / clips.length : NaN };
}

/** The passes `spec` names (`"1-"`, `"0,2-3"`) among `n`. */
function passNumbers(spec: string, n: number): number[] {
  const out = new Set<number>();
  for (const part of spec.split(",")) {
    const [a, b] = part.split("-");
    const lo = Number(a), hi = b === undefined ? lo : b === "" ? n - 1 : Number(b);
    for (let p = lo; p <= Math.min(hi, n - 1); p++) out.add(p);
  }
  return [...out].sort((x, y) => x - y);
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: { clips: { type: "string" }, passes: { type: "string", default: "1-" } },
  });
  if (values.clips === undefined) throw new Error("--clips CLIPS.json is required");
  const list = JSON.parse(Deno.readTextFileSync(values.clips)) as ClipList;
  const passes = passNumbers(values.passes!, list.passes.length);
  const f = await decodeFloor(passes.flatMap((p) => list.passes[p]), list.numFrames);
  console.log(
    `${f.clips} clips: decode floor ${(f.perClip * 1000).toFixed(2)} ms/clip (${
      f.cpuSec.toFixed(2)
    } s in all)`,
  );
}
