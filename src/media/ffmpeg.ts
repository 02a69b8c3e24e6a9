/**
 * The FFmpeg libraries of the current thread. Each Worker opens its own copy (parallelism comes from Workers
 * making synchronous FFI calls: a `nonblocking` call costs ~70 µs, a synchronous one well under 1 µs), lazily,
 * on first use, and sets FFmpeg's log level from `SLUICE_LOG`.
 * @module
 */
import { type FfmpegLibraries, loadFfmpeg } from "../../ffi/ffmpeg/library.ts";
import { avErrorString } from "../../ffi/ffmpeg/errors.ts";
import { MediaError } from "../errors.ts";

const AV_LOG_LEVELS: Record<string, number> = {
  quiet: -8,
  panic: 0,
  fatal: 8,
  error: 16,
  warning: 24,
  info: 32,
  verbose: 40,
  debug: 48,
  trace: 56,
};

let libs: FfmpegLibraries | undefined;

/** FFmpeg's log level for `SLUICE_LOG` (quiet by default: sluice reports errors itself). */
export function ffmpegLogLevel(setting = Deno.env.get("SLUICE_LOG") ?? "quiet"): number {
  return AV_LOG_LEVELS[setting.toLowerCase()] ?? AV_LOG_LEVELS.quiet;
}

/** This thread's FFmpeg, loaded on first use. Throws `LibraryNotFoundError` when FFmpeg is absent. */
export function ffmpeg(): FfmpegLibraries {
  if (libs) return libs;
  libs = loadFfmpeg();
  libs.avutil.av_log_set_level(ffmpegLogLevel());
  return libs;
}

/** FFmpeg's message for an AVERROR code. */
export function errorText(code: number): string {
  return avErrorString(ffmpeg().avutil, code);
}

/** Throws a {@link MediaError} when `code` (an FFmpeg return value) is negative; returns it otherwise. */
export function check(code: number, source: string, operation: string): number {
  if (code >= 0) return code;
  throw new MediaError(source, operation, errorText(code), code);
}

/** Which FFmpeg sluice loaded in this thread. */
export interface FfmpegInfo {
  /** FFmpeg release whose struct layout is in use, e.g. "5.1". */
  release: string;
  /** Directory the libraries came from. */
  dir: string;
  /** `major.minor.micro` of each library. */
  versions: Record<"avformat" | "avcodec" | "avutil" | "swscale", string>;
}

/**
 * Loads FFmpeg if needed and says which release and libraries are in use (what `sluice doctor` prints).
 * @returns the release, the libraries' directory and their versions
 * @throws {LibraryNotFoundError} when no FFmpeg is found (the message lists every path tried)
 * @throws {LibraryVersionError} when the libraries belong to different releases, or to one sluice has no
 *   table for
 */
export function ffmpegInfo(): FfmpegInfo {
  const f = ffmpeg();
  const show = (v: { major: number; minor: number; micro: number }) => `${v.major}.${v.minor}.${v.micro}`;
  return {
    release: f.layout.release,
    dir: f.dir,
    versions: {
      avformat: show(f.versions.avformat),
      avcodec: show(f.versions.avcodec),
      avutil: show(f.versions.avutil),
      swscale: show(f.versions.swscale),
    },
  };
}
