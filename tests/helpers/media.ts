/**
 * Test media for sluice's tests: the shared real-world files in `../shared/media` (with their MANIFEST),
 * clips generated on demand with the ffmpeg CLI into a cache directory, and ffprobe / ffmpeg CLI oracles
 * (streams, packets, frames, raw decoded frames) returned as typed objects.
 *
 * Typical use:
 * ```ts
 * const file = sharedMedia("h264_nasa_bframes_aac.mp4");
 * Deno.test({ name: "...", ignore: file === null, fn: async () => { ... } });
 * const clip = await generateClip({ codec: "libx264", bframes: 2, gop: 12 });
 * const frames = await ffprobeFrames(clip, 0);
 * ```
 * @module
 */

import { skipBecause } from "./skip.ts";
import { ffmpeg } from "../../src/media/ffmpeg.ts";

/** Directory of the shared media (`../shared/media` beside the repository). */
export const SHARED_MEDIA_DIR: string = decodeURIComponent(
  new URL("../../../shared/media/", import.meta.url).pathname,
);

/** One stream as the MANIFEST describes it. */
export interface ManifestStream {
  type: string;
  codec_name?: string;
  width?: number;
  height?: number;
  pix_fmt?: string;
  r_frame_rate?: string;
  avg_frame_rate?: string;
  duration?: string;
  nb_frames?: string;
}

/** One entry of `../shared/media/MANIFEST.json` (the fields tests use; see the shared README for all). */
export interface ManifestEntry {
  file: string;
  container: string | null;
  video_codec: string | null;
  streams: ManifestStream[];
  width: number | null;
  height: number | null;
  pix_fmt: string | null;
  rotation_deg: number | null;
  r_frame_rate: string | null;
  avg_frame_rate: string | null;
  size_bytes: number;
  frames_container_nb_frames: number | null;
  frames_decoded_count_frames: number | null;
  duration_s: number | null;
  cases: string[];
  oddities: string;
  decode_check: { exit_code: number; clean: boolean; first_errors: string[] };
}

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

/** True when the shared media directory and its MANIFEST are present. */
export function sharedMediaAvailable(): boolean {
  return exists(`${SHARED_MEDIA_DIR}MANIFEST.json`) || noSharedMedia();
}

/** Says once why the tests on the shared videos are skipped; false (for `sharedMediaAvailable`'s `||`). */
function noSharedMedia(): false {
  skipBecause(
    `${SHARED_MEDIA_DIR} is absent: the tests on the shared real-world videos need it beside the clone ` +
      `(a clone of its own has none)`,
  );
  return false;
}

/** Absolute path of a shared media file, or null when it is absent (use with `Deno.test({ ignore })`). */
export function sharedMedia(file: string): string | null {
  const path = `${SHARED_MEDIA_DIR}${file}`;
  if (exists(path)) return path;
  if (!exists(`${SHARED_MEDIA_DIR}MANIFEST.json`)) noSharedMedia();
  else skipBecause(`shared media file ${file} is missing from ${SHARED_MEDIA_DIR}`);
  return null;
}

/** Absolute path of a shared media file; throws when absent (call only from a test that is not ignored). */
export function requireSharedMedia(file: string): string {
  const path = sharedMedia(file);
  if (path === null) throw new Error(`shared test media ${file} is missing from ${SHARED_MEDIA_DIR}`);
  return path;
}

let manifestCache: ManifestEntry[] | undefined;

/** The MANIFEST entries (empty when the shared media is absent). */
export function manifest(): ManifestEntry[] {
  if (manifestCache) return manifestCache;
  if (!sharedMediaAvailable()) return (manifestCache = []);
  manifestCache = JSON.parse(Deno.readTextFileSync(`${SHARED_MEDIA_DIR}MANIFEST.json`)) as ManifestEntry[];
  return manifestCache;
}

/** The MANIFEST entry of one file; throws when it is not listed. */
export function manifestEntry(file: string): ManifestEntry {
  const e = manifest().find((m) => m.file === file);
  if (!e) throw new Error(`${file} is not in ${SHARED_MEDIA_DIR}MANIFEST.json`);
  return e;
}

