/**
 * Loads libavutil, libswscale, libswresample, libavcodec and libavformat of one FFmpeg release, checks that they belong
 * together, and picks the struct layout table for that release.
 *
 * Search order (`ffi/loader.ts`): `SLUICE_FFMPEG_LIBDIR` alone when set; otherwise the standard library
 * directories. The five libraries of a release must sit in one directory; newer releases are preferred when
 * several are installed side by side.
 * @module
 */
import { LibraryVersionError } from "../../src/errors.ts";
import { locateLibraries, openLibrary } from "../loader.ts";
import {
  AVCODEC_SYMBOLS,
  AVFORMAT_SYMBOLS,
  AVUTIL_SYMBOLS,
  SWRESAMPLE_SYMBOLS,
  SWSCALE_SYMBOLS,
} from "./symbols.ts";
import { type FfmpegLayout, LAYOUTS } from "./layouts.ts";

/** Library majors (sonames) of each supported FFmpeg release line. */
export const RELEASE_MAJORS = [
  { line: "7", avformat: 61, avcodec: 61, avutil: 59, swscale: 8, swresample: 5 },
  { line: "6", avformat: 60, avcodec: 60, avutil: 58, swscale: 7, swresample: 4 },
  { line: "5", avformat: 59, avcodec: 59, avutil: 57, swscale: 6, swresample: 4 },
] as const;

/** The command that installs the runtime libraries on Debian/Ubuntu. */
export const INSTALL_HINT =
  "sudo apt-get install -y libavformat59 libavcodec59 libavutil57 libswscale6 libswresample4  " +
  "(Debian 12; on Ubuntu 24.04: libavformat60 libavcodec60 libavutil58 libswscale7 libswresample4; " +
  "or simply: sudo apt-get install -y ffmpeg)";

/** A decoded `AV_VERSION_INT`. */
export interface LibVersion {
  major: number;
  minor: number;
  micro: number;
}

/** The five libraries of one release, their versions and the layout table that fits them. */
export interface FfmpegLibraries {
  avutil: Deno.DynamicLibrary<typeof AVUTIL_SYMBOLS>["symbols"];
  swscale: Deno.DynamicLibrary<typeof SWSCALE_SYMBOLS>["symbols"];
  swresample: Deno.DynamicLibrary<typeof SWRESAMPLE_SYMBOLS>["symbols"];
  avcodec: Deno.DynamicLibrary<typeof AVCODEC_SYMBOLS>["symbols"];
  avformat: Deno.DynamicLibrary<typeof AVFORMAT_SYMBOLS>["symbols"];
  versions: {
    avutil: LibVersion;
    swscale: LibVersion;
    swresample: LibVersion;
    avcodec: LibVersion;
    avformat: LibVersion;
  };
  /** Directory the libraries were loaded from. */
  dir: string;
  layout: FfmpegLayout;
  /** Closes the five libraries. Only for tests: pointers obtained from them become invalid. */
  close(): void;
}

/** Splits an `AV_VERSION_INT` into its parts. */
export function decodeVersion(v: number): LibVersion {
  return { major: (v >>> 16) & 0xff, minor: (v >>> 8) & 0xff, micro: v & 0xff };
}

/**
 * Picks the layout table for the loaded libavcodec/libavformat versions: FFmpeg 6.1 and 7.1 changed public
 * structs within a soname major, so the minor version matters too.
 */
export function pickLayout(avcodec: LibVersion, tables: readonly FfmpegLayout[] = LAYOUTS): FfmpegLayout {
  const release = releaseOf(avcodec);
  const table = tables.find((t) => t.release === release);
  if (table) return table;
  throw new LibraryVersionError(
    `FFmpeg ${release} (libavcodec ${avcodec.major}.${avcodec.minor}.${avcodec.micro}) has no struct layout ` +
      `table in sluice; supported: ${tables.map((t) => t.release).join(", ")}. ` +
      `Point SLUICE_FFMPEG_LIBDIR at a supported FFmpeg.`,
  );
}

/** The FFmpeg release a libavcodec version belongs to (first minor of each release from its changelog). */
export function releaseOf(avcodec: LibVersion): string {
  if (avcodec.major === 59) return "5.1";
  if (avcodec.major === 60) return avcodec.minor >= 31 ? "6.1" : "6.0";
  if (avcodec.major === 61) return avcodec.minor >= 19 ? "7.1" : "7.0";
  return `libavcodec${avcodec.major}`;
}

