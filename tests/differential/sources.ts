/**
 * The differential harness's videos: the real files of ../shared/media that FFmpeg decodes cleanly, and files
 * it makes with the ffmpeg CLI from a seeded {@link SourceSpec}: H.264, HEVC, VP9, VP8, AV1, MPEG-2 and MPEG-4
 * video in MP4, MKV, WebM, MPEG-TS, AVI and MOV; B-frames, GOPs short and long, odd sizes, display rotation,
 * variable frame rate (runs of frames dropped), frame rates from 12 to 50 fps (29.97 too); AAC, MP3, AC-3 and
 * Opus audio at several rates and layouts (mono, stereo, 5.1), audio that ends early, or none. Only what the
 * system's ffmpeg can encode is drawn (`ffmpeg -encoders`). A made file is cached under the test clip cache,
 * named by its arguments, so a spec replays as the same bytes.
 * @module
 */
import { CLIP_CACHE_DIR, decodableSharedMedia, runCli, SHARED_MEDIA_DIR } from "../helpers/media.ts";
import type { Rng } from "../fuzz/mutate.ts";

/** The audio track of a made file. */
export interface AudioTrackSpec {
  codec: "aac" | "libmp3lame" | "ac3" | "libopus";
  rate: number;
  channels: 1 | 2 | 6;
  /** Seconds of audio (shorter than the video: the track ends early); default the video's. */
  durationSec?: number;
}

/** A file the harness makes with the ffmpeg CLI. */
export interface SourceSpec {
  codec: "libx264" | "libx265" | "libvpx-vp9" | "libvpx" | "libaom-av1" | "mpeg2video" | "mpeg4";
  container: "mp4" | "mkv" | "webm" | "ts" | "avi" | "mov";
  width: number;
  height: number;
  /** Frames per second, e.g. "25" or "30000/1001". */
  fps: string;
  durationSec: number;
  gop: number;
  bframes: number;
  /** Display rotation written as the `rotate` tag (MP4/MOV only). */
  rotate?: 90 | 180 | 270;
  /** Time ranges whose frames are dropped (a variable-frame-rate file; the frame before stays on screen). */
  gaps?: [number, number][];
  audio?: AudioTrackSpec;
}

/** Where a dataset row's video comes from: a shared file by name, or a made one. */
export type SourceRef = { shared: string } | { made: SourceSpec };

/** Encoders of the system's ffmpeg, read once. */
let encoders: Set<string> | undefined;

/** Whether the system's ffmpeg has encoder `name`. */
export function hasEncoder(name: string): boolean {
  if (encoders === undefined) {
    encoders = new Set();
    try {
      const out = new Deno.Command("ffmpeg", { args: ["-hide_banner", "-encoders"], stderr: "null" })
        .outputSync();
      for (const line of new TextDecoder().decode(out.stdout).split("\n")) {
        const m = /^\s[VAS][.A-Z]{5}\s+(\S+)/.exec(line);
        if (m) encoders.add(m[1]);
      }
    } catch { /* no ffmpeg: nothing is made */ }
  }
  return encoders.has(name);
}

/** Shared files the harness draws from (decodable, with a video stream), by name. */
export function sharedPool(): string[] {
  return decodableSharedMedia().map((m) => m.file).sort();
}

const VIDEO: { codec: SourceSpec["codec"]; containers: SourceSpec["container"][]; bframes: number }[] = [
  { codec: "libx264", containers: ["mp4", "mkv", "ts", "mov", "avi"], bframes: 3 },
  { codec: "libx265", containers: ["mp4", "mkv", "ts"], bframes: 2 },
  { codec: "libvpx-vp9", containers: ["webm", "mkv"], bframes: 0 },
  { codec: "libvpx", containers: ["webm", "mkv"], bframes: 0 },
  { codec: "libaom-av1", containers: ["mp4", "mkv", "webm"], bframes: 0 },
  { codec: "mpeg2video", containers: ["ts", "mkv", "mp4"], bframes: 2 },
  { codec: "mpeg4", containers: ["avi", "mp4", "mkv", "mov"], bframes: 1 },
];