/** Shared files that FFmpeg decodes cleanly and have a video stream (`decode_check.clean`). */
export function decodableSharedMedia(): ManifestEntry[] {
  return manifest().filter((m) => m.decode_check.clean && m.video_codec !== null && sharedMedia(m.file));
}

// ------------------------------------------------------------------------------------------ CLI runners

/** The result of a CLI run. */
export interface CliResult {
  code: number;
  stdout: Uint8Array;
  stderr: string;
}

/** Runs a program to completion and collects its output. Never throws for a non-zero exit. */
export async function runCli(cmd: string, args: string[]): Promise<CliResult> {
  const out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped", stdin: "null" }).output();
  return { code: out.code, stdout: out.stdout, stderr: new TextDecoder().decode(out.stderr) };
}

async function runOk(cmd: string, args: string[]): Promise<Uint8Array> {
  const r = await runCli(cmd, args);
  if (r.code !== 0) {
    throw new Error(`${cmd} ${args.join(" ")} exited with ${r.code}: ${r.stderr.slice(-2000)}`);
  }
  return r.stdout;
}

/**
 * The ffmpeg or ffprobe program that is the oracle for the FFmpeg sluice loads here: `$SLUICE_FFMPEG_BINDIR/<name>`
 * where that is set (the loaded release's own programs, `scripts/ffmpeg/build.sh 8.1 --asm --programs`; the release
 * runner sets it), else the system's. FFmpeg's own reckonings differ between releases (8.1's container duration,
 * Matroska start and MP4 packet durations; its libswscale's pixels), so the tests compare with the loaded
 * release's CLI and strictly. Clips are still made with the system's ffmpeg (those programs have no encoders).
 * Throws when the programs named are not of the loaded release: an oracle of another release proves nothing.
 */
export function oracleCli(name: "ffmpeg" | "ffprobe"): string {
  const dir = Deno.env.get("SLUICE_FFMPEG_BINDIR");
  if (dir === undefined) return name;
  const path = `${dir}/${name}`;
  if (!oracleChecked.has(path)) {
    let version: string | undefined;
    try {
      const out = new Deno.Command(path, { args: ["-version"], stdout: "piped", stderr: "null" })
        .outputSync();
      version = new TextDecoder().decode(out.stdout).match(/^\S+ version (\S+)/)?.[1];
    } catch {
      // not there, or not a program: said below
    }
    const loaded = ffmpeg().versionInfo;
    if (version !== loaded) {
      const found = version ?? "(did not run)";
      throw new Error(
        `SLUICE_FFMPEG_BINDIR=${dir}: ${name} is FFmpeg ${found}, the loaded libraries FFmpeg ${loaded}: the ` +
          "oracle must be the loaded release's own program",
      );
    }
    oracleChecked.add(path);
  }
  return path;
}
const oracleChecked = new Set<string>();

let cliAvailable: boolean | undefined;

/** Says once why the tests with ffmpeg CLI oracles are skipped; false. */
function noCli(): false {
  skipBecause(
    "the ffmpeg and ffprobe CLIs do not run: tests that use them as oracles (scripts/setup.sh installs them)",
  );
  return false;
}

/** True when both `ffmpeg` and `ffprobe` CLIs run. */
export async function hasFfmpegCli(): Promise<boolean> {
  if (cliAvailable !== undefined) return cliAvailable;
  try {
    cliAvailable = (await runCli("ffmpeg", ["-version"])).code === 0 &&
      (await runCli("ffprobe", ["-version"])).code === 0;
  } catch {
    cliAvailable = false;
  }
  return cliAvailable || noCli();
}

