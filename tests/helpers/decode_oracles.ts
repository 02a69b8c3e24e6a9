/**
 * Oracles for the decoder tests: the ffmpeg CLI's raw decode in the coded orientation (`-noautorotate`, since
 * sluice reports rotation instead of applying it), ffprobe's frame times, PSNR, and a PNG file as ffprobe and
 * ffmpeg's own PNG decoder read it.
 * @module
 */
import { ffprobeFrames, ffprobeInfo, runCli } from "./media.ts";
import { ffmpeg } from "../../src/media/ffmpeg.ts";
import { skipBecause } from "./skip.ts";

let cliSwscale: number | undefined;

/** Whether the libswscale sluice loaded here is another major than the one the system's ffmpeg CLI runs. */
export function swscaleDiffersFromCli(): boolean {
  if (cliSwscale === undefined) {
    const out = new Deno.Command("ffmpeg", { args: ["-version"], stdout: "piped" }).outputSync();
    const m = new TextDecoder().decode(out.stdout).match(/^libswscale\s+(\d+)\./m);
    cliSwscale = m ? Number(m[1]) : -1;
  }
  return ffmpeg().versions.swscale.major !== cliSwscale;
}

/** PSNR that sluice's pixels must reach where its libswscale is not the CLI's (see {@link matchesCli}). */
export const OTHER_SWSCALE_PSNR_DB = 45;

/**
 * Whether sluice's converted pixels `got` are the ffmpeg CLI's `ref`: byte for byte when both run the same
 * libswscale major (the system's, and the 4.3 and 7.1 builds, measured identical), else within
 * {@link OTHER_SWSCALE_PSNR_DB}: FFmpeg 8's libswscale 9 rounds 10-bit input and odd sizes otherwise (49.7 dB on a
 * 161×121 VP9, 59.9 dB on 10-bit HEVC, max 17 levels at the odd edge), which says so once.
 */
export function matchesCli(got: Uint8Array, ref: Uint8Array): boolean {
  if (sameBytes(got, ref)) return true;
  if (!swscaleDiffersFromCli()) return false;
  const db = psnr(got, ref);
  skipBecause(
    `FFmpeg ${ffmpeg().versionInfo}'s libswscale ${ffmpeg().versions.swscale.major} is not the ffmpeg CLI's: ` +
      `pixels are compared within ${OTHER_SWSCALE_PSNR_DB} dB, not byte for byte`,
  );
  return db >= OTHER_SWSCALE_PSNR_DB;
}

/**
 * Raw frames from `ffmpeg -noautorotate -threads 1 -i F -map 0:<stream> [-vf filter] -pix_fmt fmt -f rawvideo`,
 * every decoded frame kept (`-vsync passthrough` unless the filter resamples).
 */
export async function cliRaw(
  path: string,
  opts: { streamIndex?: number; filter?: string; pixFmt: string; vsync?: string },
): Promise<Uint8Array> {
  const map = opts.streamIndex === undefined ? "0:v:0" : `0:${opts.streamIndex}`;
  const args = ["-v", "error", "-nostdin", "-noautorotate", "-threads", "1", "-i", path, "-map", map];
  if (opts.filter) args.push("-vf", opts.filter);
  args.push("-pix_fmt", opts.pixFmt, "-vsync", opts.vsync ?? "passthrough", "-f", "rawvideo", "-");
  const r = await runCli("ffmpeg", args);
  if (r.code !== 0) throw new Error(`ffmpeg ${args.join(" ")} failed: ${r.stderr.slice(-1000)}`);
  return r.stdout;
}

/** A PNG file (bytes, or a path) as ffprobe sizes it and the ffmpeg CLI decodes it: packed RGB bytes. */
export async function decodePngCli(
  png: Uint8Array | string,
): Promise<{ width: number; height: number; rgb: Uint8Array }> {
  let path = png as string;
  if (typeof png !== "string") {
    path = await Deno.makeTempFile({ suffix: ".png" });
    await Deno.writeFile(path, png);
  }
  try {
    const { streams } = await ffprobeInfo(path);
    const [{ width, height, codec_name }] = streams;
    if (codec_name !== "png") throw new Error(`${path}: ffprobe reads ${codec_name}, not png`);
    return { width: width!, height: height!, rgb: await cliRaw(path, { pixFmt: "rgb24" }) };
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