/** Audio codecs a container takes. */
function audioCodecs(container: SourceSpec["container"]): AudioTrackSpec["codec"][] {
  if (container === "webm") return ["libopus"];
  if (container === "mkv") return ["aac", "libmp3lame", "ac3", "libopus"];
  if (container === "avi") return ["libmp3lame", "ac3"];
  return ["aac", "libmp3lame", "ac3"];
}

/** A seeded made file: what the system's ffmpeg can encode, small and short. */
export function drawSource(r: Rng): SourceSpec {
  const video = VIDEO.filter((v) => hasEncoder(v.codec));
  const v = r.pick(video);
  const container = r.pick(v.containers.filter((c) => !(c === "avi" && v.codec === "libx264" && false)));
  // MPEG-2 takes only its standard rates; the others any.
  const fps = v.codec === "mpeg2video"
    ? r.pick(["24", "25", "30000/1001", "30", "50"])
    : r.pick(["12", "24", "25", "30000/1001", "30", "50"]);
  const odd = v.codec === "libvpx-vp9" && r.chance(0.5);
  const width = odd ? r.pick([97, 161, 75]) : r.pick([64, 96, 128, 160, 176]);
  const height = odd ? r.pick([71, 121, 45]) : r.pick([48, 64, 72, 90, 120]);
  const spec: SourceSpec = {
    codec: v.codec,
    container,
    width,
    height,
    fps,
    durationSec: r.pick([1.2, 2, 2.5, 3.2]),
    gop: r.pick([6, 12, 30, 250]),
    bframes: v.bframes === 0 ? 0 : r.int(v.bframes + 1),
  };
  if ((container === "mp4" || container === "mov") && r.chance(0.3)) spec.rotate = r.pick([90, 180, 270]);
  if ((container === "mp4" || container === "mkv") && v.codec === "libx264" && r.chance(0.3)) {
    const a = 0.3 + r.next() * (spec.durationSec - 0.8);
    spec.gaps = [[a, a + r.pick([0.1, 0.3, 0.6])]];
  }
  const codecs = audioCodecs(container).filter(hasEncoder);
  if (codecs.length > 0 && r.chance(0.7)) {
    const codec = r.pick(codecs);
    const rate = codec === "libopus" ? 48000 : codec === "ac3" ? r.pick([32000, 44100, 48000]) : r.pick([
      22050,
      32000,
      44100,
      48000,
    ]);
    const channels = codec === "libopus" || codec === "libmp3lame"
      ? r.pick([1, 2] as const)
      : r.pick([1, 2, 6] as const);
    spec.audio = { codec, rate, channels };
    if (r.chance(0.2)) spec.audio.durationSec = Math.round(spec.durationSec * 0.5 * 10) / 10;
  }
  return spec;
}

/** The tones of `channels` channels (a different one in each), as `aevalsrc` expressions. */
function tones(channels: number): string {
  const f = [440, 1234, 660, 880, 330, 550];
  return Array.from({ length: channels }, (_, c) => `0.4*sin(2*PI*${f[c]}*t+${c})`).join("|");
}