/** Synchronous variant of {@link hasFfmpegCli}, for `Deno.test({ ignore })`. */
export function hasFfmpegCliSync(): boolean {
  if (cliAvailable !== undefined) return cliAvailable;
  try {
    const a = new Deno.Command("ffmpeg", { args: ["-version"], stdout: "null", stderr: "null" }).outputSync();
    const b = new Deno.Command("ffprobe", { args: ["-version"], stdout: "null", stderr: "null" })
      .outputSync();
    cliAvailable = a.code === 0 && b.code === 0;
  } catch {
    cliAvailable = false;
  }
  return cliAvailable || noCli();
}

// ------------------------------------------------------------------------------------------ generated clips

/** What {@link generateClip} encodes: a lavfi test source through one encoder into one container. */
export interface ClipSpec {
  /** Encoder, e.g. "libx264" (default), "libx265", "libvpx-vp9", "libvpx", "mpeg4", "libaom-av1". */
  codec?: string;
  /** Container extension: "mp4" (default), "mkv", "mov", "webm", "ts", "avi". */
  container?: string;
  width?: number;
  height?: number;
  /** Frames per second (default 25). */
  fps?: number;
  /** Seconds (default 2). */
  durationSec?: number;
  /** Max consecutive B-frames (`-bf`), default 0. */
  bframes?: number;
  /** Keyframe interval in frames (`-g`), default 12. */
  gop?: number;
  /** Output pixel format (default yuv420p). */
  pixFmt?: string;
  /** lavfi source (default "testsrc2"). */
  source?: string;
  /** Add a sine audio stream (default false). */
  audio?: boolean;
  /** Extra output arguments, appended before the file name. */
  extraArgs?: string[];
}

/** Directory where generated clips are cached across test runs (one file per distinct spec). */
export const CLIP_CACHE_DIR: string = `${Deno.env.get("TMPDIR") ?? "/tmp"}/sluice-test-clips`;

