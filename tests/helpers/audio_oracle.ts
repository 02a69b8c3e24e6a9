/**
 * Test helpers for clip audio: sources with an audio track made by the ffmpeg CLI, and PyAV's decode + resample
 * of the same windows (`pyav_audio.py`, Debian's `/usr/bin/python3` with av 10) as the oracle.
 * @module
 */
import { CLIP_CACHE_DIR, runCli } from "./media.ts";

/** What {@link audioSource} encodes. */
export interface AudioSourceSpec {
  /** Audio encoder ("aac", "libopus", "libmp3lame", "ac3"); absent: no audio track. */
  codec?: string;
  /** Container extension (default "mkv"). */
  container?: string;
  /** Audio sample rate (default 44100; 48000 for Opus). */
  rate?: number;
  /** 1 or 2 channels (default 2: a different tone in each). */
  channels?: number;
  /** Seconds of video (default 3). */
  videoSec?: number;
  /** Seconds of audio (default: as long as the video). */
  audioSec?: number;
}

/** Encodes a small video (64×48 H.264) with the audio track `spec` asks for; cached per spec. */
export async function audioSource(spec: AudioSourceSpec): Promise<string> {
  const videoSec = spec.videoSec ?? 3, audioSec = spec.audioSec ?? videoSec;
  const rate = spec.rate ?? (spec.codec === "libopus" ? 48000 : 44100);
  const exprs = (spec.channels ?? 2) === 1
    ? "0.5*sin(2*PI*440*t)"
    : "0.5*sin(2*PI*440*t)|0.3*sin(2*PI*1234*t+1)";
  const args = ["-v", "error", "-nostdin", "-f", "lavfi", "-i", `testsrc2=size=64x48:rate=25:d=${videoSec}`];
  if (spec.codec) args.push("-f", "lavfi", "-i", `aevalsrc=exprs='${exprs}':s=${rate}:d=${audioSec}`);
  args.push("-c:v", "libx264", "-threads", "1", "-g", "12", "-bf", "0", "-pix_fmt", "yuv420p");
  if (spec.codec) args.push("-c:a", spec.codec);
  const ext = spec.container ?? "mkv";
  const digest = await crypto.subtle.digest("SHA-1", new TextEncoder().encode(args.join(" ") + ext));
  const key = [...new Uint8Array(digest)].slice(0, 8).map((b) => b.toString(16).padStart(2, "0")).join("");
  await Deno.mkdir(CLIP_CACHE_DIR, { recursive: true });
  const path = `${CLIP_CACHE_DIR}/audio-${key}.${ext}`;
  try {
    await Deno.stat(path);
    return path;
  } catch { /* make it */ }
  const tmp = `${CLIP_CACHE_DIR}/.audio-${crypto.randomUUID()}.${ext}`;
  const r = await runCli("ffmpeg", [...args, "-y", tmp]);
  if (r.code !== 0) throw new Error(`ffmpeg ${args.join(" ")}: ${r.stderr}`);
  await Deno.rename(tmp, path);
  return path;
}

/** PyAV's samples of each window: planar float32 `[channels, n]` per window, and the track's first pts. */
export interface PyavAudio {
  /** Output pts of the resampled track's first sample (1/rate units). */
  first: number;
  /** Samples the resampled track holds (from `first` on). */
  total: number;
  /** The time (seconds) of the track's first decoded frame, and the track's own sample rate. */
  start: number;
  inRate: number;
  windows: Float32Array[];
}

/**
 * Decodes `path`'s audio with PyAV (stream `streamIndex`, an absolute index; default its first audio stream),
 * resamples it to `rate` Hz and `channels`, and cuts `windows` from it.
 */
export async function pyavAudio(
  path: string,
  rate: number,
  channels: number,
  windows: [number, number][],
  streamIndex?: number,
): Promise<PyavAudio> {
  const script = new URL("./pyav_audio.py", import.meta.url).pathname;
  const layout = channels === 1 ? "mono" : "stereo";
  const args = [script, path, String(rate), layout, JSON.stringify(windows)];
  if (streamIndex !== undefined) args.push(String(streamIndex));
  const r = await runCli("/usr/bin/python3", args);
  if (r.code !== 0) throw new Error(`pyav_audio.py failed: ${r.stderr}`);
  const nl = r.stdout.indexOf(10);
  const head = JSON.parse(new TextDecoder().decode(r.stdout.subarray(0, nl)));
  const all = new Float32Array(r.stdout.slice(nl + 1).buffer);
  let off = 0;
  const out = windows.map(([s, e]) => {
    const n = Math.round((e - s) * rate) * channels;
    const w = all.subarray(off, off + n);
    off += n;
    return w;
  });
  return { first: head.first, total: head.total, start: head.start, inRate: head.inRate, windows: out };
}

/** Root-mean-square difference of two equal-length arrays. */
export function rmsDiff(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) throw new Error(`lengths differ: ${a.length} vs ${b.length}`);
  let se = 0;
  for (let i = 0; i < a.length; i++) se += (a[i] - b[i]) ** 2;
  return a.length === 0 ? 0 : Math.sqrt(se / a.length);
}

/** Root-mean-square of an array. */
export function rms(a: Float32Array): number {
  return rmsDiff(a, new Float32Array(a.length));
}

/** True when PyAV (av 10) runs under Debian's python3. */
export function hasPyav(): boolean {
  try {
    return new Deno.Command("/usr/bin/python3", {
      args: ["-c", "import av, numpy"],
      stdout: "null",
      stderr: "null",
    })
      .outputSync().code === 0;
  } catch {
    return false;
  }
}
