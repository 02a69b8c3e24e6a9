/**
 * Loading FFmpeg: the installed release is found and agrees with `ffprobe -version`; a missing or mixed
 * installation gives a typed error with a readable message (checked in a subprocess so this process keeps its
 * own FFmpeg); release and layout selection; FFmpeg's error strings.
 */
import assert from "node:assert/strict";
import { LIB_DIR, withFfmpeg9Dir } from "../helpers/system_ffmpeg.ts";
import { type LibVersion, loadFfmpeg, pickLayout, releaseOf } from "../../ffi/ffmpeg/library.ts";
import {
  LAYOUT_4_3,
  LAYOUT_4_4,
  LAYOUT_5_1,
  LAYOUT_6_0,
  LAYOUT_6_1,
  LAYOUT_7_0,
  LAYOUT_7_1,
  LAYOUT_8_1,
} from "../../ffi/ffmpeg/layouts.ts";
import { AVERROR_EOF, AVERROR_INVALIDDATA, avErrorString } from "../../ffi/ffmpeg/errors.ts";
import { LibraryNotFoundError, LibraryVersionError } from "../../src/errors.ts";
import { loadLibrary } from "../../ffi/find_library.ts";
import { skipBecause } from "../helpers/skip.ts";

const installed = (() => {
  try {
    return Deno.statSync(`${LIB_DIR}/libavformat.so.59`).isFile;
  } catch {
    return false;
  }
})();

/** `ffprobe -version` lines like `libavcodec     59. 37.100 / 59. 37.100` → name → "59.37.100". */
async function ffprobeVersions(): Promise<Record<string, string>> {
  const out = await new Deno.Command("ffprobe", { args: ["-version"], stdout: "piped" }).output();
  const versions: Record<string, string> = {};
  for (const m of new TextDecoder().decode(out.stdout).matchAll(/^(lib\w+)\s+(\d+)\.\s*(\d+)\.\s*(\d+)/gm)) {
    versions[m[1]] = `${m[2]}.${m[3]}.${m[4]}`;
  }
  return versions;
}

const show = (v: LibVersion) => `${v.major}.${v.minor}.${v.micro}`;

const override = Deno.env.get("SLUICE_FFMPEG_LIBDIR");

Deno.test({
  name: "library: loads the installed FFmpeg 5.1 and its versions agree with ffprobe -version",
  ignore: !installed ||
    (override !== undefined && skipBecause(`SLUICE_FFMPEG_LIBDIR=${override}: not the installed FFmpeg`)),
  fn: async () => {
    const f = loadFfmpeg();
    try {
      const probe = await ffprobeVersions();
      assert.equal(f.layout.release, "5.1");
      assert.equal(f.layout, LAYOUT_5_1);
      assert.equal(show(f.versions.avformat), probe.libavformat);
      assert.equal(show(f.versions.avcodec), probe.libavcodec);
      assert.equal(show(f.versions.avutil), probe.libavutil);
      assert.equal(show(f.versions.swscale), probe.libswscale);
      assert.equal(f.dir, LIB_DIR);
    } finally {
      f.close();
    }
  },
});

/** `LIB<NAME>_VERSION_MAJOR/MINOR/MICRO` of one library from the `version*.h` headers in `include`. */
function headerVersion(include: string, lib: string): string {
  const text = ["version.h", "version_major.h"].map((f) => {
    try {
      return Deno.readTextFileSync(`${include}/lib${lib}/${f}`);
    } catch {
      return "";
    }
  }).join("\n");
  const part = (p: string) =>
    text.match(new RegExp(`#define LIB${lib.toUpperCase()}_VERSION_${p}\\s+(\\d+)`))![1];
  return `${part("MAJOR")}.${part("MINOR")}.${part("MICRO")}`;
}

const buildInclude = override ? `${override.replace(/\/+$/, "")}/../include` : null;
const isBuild = buildInclude !== null && (() => {
  try {
    return Deno.statSync(`${buildInclude}/libavcodec/version.h`).isFile;
  } catch {
    return false;
  }
})();

Deno.test({
  name:
    "library: the build in SLUICE_FFMPEG_LIBDIR loads, its versions agree with its headers, its table is its release's",
  ignore: !isBuild &&
    skipBecause("SLUICE_FFMPEG_LIBDIR names no scripts/ffmpeg/build.sh build (lib/ beside include/)"),
  fn: () => {
    const f = loadFfmpeg();
    try {
      for (const lib of ["avformat", "avcodec", "avutil", "swscale", "swresample"] as const) {
        assert.equal(show(f.versions[lib]), headerVersion(buildInclude!, lib), lib);
      }
      assert.equal(f.dir, override!.replace(/\/+$/, ""));
      // The build's own version string (Debian's source version) names the release whose table is in use.
      assert.ok(
        f.versionInfo.startsWith(f.layout.release + "."),
        `${f.versionInfo} vs table ${f.layout.release}`,
      );
      assert.equal(f.layout.provenance, "run-in-ci");
      assert.equal(f.channels.kind, f.layout.release.startsWith("4.") ? "mask" : "ch_layout");
    } finally {
      f.close();
    }
  },
});