async function sha1Hex(s: string): Promise<string> {
  const d = await crypto.subtle.digest("SHA-1", new TextEncoder().encode(s));
  return [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** The ffmpeg CLI arguments (without output path) for a clip spec. */
export function clipArgs(spec: ClipSpec): string[] {
  const w = spec.width ?? 320, h = spec.height ?? 240, fps = spec.fps ?? 25;
  const src = spec.source ?? "testsrc2";
  const args = ["-v", "error", "-nostdin", "-f", "lavfi", "-i", `${src}=size=${w}x${h}:rate=${fps}`];
  if (spec.audio) args.push("-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000");
  args.push("-t", String(spec.durationSec ?? 2), "-c:v", spec.codec ?? "libx264");
  args.push("-pix_fmt", spec.pixFmt ?? "yuv420p", "-g", String(spec.gop ?? 12));
  const codec = spec.codec ?? "libx264";
  if (codec === "libx264" || codec === "libx265" || codec === "mpeg4") {
    args.push("-bf", String(spec.bframes ?? 0));
  }
  if (codec === "libx264") args.push("-threads", "1");
  if (codec === "libx265") args.push("-x265-params", `log-level=error:bframes=${spec.bframes ?? 0}`);
  if (spec.audio) args.push("-c:a", spec.container === "webm" ? "libopus" : "aac", "-shortest");
  args.push(...(spec.extraArgs ?? []));
  return args;
}

/**
 * Encodes a clip with the ffmpeg CLI (once per distinct spec; later calls return the cached file) and returns
 * its path. Safe to call from parallel test processes: the file is written under a temporary name and renamed.
 */
export async function generateClip(spec: ClipSpec = {}): Promise<string> {
  const args = clipArgs(spec);
  const ext = spec.container ?? "mp4";
  const key = (await sha1Hex(JSON.stringify(args) + ext)).slice(0, 16);
  const path = `${CLIP_CACHE_DIR}/${key}.${ext}`;
  if (exists(path)) return path;
  await Deno.mkdir(CLIP_CACHE_DIR, { recursive: true });
  const tmp = `${CLIP_CACHE_DIR}/.${key}.${crypto.randomUUID()}.${ext}`;
  try {
    await runOk("ffmpeg", [...args, "-y", tmp]);
    await Deno.rename(tmp, path);
  } finally {
    await Deno.remove(tmp).catch(() => {});
  }
  return path;
}

/** What {@link vfrClipSpec} makes: a variable-frame-rate "screen recording". */
export interface VfrSpec {
  /** Time ranges `[from, to]` (seconds) whose frames are dropped: the frame before each stays on screen. */
  gaps: [number, number][];
  /** Keyframes at these times (forced; no others). */
  keyframes: number[];
  container?: string;
  durationSec?: number;
  bframes?: number;
  width?: number;
  height?: number;
}

/**
 * A {@link ClipSpec} for {@link generateClip}: testsrc2 at 25 fps with the frames of each gap dropped by the
 * `select` filter and written with their own times (`-fps_mode vfr`), keyframes exactly where asked.
 */
export function vfrClipSpec(v: VfrSpec): ClipSpec {
  const keep = v.gaps.map(([a, b]) => `not(between(t,${a},${b}))`).join("*");
  const durationSec = v.durationSec ?? 8;
  const extraArgs = ["-vf", `select='${keep}'`, "-fps_mode", "vfr", "-sc_threshold", "0"];
  extraArgs.push("-force_key_frames", v.keyframes.join(","));
  return {
    width: v.width ?? 64,
    height: v.height ?? 48,
    durationSec,
    gop: 1000,
    bframes: v.bframes ?? 2,
    container: v.container,
    extraArgs,
  };
}

/** A fresh temporary file path (the caller removes it), e.g. for truncated copies of a clip. */
export async function tempFile(suffix = ""): Promise<string> {
  await Deno.mkdir(CLIP_CACHE_DIR, { recursive: true });
  return `${CLIP_CACHE_DIR}/tmp-${crypto.randomUUID()}${suffix}`;
}

// ------------------------------------------------------------------------------------------ ffprobe oracles

/** Runs ffprobe with `-of json` and returns the parsed output. */
export async function ffprobeJson(path: string, args: string[]): Promise<Record<string, unknown>> {
  const out = await runOk(oracleCli("ffprobe"), ["-v", "error", "-of", "json", ...args, path]);
  return JSON.parse(new TextDecoder().decode(out));
}

/** A stream as `ffprobe -show_streams` reports it (numbers parsed where ffprobe gives strings). */
export interface ProbedStream {
  index: number;
  codec_type: string;
  codec_name?: string;
  profile?: string;
  width?: number;
  height?: number;
  coded_width?: number;
  coded_height?: number;
  /** e.g. "32:27" (absent or "0:1" when unknown). */
  sample_aspect_ratio?: string;
  display_aspect_ratio?: string;
  pix_fmt?: string;
  r_frame_rate: string;
  avg_frame_rate: string;
  time_base: string;
  start_pts?: number;
  start_time?: string;
  duration_ts?: number;
  duration?: string;
  nb_frames?: string;
  nb_read_frames?: string;
  bits_per_raw_sample?: string;
  has_b_frames?: number;
  side_data_list?: { side_data_type: string; rotation?: number }[];
  tags?: Record<string, string>;
}

/** `format` section of ffprobe. */
export interface ProbedFormat {
  format_name: string;
  start_time?: string;
  duration?: string;
  bit_rate?: string;
  nb_streams: number;
  size?: string;
}

/** `ffprobe -show_streams -show_format` (add `countFrames` for `nb_read_frames`, which decodes the file). */
export async function ffprobeInfo(
  path: string,
  opts: { countFrames?: boolean } = {},
): Promise<{ streams: ProbedStream[]; format: ProbedFormat }> {
  const extra = opts.countFrames ? ["-count_frames"] : [];
  const j = await ffprobeJson(path, ["-show_streams", "-show_format", ...extra]);
  return { streams: (j.streams ?? []) as ProbedStream[], format: j.format as ProbedFormat };
}

/** One packet from `ffprobe -show_packets`, timestamps in the stream's time base (null = N/A). */
export interface ProbedPacket {
  streamIndex: number;
  pts: number | null;
  dts: number | null;
  duration: number | null;
  ptsTime: number | null;
  dtsTime: number | null;
  size: number;
  pos: number | null;
  keyframe: boolean;
  /** Packet flags as ffprobe prints them, e.g. "K_" or "__" or "_D". */
  flags: string;
}

function num(v: unknown): number | null {
  if (v === undefined || v === null || v === "N/A") return null;
  const n = Number(v);
  return Number.isFinite(n) ? n : null;
}

/** Every packet of one stream (absolute stream index), in file (decode) order. */
export async function ffprobePackets(path: string, streamIndex: number): Promise<ProbedPacket[]> {
  const j = await ffprobeJson(path, [
    "-select_streams",
    String(streamIndex),
    "-show_entries",
    "packet=stream_index,pts,dts,duration,pts_time,dts_time,size,pos,flags",
    "-show_packets",
  ]);
  return ((j.packets ?? []) as Record<string, unknown>[]).map((p) => ({
    streamIndex: Number(p.stream_index),
    pts: num(p.pts),
    dts: num(p.dts),
    duration: num(p.duration),
    ptsTime: num(p.pts_time),
    dtsTime: num(p.dts_time),
    size: Number(p.size),
    pos: num(p.pos),
    keyframe: String(p.flags ?? "").startsWith("K"),
    flags: String(p.flags ?? ""),
  }));
}

/** One decoded frame from `ffprobe -show_frames` (this decodes the stream). */
export interface ProbedFrame {
  /** `pts` in the stream's time base, or null. */
  pts: number | null;
  ptsTime: number | null;
  /** `best_effort_timestamp`, which is what decoders usually report as the frame's time. */
  bestEffortTimestamp: number | null;
  bestEffortTimestampTime: number | null;
  pktDts: number | null;
  keyFrame: boolean;
  pictType: string;
  width: number;
  height: number;
  pixFmt: string;
}

/** Every decoded frame of one stream (absolute stream index), in presentation (output) order. */
export async function ffprobeFrames(path: string, streamIndex: number): Promise<ProbedFrame[]> {
  const j = await ffprobeJson(path, [
    "-select_streams",
    String(streamIndex),
    "-show_entries",
    "frame=pts,pts_time,best_effort_timestamp,best_effort_timestamp_time,pkt_dts,key_frame,pict_type,width," +
    "height,pix_fmt",
    "-show_frames",
  ]);
  return ((j.frames ?? []) as Record<string, unknown>[]).map((f) => ({
    pts: num(f.pts),
    ptsTime: num(f.pts_time),
    bestEffortTimestamp: num(f.best_effort_timestamp),
    bestEffortTimestampTime: num(f.best_effort_timestamp_time),
    pktDts: num(f.pkt_dts),
    keyFrame: Number(f.key_frame) === 1,
    pictType: String(f.pict_type ?? ""),
    width: Number(f.width),
    height: Number(f.height),
    pixFmt: String(f.pix_fmt ?? ""),
  }));
}

/**
 * When a video stream stops being on screen, by ffprobe's numbers: the end of its last frame (the packet presented
 * last: `pts_time + duration_time`), or later while the file's other streams have packets (an audio track that
 * outlasts the video), but never past the duration the header declares (the stream's own, else the container's,
 * from the stream's start).
 */
export async function ffprobeStreamEnd(path: string, streamIndex: number): Promise<number> {
  const j = await ffprobeJson(path, [
    "-show_entries",
    "packet=stream_index,pts_time,dts_time,duration_time:stream=index,start_time,duration:format=duration",
    "-show_packets",
    "-show_streams",
    "-show_format",
  ]);
  let last = -Infinity, video = -Infinity, data = -Infinity;
  for (const p of (j.packets ?? []) as Record<string, unknown>[]) {
    const t = num(p.pts_time) ?? num(p.dts_time);
    if (t === null) continue;
    const end = t + (num(p.duration_time) ?? 0);
    data = Math.max(data, end);
    if (Number(p.stream_index) === streamIndex && t > last) [last, video] = [t, end];
  }
  const st = ((j.streams ?? []) as Record<string, unknown>[]).find((x) => Number(x.index) === streamIndex)!;
  const duration = num(st.duration) ?? num((j.format as Record<string, unknown>).duration);
  const header = duration === null ? null : (num(st.start_time) ?? 0) + duration;
  return header !== null && header > video ? Math.max(video, Math.min(header, data)) : video;
}

/** Parses an ffprobe rational like "30000/1001" into a number (0 for "0/0"). */
export function parseRational(r: string | undefined | null): number {
  if (!r) return 0;
  const [a, b] = r.split("/").map(Number);
  if (b === undefined) return a;
  return b === 0 ? 0 : a / b;
}

// ------------------------------------------------------------------------------------------ ffmpeg decode oracle

/** Options for {@link ffmpegDecodeRaw}. */
export interface RawDecodeOptions {
  /** Absolute stream index (default: the first video stream). */
  streamIndex?: number;
  /** Output pixel format (default: the stream's own, as `-pix_fmt` is left out). */
  pixFmt?: string;
  /** `-vf` filter chain (e.g. "scale=112:112:flags=bilinear"). */
  filter?: string;
  /** Decoder threads (default 1, for reproducibility). */
  threads?: number;
}

/**
 * Decodes a file with the ffmpeg CLI to raw frames (`-f rawvideo`, every decoded frame kept: `-vsync passthrough`)
 * and returns the bytes, frames back to back in presentation order.
 */
export async function ffmpegDecodeRaw(path: string, opts: RawDecodeOptions = {}): Promise<Uint8Array> {
  const map = opts.streamIndex === undefined ? "0:v:0" : `0:${opts.streamIndex}`;
  const args = ["-v", "error", "-nostdin", "-threads", String(opts.threads ?? 1), "-i", path, "-map", map];
  if (opts.filter) args.push("-vf", opts.filter);
  if (opts.pixFmt) args.push("-pix_fmt", opts.pixFmt);
  args.push("-vsync", "passthrough", "-f", "rawvideo", "-");
  return await runOk(oracleCli("ffmpeg"), args);
}

/**
 * One line of `ffmpeg -f framemd5`: a decoded frame's pts, size and MD5. The pts is in the *output* time base
 * (`#tb` header, usually 1/fps, not the stream's): compare `ptsTime` (seconds) with other sources.
 */
export interface FrameMd5 {
  pts: number;
  ptsTime: number;
  size: number;
  md5: string;
}

/**
 * Per-frame MD5s of the decoded stream from `ffmpeg -f framemd5` (rawvideo in `pixFmt` or the native format),
 * in presentation order: a compact oracle for byte-exact decode comparisons.
 */
export async function ffmpegFrameMd5s(path: string, opts: RawDecodeOptions = {}): Promise<FrameMd5[]> {
  const map = opts.streamIndex === undefined ? "0:v:0" : `0:${opts.streamIndex}`;
  const args = ["-v", "error", "-nostdin", "-threads", String(opts.threads ?? 1), "-i", path, "-map", map];
  if (opts.filter) args.push("-vf", opts.filter);
  if (opts.pixFmt) args.push("-pix_fmt", opts.pixFmt);
  args.push("-vsync", "passthrough", "-f", "framemd5", "-");
  const text = new TextDecoder().decode(await runOk(oracleCli("ffmpeg"), args));
  const out: FrameMd5[] = [];
  let tb = 1;
  for (const line of text.split("\n")) {
    const tbm = /^#tb \d+: (\d+)\/(\d+)/.exec(line);
    if (tbm) tb = Number(tbm[1]) / Number(tbm[2]);
    if (line.startsWith("#") || line.trim() === "") continue;
    // stream_index, dts, pts, duration, size, hash
    const cols = line.split(",").map((c) => c.trim());
    out.push({ pts: Number(cols[2]), ptsTime: Number(cols[2]) * tb, size: Number(cols[4]), md5: cols[5] });
  }
  return out;
}

/** MD5 (hex) of bytes, for comparing decoded frames with {@link ffmpegFrameMd5s}. */
export async function md5Hex(bytes: Uint8Array): Promise<string> {
  // WebCrypto has no MD5; node:crypto does.
  const { createHash } = await import("node:crypto");
  return createHash("md5").update(bytes).digest("hex");
}

/** One packet from `ffmpeg -c copy -f framemd5`: timestamps in the stream's time base, payload size and MD5. */
export interface PacketMd5 {
  dts: number;
  pts: number;
  size: number;
  md5: string;
}

/**
 * Per-packet MD5s of one stream's compressed packets as the ffmpeg CLI demuxes them (`-c copy -copyts`, optionally
 * through a bitstream filter such as "h264_mp4toannexb"), in decode order: an oracle for demuxed payloads.
 * Also returns the MD5 of the extradata the CLI would write (null when none).
 */
export async function ffmpegPacketMd5s(
  path: string,
  streamIndex: number,
  bsf?: string,
): Promise<{ packets: PacketMd5[]; extradataMd5: string | null }> {
  const args = ["-v", "error", "-nostdin", "-copyts", "-i", path, "-map", `0:${streamIndex}`, "-c", "copy"];
  if (bsf) args.push("-bsf:0", bsf);
  args.push("-f", "framemd5", "-");
  const text = new TextDecoder().decode(await runOk(oracleCli("ffmpeg"), args));
  const packets: PacketMd5[] = [];
  let extradataMd5: string | null = null;
  for (const line of text.split("\n")) {
    const ex = /^#extradata \d+,\s*\d+,\s*([0-9a-f]{32})/.exec(line);
    if (ex) extradataMd5 = ex[1];
    if (line.startsWith("#") || line.trim() === "") continue;
    const c = line.split(",").map((x) => x.trim());
    packets.push({ dts: Number(c[1]), pts: Number(c[2]), size: Number(c[4]), md5: c[5] });
  }
  return { packets, extradataMd5 };
}

/** The codecs some builds have no decoder for, with their ids' names in the layout table. */
const CODEC_IDS = { av1: "AV_CODEC_ID_AV1", png: "AV_CODEC_ID_PNG" } as const;

/**
 * True (and says why once) when the FFmpeg sluice loads here has no decoder for `codec`: the minimal builds
 * `scripts/ffmpeg/build.sh` makes have no external libraries, so no AV1 (libdav1d) and no PNG (zlib). The reason
 * names the build. False where it can decode `codec`, and where FFmpeg cannot be loaded at all (those tests
 * fail on their own, loudly).
 */
export function lacksDecoder(codec: keyof typeof CODEC_IDS): boolean {
  let f: ReturnType<typeof ffmpeg>;
  try {
    f = ffmpeg();
  } catch {
    return false;
  }
  if (f.avcodec.avcodec_find_decoder(f.layout.AVCodecID[CODEC_IDS[codec]]) !== null) return false;
  return skipBecause(
    `FFmpeg ${f.versionInfo} in ${f.dir} has no ${codec} decoder (a build without external libraries: ` +
      `scripts/ffmpeg/build.sh): the tests that decode ${codec} skip on it`,
  );
}

/**
 * True (and says why once) when the FFmpeg sluice loads here has no demuxer `name` (the minimal builds of
 * `scripts/ffmpeg/build.sh` list the containers of the test media only).
 */
export function lacksDemuxer(name: string): boolean {
  let f: ReturnType<typeof ffmpeg>;
  try {
    f = ffmpeg();
  } catch {
    return false;
  }
  if (f.avformat.av_find_input_format(new TextEncoder().encode(`${name}\0`)) !== null) return false;
  return skipBecause(
    `FFmpeg ${f.versionInfo} in ${f.dir} has no ${name} demuxer (scripts/ffmpeg/build.sh lists the test ` +
      `media's containers): the tests that need it skip that part on it`,
  );
}
