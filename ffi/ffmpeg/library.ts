/**
 * Loads libavutil, libswscale, libswresample, libavcodec and libavformat of one FFmpeg release, checks that they belong
 * together, and picks the struct layout table and the channel layout API for that release.
 *
 * Search order (`ffi/find_library.ts`): `SLUICE_FFMPEG_LIBDIR` alone when set; otherwise the standard library
 * directories. The five libraries of a release must sit in one directory; newer releases are preferred when
 * several are installed side by side. A release sluice has no table for (FFmpeg 9, 8.0, 5.0, 4.2 and older) is
 * refused by name, with the releases it supports.
 * @module
 */
import { LibraryNotFoundError, LibraryVersionError } from "../../src/errors.ts";
import { locateLibraries, openLibrary, standardLibraryDirs } from "../find_library.ts";
import {
  AVCODEC_SYMBOLS,
  AVFORMAT_SYMBOLS,
  AVUTIL_CH_LAYOUT_SYMBOLS,
  AVUTIL_MASK_SYMBOLS,
  AVUTIL_SYMBOLS,
  SWRESAMPLE_CH_LAYOUT_SYMBOLS,
  SWRESAMPLE_MASK_SYMBOLS,
  SWRESAMPLE_SYMBOLS,
  SWSCALE_SYMBOLS,
} from "./symbols.ts";
import { type FfmpegLayout, LAYOUTS } from "./layouts.ts";

/** Library majors (sonames) of each supported FFmpeg release line, newest first. */
export const RELEASE_MAJORS = [
  { line: "8", avformat: 62, avcodec: 62, avutil: 60, swscale: 9, swresample: 6 },
  { line: "7", avformat: 61, avcodec: 61, avutil: 59, swscale: 8, swresample: 5 },
  { line: "6", avformat: 60, avcodec: 60, avutil: 58, swscale: 7, swresample: 4 },
  { line: "5", avformat: 59, avcodec: 59, avutil: 57, swscale: 6, swresample: 4 },
  { line: "4", avformat: 58, avcodec: 58, avutil: 56, swscale: 5, swresample: 3 },
] as const;

/** The command that installs the runtime libraries on Debian/Ubuntu. */
export const INSTALL_HINT =
  "sudo apt-get install -y libavformat59 libavcodec59 libavutil57 libswscale6 libswresample4  " +
  "(Debian 12; on Ubuntu 22.04: libavformat58 libavcodec58 libavutil56 libswscale5 libswresample3; " +
  "Ubuntu 24.04: libavformat60 libavcodec60 libavutil58 libswscale7 libswresample4; " +
  "or simply: sudo apt-get install -y ffmpeg)";

type Symbols<S extends Deno.ForeignLibraryInterface> = Deno.DynamicLibrary<S>["symbols"];

/**
 * The channel layout API of the loaded release: `"ch_layout"` (`AVChannelLayout`, FFmpeg >= 5.1) or `"mask"`
 * (the `uint64_t` channel mask and a channel count, FFmpeg 4.x).
 */
export type ChannelApi =
  | {
    kind: "ch_layout";
    avutil: Symbols<typeof AVUTIL_CH_LAYOUT_SYMBOLS>;
    swresample: Symbols<typeof SWRESAMPLE_CH_LAYOUT_SYMBOLS>;
  }
  | {
    kind: "mask";
    avutil: Symbols<typeof AVUTIL_MASK_SYMBOLS>;
    swresample: Symbols<typeof SWRESAMPLE_MASK_SYMBOLS>;
  };

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
  /** The channel layout API of this release (the layout table has `AVChannelLayout` exactly when it is `"ch_layout"`). */
  channels: ChannelApi;
  /** FFmpeg's own version string (`av_version_info`), e.g. "7.1.5-0+deb13u1". */
  versionInfo: string;
  /** Closes the five libraries. Only for tests: pointers obtained from them become invalid. */
  close(): void;
}

/** Splits an `AV_VERSION_INT` into its parts. */
export function decodeVersion(v: number): LibVersion {
  return { major: (v >>> 16) & 0xff, minor: (v >>> 8) & 0xff, micro: v & 0xff };
}

/**
 * Picks the layout table for the loaded libavcodec version: FFmpeg 6.1 and 8.1 changed what sluice reads within a
 * soname major, so the minor version matters too. `versionInfo` (FFmpeg's own version string) names the release
 * in the refusal when given.
 */
export function pickLayout(
  avcodec: LibVersion,
  tables: readonly FfmpegLayout[] = LAYOUTS,
  versionInfo?: string,
): FfmpegLayout {
  const release = releaseOf(avcodec);
  const table = tables.find((t) => t.release === release);
  if (table) return table;
  const named = versionInfo ? `FFmpeg ${versionInfo} (${release})` : `FFmpeg ${release}`;
  throw new LibraryVersionError(
    `${named}, libavcodec ${avcodec.major}.${avcodec.minor}.${avcodec.micro}, has no struct layout ` +
      `table in sluice; supported: ${supportedReleases(tables)}. ` +
      `Point SLUICE_FFMPEG_LIBDIR at a supported FFmpeg (scripts/ffmpeg/build.sh 7.1 builds one).`,
  );
}

/** The releases sluice has tables for, e.g. "4.3, 4.4, 5.1, …, 8.1". */
export function supportedReleases(tables: readonly FfmpegLayout[] = LAYOUTS): string {
  return tables.map((t) => t.release).join(", ");
}

/**
 * The FFmpeg release a libavcodec version belongs to, from the first libavcodec minor of each release (its
 * `version.h` at the release tag): 4.3 = 58.91, 4.4 = 58.134, 5.0 = 59.18, 5.1 = 59.37, 6.0 = 60.3, 6.1 = 60.31,
 * 7.0 = 61.3, 7.1 = 61.19, 8.0 = 62.11, 8.1 = 62.28.
 */