type LibraryPaths = Record<"avutil" | "swscale" | "swresample" | "avcodec" | "avformat", string>;

/**
 * Finds and opens FFmpeg. Throws `LibraryNotFoundError` naming every path tried and the install
 * command, or {@link LibraryVersionError} when the libraries do not belong to one supported release.
 * Each call opens the libraries anew: call it once per thread (see `src/media/ffmpeg.ts`).
 */
export function loadFfmpeg(): FfmpegLibraries {
  const sets = RELEASE_MAJORS.map((m) => ({
    avutil: [`libavutil.so.${m.avutil}`],
    swscale: [`libswscale.so.${m.swscale}`],
    swresample: [`libswresample.so.${m.swresample}`],
    avcodec: [`libavcodec.so.${m.avcodec}`],
    avformat: [`libavformat.so.${m.avformat}`],
  }));
  const paths = locateLibraries({
    what:
      "FFmpeg libraries (libavformat, libavcodec, libavutil, libswscale, libswresample of FFmpeg 5.1, 6.x or 7.x)",
    dirEnv: "SLUICE_FFMPEG_LIBDIR",
    sets,
    hint: `Install them with: ${INSTALL_HINT}`,
  });
  const majors = RELEASE_MAJORS.find((m) => paths.avformat.endsWith(`.so.${m.avformat}`))!;
  return openRelease(paths, majors);
}

function openRelease(
  paths: LibraryPaths,
  majors: (typeof RELEASE_MAJORS)[number],
): FfmpegLibraries {
  // Dependencies first, so that each library's DT_NEEDED entries resolve to the copies already loaded from
  // this directory rather than to another release elsewhere on the system.
  const avutil = openLibrary(paths.avutil, AVUTIL_SYMBOLS, "libavutil");
  const swscale = openLibrary(paths.swscale, SWSCALE_SYMBOLS, "libswscale");
  const swresample = openLibrary(paths.swresample, SWRESAMPLE_SYMBOLS, "libswresample");
  const avcodec = openLibrary(paths.avcodec, AVCODEC_SYMBOLS, "libavcodec");
  const avformat = openLibrary(paths.avformat, AVFORMAT_SYMBOLS, "libavformat");
  const close = () => {
    avformat.close();
    avcodec.close();
    swresample.close();
    swscale.close();
    avutil.close();
  };
  const versions = {
    avutil: decodeVersion(avutil.symbols.avutil_version()),
    swscale: decodeVersion(swscale.symbols.swscale_version()),
    swresample: decodeVersion(swresample.symbols.swresample_version()),
    avcodec: decodeVersion(avcodec.symbols.avcodec_version()),
    avformat: decodeVersion(avformat.symbols.avformat_version()),
  };
  try {
    checkSameRelease(versions, paths, majors);
    const layout = pickLayout(versions.avcodec);
    const dir = paths.avformat.slice(0, paths.avformat.lastIndexOf("/"));
    return {
      avutil: avutil.symbols,
      swscale: swscale.symbols,
      swresample: swresample.symbols,
      avcodec: avcodec.symbols,
      avformat: avformat.symbols,
      versions,
      dir,
      layout,
      close,
    };
  } catch (e) {
    close();
    throw e;
  }
}

function checkSameRelease(
  v: FfmpegLibraries["versions"],
  paths: LibraryPaths,
  named: (typeof RELEASE_MAJORS)[number],
): void {
  // Each library must report the major its file name (soname) promised, and all five one release's majors.
  const fits = named.avformat === v.avformat.major && named.avcodec === v.avcodec.major &&
    named.avutil === v.avutil.major && named.swscale === v.swscale.major &&
    named.swresample === v.swresample.major;
  if (fits) return;
  const show = (k: keyof typeof v) => `${paths[k]} = ${v[k].major}.${v[k].minor}.${v[k].micro}`;
  throw new LibraryVersionError(
    `the FFmpeg libraries loaded do not belong to one release:\n  ${show("avformat")}\n  ${
      show("avcodec")
    }\n  ` +
      `${show("avutil")}\n  ${show("swscale")}\n  ${
        show("swresample")
      }\nInstall one consistent set: ${INSTALL_HINT}`,
  );
}
