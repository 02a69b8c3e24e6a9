/**
 * Oracles for the decoder tests (the loaded release's programs: `oracleCli`): the ffmpeg CLI's raw decode in
 * the coded orientation (`-noautorotate`, since sluice reports rotation instead of applying it), ffprobe's frame
 * times, PSNR, and a PNG file as ffprobe and ffmpeg's own PNG decoder read it.
 * @module
 */
import { ffprobeFrames, oracleCli, runCli } from "./media.ts";

/**
 * Raw frames from `ffmpeg -noautorotate -threads 1 -i F -map 0:<stream> [-vf filter] -pix_fmt fmt -f rawvideo`,
 * every decoded frame kept (`-vsync passthrough` unless the filter resamples). `program`: the ffmpeg to run (the
 * oracle for the loaded release by default).
 */
export async function cliRaw(
  path: string,
  opts: { streamIndex?: number; filter?: string; pixFmt: string; vsync?: string; program?: string },
): Promise<Uint8Array> {
  const map = opts.streamIndex === undefined ? "0:v:0" : `0:${opts.streamIndex}`;
  const args = ["-v", "error", "-nostdin", "-noautorotate", "-threads", "1", "-i", path, "-map", map];
  if (opts.filter) args.push("-vf", opts.filter);
  args.push("-pix_fmt", opts.pixFmt, "-vsync", opts.vsync ?? "passthrough", "-f", "rawvideo", "-");
  const r = await runCli(opts.program ?? oracleCli("ffmpeg"), args);
  if (r.code !== 0) throw new Error(`ffmpeg ${args.join(" ")} failed: ${r.stderr.slice(-1000)}`);
  return r.stdout;
}

/**
 * A PNG file (bytes, or a path) as ffprobe sizes it and the ffmpeg CLI decodes it: packed RGB bytes. The system's
 * programs: PNG is lossless, the same in every release, and the minimal builds have no PNG decoder.
 */
export async function decodePngCli(
  png: Uint8Array | string,
): Promise<{ width: number; height: number; rgb: Uint8Array }> {
  let path = png as string;
  if (typeof png !== "string") {
    path = await Deno.makeTempFile({ suffix: ".png" });
    await Deno.writeFile(path, png);
  }
  try {
    const probe = await runCli("ffprobe", ["-v", "error", "-of", "json", "-show_streams", path]);
    const [{ width, height, codec_name }] = JSON.parse(new TextDecoder().decode(probe.stdout)).streams;
    if (codec_name !== "png") throw new Error(`${path}: ffprobe reads ${codec_name}, not png`);
    return { width, height, rgb: await cliRaw(path, { pixFmt: "rgb24", program: "ffmpeg" }) };
  } finally {
    if (typeof png !== "string") await Deno.remove(path);
  }
}

/** ffprobe's time of each decoded frame (pts_time, or best_effort_timestamp_time when pts is N/A). */
export async function probeFrameTimes(path: string, streamIndex: number): Promise<number[]> {
  const frames = await ffprobeFrames(path, streamIndex);
  return frames.map((f) => f.ptsTime ?? f.bestEffortTimestampTime ?? NaN);
}

/** PSNR in dB of two equal-length byte arrays (Infinity when identical). */
export function psnr(a: Uint8Array, b: Uint8Array): number {
  if (a.length !== b.length) throw new Error(`psnr: lengths differ (${a.length} vs ${b.length})`);
  let se = 0;
  for (let i = 0; i < a.length; i++) {
    const d = a[i] - b[i];
    se += d * d;
  }
  if (se === 0) return Infinity;
  return 10 * Math.log10((255 * 255 * a.length) / se);
}

/** Fails unless `got` is the CLI's `ref` byte for byte, saying by how much it is not (PSNR, largest difference). */
export function assertSameBytes(got: Uint8Array, ref: Uint8Array, what: string): void {
  if (sameBytes(got, ref)) return;
  if (got.length !== ref.length) throw new Error(`${what}: ${got.length} bytes, the CLI's ${ref.length}`);
  let max = 0;
  for (let i = 0; i < got.length; i++) max = Math.max(max, Math.abs(got[i] - ref[i]));
  throw new Error(`${what}: not byte-identical (${psnr(got, ref).toFixed(1)} dB, up to ${max} levels)`);
}

/** True when two byte arrays are equal. */
export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * Indices of the frames on screen during `[s, e)`, from every frame's time in presentation order (ffprobe's frame
 * list): the one with the greatest time at or before `s` (none when `s` is at or after `end`, the stream's end),
 * then each presented in `(s, e)`. Frames without a time are left out. The rule of `"consecutive"` sampling,
 * written plainly. A time within 1e-9 s of `s` is at `s`: a start written `t0 + 0.8` is 3.5999999999999996
 * where ffprobe lists a frame at 3.6, which is on screen from the window's start.
 */
export function framesOnScreen(
  times: readonly number[],
  [s, e]: readonly [number, number],
  end = Infinity,
): number[] {
  let before = -1;
  const out: number[] = [];
  for (const [i, t] of times.entries()) {
    if (t <= s + 1e-9 && (before < 0 || t >= times[before])) before = i;
    else if (t > s + 1e-9 && t < e) out.push(i);
  }
  return before >= 0 && s < end ? [before, ...out] : out;
}
