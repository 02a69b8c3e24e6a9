/**
 * Where the ffmpeg CLI must seek to start a clip with the frame on screen at its start (sluice's rule,
 * docs/clips.md), for the CLI contender and the decode floor (`bench/decode_floor.ts`).
 *
 * `ffmpeg -ss X -copyts -i F` (input seeking, accurate by default) decodes from the keyframe before `X` and keeps
 * the frames whose time is ≥ `X` (in the stream's time base). The frame on screen at `start` is the latest
 * presented at or before it; at a constant frame rate with frame duration `d`, that is the first frame presented
 * after `start − d`. So `X` is the first time-base tick after `start − d`: every frame before it is dropped, the
 * one on screen at `start` is the first kept. (The workload's videos are constant-rate; a variable-rate video
 * would need its frame list.)
 * @module
 */

/** What {@link seekTime} needs of a video stream. */
export interface StreamTiming {
  /** Time base numerator and denominator. */
  tbNum: number;
  tbDen: number;
  /** One frame's duration, seconds (from the stream's average frame rate). */
  frameSec: number;
}

/** The first video stream's time base and frame duration, from ffprobe. */
export async function probeTiming(path: string): Promise<StreamTiming> {
  const r = await new Deno.Command("ffprobe", {
    args: [
      ...["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=time_base,avg_frame_rate"],
      ...["-of", "json", path],
    ],
    stdin: "null",
  }).output();
  if (!r.success) throw new Error(`ffprobe ${path}: ${new TextDecoder().decode(r.stderr)}`);
  const s = JSON.parse(new TextDecoder().decode(r.stdout)).streams?.[0];
  const [tbNum, tbDen] = String(s?.time_base ?? "").split("/").map(Number);
  const [rn, rd] = String(s?.avg_frame_rate ?? "").split("/").map(Number);
  if (!(tbNum > 0 && tbDen > 0 && rn > 0 && rd > 0)) {
    throw new Error(`${path}: no time base or frame rate (${JSON.stringify(s)})`);
  }
  return { tbNum, tbDen, frameSec: rd / rn };
}

/** Probes each distinct path of `paths` once. */
export async function probeAll(paths: Iterable<string>): Promise<Map<string, StreamTiming>> {
  const out = new Map<string, StreamTiming>();
  for (const p of new Set(paths)) out.set(p, await probeTiming(p));
  return out;
}

/** `-ss`'s value (seconds, microsecond digits) that starts at the frame on screen at `start`; see the module docs. */
export function seekTime(start: number, t: StreamTiming): string {
  const tick = Math.floor(((start - t.frameSec) * t.tbDen) / t.tbNum) + 1;
  return Math.max(0, (tick * t.tbNum) / t.tbDen).toFixed(6);
}