/** The ffmpeg CLI arguments (no output path) that make `s`. */
export function sourceArgs(s: SourceSpec): string[] {
  const args = ["-v", "error", "-nostdin", "-f", "lavfi", "-i"];
  args.push(`testsrc2=size=${s.width}x${s.height}:rate=${s.fps}:d=${s.durationSec}`);
  if (s.audio) {
    const layout = s.audio.channels === 6 ? ":c=5.1" : "";
    const d = s.audio.durationSec ?? s.durationSec;
    args.push(
      "-f",
      "lavfi",
      "-i",
      `aevalsrc=exprs='${tones(s.audio.channels)}':s=${s.audio.rate}:d=${d}${layout}`,
    );
  }
  const vf: string[] = [];
  if (s.gaps) vf.push(`select='${s.gaps.map(([a, b]) => `not(between(t,${a},${b}))`).join("*")}'`);
  if (vf.length > 0) args.push("-vf", vf.join(","), "-fps_mode", "vfr");
  args.push("-c:v", s.codec, "-g", String(s.gop), "-pix_fmt", "yuv420p");
  if (s.codec === "libx264") args.push("-bf", String(s.bframes), "-threads", "1");
  if (s.codec === "libx265") {
    args.push("-x265-params", `log-level=error:bframes=${s.bframes}`);
    if (s.container === "mp4") args.push("-tag:v", "hvc1");
  }
  if (s.codec === "mpeg2video" || s.codec === "mpeg4") args.push("-bf", String(s.bframes), "-q:v", "4");
  if (s.codec === "libvpx-vp9" || s.codec === "libvpx") args.push("-deadline", "realtime", "-cpu-used", "8");
  if (s.codec === "libvpx") args.push("-b:v", "300k");
  if (s.codec === "libaom-av1") args.push("-cpu-used", "8", "-row-mt", "1");
  if (s.audio) args.push("-c:a", s.audio.codec, "-ac", String(s.audio.channels), "-ar", String(s.audio.rate));
  return args;
}

/** The path of a made file (made now, or cached from an earlier run). */
export async function madePath(s: SourceSpec): Promise<string> {
  const args = sourceArgs(s);
  const what = JSON.stringify(args) + s.container + (s.rotate ?? "");
  const digest = await crypto.subtle.digest("SHA-1", new TextEncoder().encode(what));
  const key = [...new Uint8Array(digest)].slice(0, 10).map((b) => b.toString(16).padStart(2, "0")).join("");
  const path = `${CLIP_CACHE_DIR}/diff-${key}.${s.container}`;
  try {
    await Deno.stat(path);
    return path;
  } catch { /* make it */ }
  await Deno.mkdir(CLIP_CACHE_DIR, { recursive: true });
  const tmp = `${CLIP_CACHE_DIR}/.diff-${crypto.randomUUID()}.${s.container}`;
  const run = async (a: string[]) => {
    const r = await runCli("ffmpeg", [...a, "-y", tmp]);
    if (r.code !== 0) {
      await Deno.remove(tmp).catch(() => {});
      throw new Error(`ffmpeg ${a.join(" ")} failed: ${r.stderr.slice(-800)}`);
    }
  };
  await run(args);
  if (s.rotate !== undefined) {
    // FFmpeg 5.1 writes the display matrix of a `rotate` tag only when it copies the stream.
    const encoded = `${tmp}.enc.${s.container}`;
    await Deno.rename(tmp, encoded);
    try {
      await run([
        "-v",
        "error",
        "-i",
        encoded,
        "-map",
        "0",
        "-c",
        "copy",
        "-metadata:s:v:0",
        `rotate=${s.rotate}`,
      ]);
    } finally {
      await Deno.remove(encoded).catch(() => {});
    }
  }
  await Deno.rename(tmp, path);
  return path;
}

/** The file a row's source names. */
export function sourcePath(ref: SourceRef): Promise<string> {
  return "shared" in ref ? Promise.resolve(`${SHARED_MEDIA_DIR}${ref.shared}`) : madePath(ref.made);
}

/** A short name for messages and summaries: the shared file, or `codec/container` of a made one. */
export function sourceName(ref: SourceRef): string {
  if ("shared" in ref) return ref.shared;
  const s = ref.made;
  const extra = [
    s.bframes > 0 ? `bf${s.bframes}` : "",
    s.rotate ? `rot${s.rotate}` : "",
    s.gaps ? "vfr" : "",
    s.audio
      ? `${s.audio.codec}@${s.audio.rate}x${s.audio.channels}${s.audio.durationSec ? "-short" : ""}`
      : "noaudio",
  ].filter((x) => x !== "");
  return `${s.codec}/${s.container} ${s.width}x${s.height}@${s.fps} ${extra.join(" ")}`;
}