/** Runs `loadFfmpeg()` in a fresh Deno with `SLUICE_FFMPEG_LIBDIR=dir`; returns exit code and stderr. */
async function loadInSubprocess(dir: string): Promise<{ code: number; stderr: string }> {
  const library = new URL("../../ffi/ffmpeg/library.ts", import.meta.url).href;
  const script = `import { loadFfmpeg } from ${JSON.stringify(library)};\n` +
    `try { loadFfmpeg(); } catch (e) { console.error(e.name + ": " + e.message); Deno.exit(3); }`;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--quiet", script],
    env: { SLUICE_FFMPEG_LIBDIR: dir, NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { code: out.code, stderr: new TextDecoder().decode(out.stderr) };
}

Deno.test("library: an empty SLUICE_FFMPEG_LIBDIR gives LibraryNotFoundError listing what was tried", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sluice-nolibs-" });
  try {
    const { code, stderr } = await loadInSubprocess(dir);
    assert.equal(code, 3, stderr);
    assert.match(stderr, /^LibraryNotFoundError: /);
    assert.match(stderr, new RegExp(`SLUICE_FFMPEG_LIBDIR=${dir}`));
    for (const soname of ["libavformat.so.61", "libavutil.so.58", "libavformat.so.59"]) {
      assert.ok(stderr.includes(`${dir}/${soname}`), `tried list lacks ${soname}:\n${stderr}`);
    }
    assert.match(stderr, /apt-get install/);
    assert.doesNotMatch(stderr, /dlopen|cannot open shared object|at file:|\n\s+at /);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name: "library: libraries whose sonames promise another release give LibraryVersionError naming the paths",
  ignore: !installed,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "sluice-mixed-" });
    try {
      // FFmpeg 6 file names pointing at the real 5.1 libraries.
      const links: [string, string][] = [
        ["libavutil.so.58", "libavutil.so.57"],
        ["libswscale.so.7", "libswscale.so.6"],
        ["libswresample.so.4", "libswresample.so.4"],
        ["libavcodec.so.60", "libavcodec.so.59"],
        ["libavformat.so.60", "libavformat.so.59"],
      ];
      for (const [name, real] of links) await Deno.symlink(`${LIB_DIR}/${real}`, `${dir}/${name}`);
      const { code, stderr } = await loadInSubprocess(dir);
      assert.equal(code, 3, stderr);
      assert.match(stderr, /^LibraryVersionError: .*do not belong to one release/);
      assert.ok(stderr.includes(`${dir}/libavformat.so.60 = 59.`), stderr);
      assert.ok(stderr.includes(`${dir}/libavutil.so.58 = 57.`), stderr);
      assert.doesNotMatch(stderr, /\n\s+at /);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "library: a release with no table (sonames sluice does not know, as FFmpeg 9's) is refused by name",
  ignore: !installed,
  fn: async () => {
    await withFfmpeg9Dir("sluice-ffmpeg9-", async (dir) => {
      const { code, stderr } = await loadInSubprocess(dir);
      assert.equal(code, 3, stderr);
      const probe = await ffprobeVersions();
      assert.match(stderr, /^LibraryVersionError: FFmpeg \S+ \(libavutil /);
      assert.ok(stderr.includes(`(libavutil ${probe.libavutil}, libavformat.so.63) in ${dir}`), stderr);
      assert.match(
        stderr,
        /no struct layout table for; supported: 4\.3, 4\.4, 5\.1, 6\.0, 6\.1, 7\.0, 7\.1, 8\.1\./,
      );
      assert.doesNotMatch(stderr, /\n\s+at /);
    });
  },
});

Deno.test("library: releaseOf maps libavcodec versions to releases at the release minors", () => {
  const v = (major: number, minor: number): LibVersion => ({ major, minor, micro: 100 });
  assert.equal(releaseOf(v(58, 54)), "4.2 or older");
  assert.equal(releaseOf(v(58, 91)), "4.3");
  assert.equal(releaseOf(v(58, 133)), "4.3");
  assert.equal(releaseOf(v(58, 134)), "4.4");
  assert.equal(releaseOf(v(59, 18)), "5.0");
  assert.equal(releaseOf(v(59, 37)), "5.1");
  assert.equal(releaseOf(v(60, 3)), "6.0");
  assert.equal(releaseOf(v(60, 30)), "6.0");
  assert.equal(releaseOf(v(60, 31)), "6.1");
  assert.equal(releaseOf(v(61, 3)), "7.0");
  assert.equal(releaseOf(v(61, 18)), "7.0");
  assert.equal(releaseOf(v(61, 19)), "7.1");
  assert.equal(releaseOf(v(62, 11)), "8.0");
  assert.equal(releaseOf(v(62, 28)), "8.1");
  assert.equal(releaseOf(v(63, 3)), "9 or newer (libavcodec 63)");
});

Deno.test("library: pickLayout returns each release's table and refuses unknown releases", () => {
  const v = (major: number, minor: number): LibVersion => ({ major, minor, micro: 100 });
  assert.equal(pickLayout(v(58, 91)), LAYOUT_4_3);
  assert.equal(pickLayout(v(58, 134)), LAYOUT_4_4);
  assert.equal(pickLayout(v(59, 37)), LAYOUT_5_1);
  assert.equal(pickLayout(v(60, 3)), LAYOUT_6_0);
  assert.equal(pickLayout(v(60, 31)), LAYOUT_6_1);
  assert.equal(pickLayout(v(61, 3)), LAYOUT_7_0);
  assert.equal(pickLayout(v(61, 19)), LAYOUT_7_1);
  assert.equal(pickLayout(v(62, 28)), LAYOUT_8_1);
  for (const [major, minor, name] of [[62, 11, "8.0"], [59, 18, "5.0"], [58, 54, "4.2 or older"]] as const) {
    assert.throws(
      () => pickLayout(v(major, minor), undefined, "n-test"),
      (e: Error) =>
        e instanceof LibraryVersionError &&
        e.message.startsWith(
          `FFmpeg n-test (${name}), libavcodec ${major}.${minor}.100, has no struct layout`,
        ) &&
        e.message.includes("supported: 4.3, 4.4, 5.1, 6.0, 6.1, 7.0, 7.1, 8.1."),
    );
  }
  assert.throws(() => pickLayout(v(61, 19), [LAYOUT_5_1]), /no struct layout table.*supported: 5\.1/);
});

Deno.test({
  name: "library: avErrorString gives FFmpeg's own messages",
  ignore: !installed,
  fn: () => {
    const f = loadFfmpeg();
    try {
      assert.equal(avErrorString(f.avutil, AVERROR_EOF), "End of file");
      assert.equal(avErrorString(f.avutil, AVERROR_INVALIDDATA), "Invalid data found when processing input");
      assert.equal(AVERROR_EOF, -0x20464f45);
    } finally {
      f.close();
    }
  },
});

Deno.test("library: a library in none of the directories is asked of the dynamic loader by its soname", () => {
  // No directory to search: only the dynamic loader's own search (its cache) can find libz, as it finds the
  // driver's libraries under /usr/local/nvidia/lib64 in containers.
  const zlib = { zlibVersion: { parameters: [], result: "pointer" } } as const;
  const lib = loadLibrary({
    what: "zlib",
    sonames: ["libz.so.1"],
    fileEnv: "SLUICE_TEST_NO_ENV",
    hint: "",
    dirs: [],
  }, zlib);
  try {
    assert.equal(lib.path, "libz.so.1");
    assert.match(Deno.UnsafePointerView.getCString(lib.symbols.zlibVersion()!), /^1\./);
  } finally {
    lib.close();
  }
  assert.throws(
    () =>
      loadLibrary({
        what: "a missing library",
        sonames: ["libsluice-none.so.1"],
        fileEnv: "SLUICE_TEST_NO_ENV",
        hint: "install it",
        dirs: ["/nonexistent"],
      }, zlib),
    (e: unknown) =>
      e instanceof LibraryNotFoundError &&
      e.tried.join(" ") === '/nonexistent/libsluice-none.so.1 dlopen("libsluice-none.so.1")' &&
      e.message.endsWith(
        'Tried:\n  /nonexistent/libsluice-none.so.1\n  dlopen("libsluice-none.so.1") (the dynamic loader\'s search)\ninstall it',
      ),
  );
  assert.throws(
    () =>
      loadLibrary(
        { what: "zlib", sonames: ["libz.so.1"], fileEnv: "SLUICE_TEST_NO_ENV", hint: "", dirs: [] },
        {
          sluice_no_such_symbol: { parameters: [], result: "void" },
        },
      ),
    (e: unknown) =>
      e instanceof LibraryNotFoundError &&
      /zlib: libz\.so\.1 was found but could not be loaded/.test(e.message),
  );
});