export function releaseOf(avcodec: LibVersion): string {
  const { major: M, minor: m } = avcodec;
  if (M === 58) return m >= 134 ? "4.4" : m >= 91 ? "4.3" : "4.2 or older";
  if (M === 59) return m >= 37 ? "5.1" : "5.0";
  if (M === 60) return m >= 31 ? "6.1" : "6.0";
  if (M === 61) return m >= 19 ? "7.1" : "7.0";
  if (M === 62) return m >= 28 ? "8.1" : "8.0";
  return M > 62 ? `9 or newer (libavcodec ${M})` : `libavcodec${M}`;
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
  let paths: LibraryPaths;
  try {
    paths = locateLibraries({
      what: "FFmpeg libraries (libavformat, libavcodec, libavutil, libswscale, libswresample of FFmpeg " +
        `${supportedReleases()})`,
      dirEnv: "SLUICE_FFMPEG_LIBDIR",
      sets,
      hint: `Install them with: ${INSTALL_HINT}`,
    });
  } catch (e) {
    if (e instanceof LibraryNotFoundError) refuseUnknownRelease(e);
    throw e;
  }
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
  const versionInfo = cString(avutil.symbols.av_version_info());
  const versions = {
    avutil: decodeVersion(avutil.symbols.avutil_version()),
    swscale: decodeVersion(swscale.symbols.swscale_version()),
    swresample: decodeVersion(swresample.symbols.swresample_version()),
    avcodec: decodeVersion(avcodec.symbols.avcodec_version()),
    avformat: decodeVersion(avformat.symbols.avformat_version()),
  };
  const extra: { close(): void }[] = [];
  const closeAll = () => {
    for (const lib of extra) lib.close();
    close();
  };
  try {
    checkSameRelease(versions, paths, majors);
    const layout = pickLayout(versions.avcodec, LAYOUTS, versionInfo);
    const dir = paths.avformat.slice(0, paths.avformat.lastIndexOf("/"));
    const channels = openChannelApi(layout, paths, extra);
    return {
      avutil: avutil.symbols,
      swscale: swscale.symbols,
      swresample: swresample.symbols,
      avcodec: avcodec.symbols,
      avformat: avformat.symbols,
      versions,
      dir,
      layout,
      channels,
      versionInfo,
      close: closeAll,
    };
  } catch (e) {
    closeAll();
    throw e;
  }
}

/** Opens the channel layout functions of the release `layout` describes (a second handle on each library). */
function openChannelApi(layout: FfmpegLayout, paths: LibraryPaths, opened: { close(): void }[]): ChannelApi {
  const open = <S extends Deno.ForeignLibraryInterface>(path: string, symbols: S, what: string) => {
    const lib = openLibrary(path, symbols, what);
    opened.push(lib);
    return lib.symbols;
  };
  if (layout.AVChannelLayout !== undefined) {
    return {
      kind: "ch_layout",
      avutil: open(paths.avutil, AVUTIL_CH_LAYOUT_SYMBOLS, "libavutil"),
      swresample: open(paths.swresample, SWRESAMPLE_CH_LAYOUT_SYMBOLS, "libswresample"),
    };
  }
  return {
    kind: "mask",
    avutil: open(paths.avutil, AVUTIL_MASK_SYMBOLS, "libavutil"),
    swresample: open(paths.swresample, SWRESAMPLE_MASK_SYMBOLS, "libswresample"),
  };
}

function cString(p: Deno.PointerValue): string {
  return p === null ? "" : Deno.UnsafePointerView.getCString(p);
}

/**
 * When no supported set was found but a libavformat of another major sits where sluice looked (FFmpeg 9, or 3.x),
 * names that release in a {@link LibraryVersionError} instead of saying that nothing was found.
 */
function refuseUnknownRelease(notFound: LibraryNotFoundError): void {
  const override = Deno.env.get("SLUICE_FFMPEG_LIBDIR");
  const known = new Set<number>(RELEASE_MAJORS.map((m) => m.avformat));
  for (const dir of override ? [override] : standardLibraryDirs()) {
    let names: string[];
    try {
      names = [...Deno.readDirSync(dir)].map((e) => e.name);
    } catch {
      continue;
    }
    const avformat = names.find((n) => /^libavformat\.so\.\d+$/.test(n) && !known.has(Number(n.slice(15))));
    if (avformat === undefined) continue;
    let named = `libavformat.so.${avformat.slice(15)}`;
    const avutil = names.find((n) => /^libavutil\.so\.\d+$/.test(n));
    if (avutil !== undefined) {
      try {
        const lib = Deno.dlopen(`${dir}/${avutil}`, {
          av_version_info: AVUTIL_SYMBOLS.av_version_info,
          avutil_version: AVUTIL_SYMBOLS.avutil_version,
        });
        const v = decodeVersion(lib.symbols.avutil_version());
        named =
          `FFmpeg ${cString(lib.symbols.av_version_info())} (libavutil ${v.major}.${v.minor}.${v.micro}, ` +
          `${named})`;
        lib.close();
      } catch { /* the file name alone names it */ }
    }
    throw new LibraryVersionError(
      `${named} in ${dir} is a release sluice has no struct layout table for; supported: ` +
        `${supportedReleases()}. Install a supported one (${INSTALL_HINT}) or point SLUICE_FFMPEG_LIBDIR at ` +
        `one (scripts/ffmpeg/build.sh 8.1 builds FFmpeg 8.1).`,
      { cause: notFound },
    );
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
