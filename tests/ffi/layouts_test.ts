/**
 * The layout tables against real headers: the table for the installed FFmpeg is checked field by field with
 * an offsetof program compiled against the installed -dev headers, and so is the table for the FFmpeg build
 * `SLUICE_FFMPEG_LIBDIR` points at when its include dir sits beside it (`scripts/ffmpeg/test_releases.sh`); a
 * corrupted copy must be caught; any table is checked against a header directory an env var points at.
 */
import { skipBecause } from "../helpers/skip.ts";
import assert from "node:assert/strict";
import { LAYOUT_5_1, LAYOUT_6_0, LAYOUT_6_1, LAYOUTS } from "../../ffi/ffmpeg/layouts.ts";
import { loadFfmpeg, pickLayout } from "../../ffi/ffmpeg/library.ts";
import { checkLayout, entryExpression, installedCflags, layoutEntries, offsetofProgram } from "./offsetof.ts";

/** libavcodec version from the installed headers (`pkg-config --modversion libavcodec`). */
async function installedAvcodec(): Promise<{ major: number; minor: number; micro: number }> {
  const out = await new Deno.Command("pkg-config", { args: ["--modversion", "libavcodec"], stdout: "piped" })
    .output();
  const [major, minor, micro] = new TextDecoder().decode(out.stdout).trim().split(".").map(Number);
  return { major, minor, micro };
}

const hasCc = (() => {
  try {
    return new Deno.Command("cc", { args: ["--version"], stdout: "null", stderr: "null" }).outputSync()
      .success &&
      new Deno.Command("pkg-config", { args: ["--exists", "libavformat"] }).outputSync().success;
  } catch {
    return false;
  }
})() || !skipBecause("no C compiler or FFmpeg -dev headers: the offsetof checks of the layouts need both");

Deno.test({
  name: "layouts: the table for the installed FFmpeg matches offsetof/sizeof from its -dev headers",
  ignore: !hasCc,
  fn: async () => {
    const table = pickLayout(await installedAvcodec());
    assert.deepEqual(await checkLayout(table, await installedCflags()), []);
  },
});

Deno.test({
  name: "layouts: a table with one offset changed is reported on exactly that field",
  ignore: !hasCc,
  fn: async () => {
    const table = pickLayout(await installedAvcodec());
    const corrupted = structuredClone(table);
    corrupted.AVCodecParameters.height += 4;
    const mismatches = await checkLayout(corrupted, await installedCflags());
    assert.deepEqual(mismatches, [{
      struct: "AVCodecParameters",
      field: "height",
      table: table.AVCodecParameters.height + 4,
      headers: table.AVCodecParameters.height,
    }]);
  },
});

/** The include dir beside the library dir `SLUICE_FFMPEG_LIBDIR` names (a `build.sh` build), or null. */
const buildInclude = (() => {
  const lib = Deno.env.get("SLUICE_FFMPEG_LIBDIR");
  if (!lib) return null;
  const inc = `${lib.replace(/\/+$/, "")}/../include`;
  try {
    return Deno.statSync(`${inc}/libavcodec/avcodec.h`).isFile ? inc : null;
  } catch {
    return null;
  }
})();

Deno.test({
  name: "layouts: the table for the FFmpeg in SLUICE_FFMPEG_LIBDIR matches the headers of that build",
  ignore: !hasCc ||
    (buildInclude === null &&
      skipBecause("SLUICE_FFMPEG_LIBDIR names no build with include/ beside lib/ (scripts/ffmpeg/build.sh)")),
  fn: async () => {
    const f = loadFfmpeg();
    try {
      assert.deepEqual(await checkLayout(f.layout, [`-I${buildInclude}`]), []);
    } finally {
      f.close();
    }
  },
});

Deno.test("layouts: the generated C names every field and never contains a table offset", () => {
  for (const table of LAYOUTS) {
    const src = offsetofProgram(table);
    for (const [struct, field] of layoutEntries(table)) {
      assert.ok(src.includes(entryExpression(struct, field)), `${table.release} ${struct}.${field}`);
    }
  }
  assert.match(offsetofProgram(LAYOUTS[0]), /sizeof\(\(\(AVPacketSideData \*\)0\)->size\)/);
  assert.doesNotMatch(offsetofProgram(LAYOUT_5_1), /\b(208|724|344)\b/);
});

Deno.test("layouts: every release has one table, none derived, each saying where its headers came from", () => {
  assert.deepEqual(LAYOUTS.map((l) => l.release), ["4.3", "4.4", "5.1", "6.0", "6.1", "7.0", "7.1", "8.1"]);
  assert.deepEqual(
    LAYOUTS.filter((l) => l.provenance === "run-in-ci").map((l) => l.release),
    ["4.3", "5.1", "7.1", "8.1"],
  );
  for (const l of LAYOUTS) {
    assert.ok(["run-in-ci", "headers-only"].includes(l.provenance), l.release);
    assert.match(l.headers, /^libavcodec \d+\.\d+\.\d+: /, l.release);
  }
});

Deno.test("layouts: what moved beyond offsets is told by which fields each table has", () => {
  const has = (release: string) => LAYOUTS.find((l) => l.release === release)!;
  for (const l of LAYOUTS) {
    const before61 = ["4.3", "4.4", "5.1", "6.0"].includes(l.release);
    // Key frame and interlacing: the AVFrame fields before 6.1, AVFrame.flags from 6.1 (fields gone in 8.0).
    assert.equal(l.AVFrame.key_frame !== undefined, before61, `${l.release} key_frame`);
    assert.equal(l.AVFrame.interlaced_frame !== undefined, before61, `${l.release} interlaced_frame`);
    // The display matrix: the stream's side data before 6.1, codecpar.coded_side_data from 6.1.
    assert.equal(l.AVStream.side_data !== undefined, before61, `${l.release} side_data`);
    assert.equal(
      l.AVCodecParameters.coded_side_data !== undefined,
      !before61,
      `${l.release} coded_side_data`,
    );
    // AVChannelLayout from 5.1; 4.x has the channel mask API. AVPacketSideData.size: int, then size_t.
    const v4 = l.release.startsWith("4.");
    assert.equal(l.AVChannelLayout === undefined, v4, `${l.release} AVChannelLayout`);
    assert.equal(l.AVPacketSideData.size$bytes, v4 ? 4 : 8, `${l.release} AVPacketSideData.size`);
  }
  // Fields a release lacks are absent, not zero.
  assert.equal(LAYOUT_6_0.AVCodecParameters.coded_side_data, undefined);
  assert.equal(typeof LAYOUT_6_1.AVCodecParameters.coded_side_data, "number");
  assert.deepEqual(has("4.3").AVFrame, has("4.4").AVFrame);
});

/** Release → env var naming a directory that holds that release's libavformat/, libavcodec/, libavutil/. */
for (const layout of LAYOUTS) {
  const envVar = `SLUICE_FFMPEG_HEADERS_${layout.release.replace(".", "_")}`;
  const dir = Deno.env.get(envVar);
  Deno.test({
    name: `layouts: FFmpeg ${layout.release} table matches the headers in $${envVar}`,
    ignore: !hasCc ||
      (!dir &&
        skipBecause(
          `$${envVar} is unset: set it to FFmpeg ${layout.release}'s include dir to check that table`,
        )),
    fn: async () => {
      assert.deepEqual(await checkLayout(layout, [`-I${dir}`]), []);
    },
  });
}
