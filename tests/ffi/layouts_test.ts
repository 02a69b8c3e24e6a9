/**
 * The layout tables against real headers: the table for the installed FFmpeg is checked field by field with
 * an offsetof program compiled against the installed -dev headers; a corrupted copy must be caught; tables of
 * releases not installed are checked against a header directory when an env var points at one.
 */
import { skipBecause } from "../helpers/skip.ts";
import assert from "node:assert/strict";
import {
  type FfmpegLayout,
  LAYOUT_5_1,
  LAYOUT_6_0,
  LAYOUT_6_1,
  LAYOUT_7_0,
  LAYOUT_7_1,
  LAYOUTS,
} from "../../ffi/ffmpeg/layouts.ts";
import { pickLayout } from "../../ffi/ffmpeg/library.ts";
import { checkLayout, installedCflags, layoutEntries, offsetofProgram } from "./offsetof.ts";

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

Deno.test("layouts: the generated C names every field and never contains a table offset", () => {
  const src = offsetofProgram(LAYOUT_5_1);
  for (const [struct, field] of layoutEntries(LAYOUT_5_1)) {
    const expr = field === "$size" ? `sizeof(${struct})` : `offsetof(${struct}, ${field})`;
    assert.ok(src.includes(expr), expr);
  }
  assert.doesNotMatch(src, /\b(208|724|344)\b/);
});

Deno.test("layouts: every release has a table, releases are unique, provenance says how each was made", () => {
  assert.deepEqual(LAYOUTS.map((l) => l.release), ["5.1", "6.0", "6.1", "7.0", "7.1"]);
  assert.deepEqual(LAYOUTS.map((l) => l.provenance), [
    "compiled",
    "derived",
    "derived",
    "derived",
    "release-headers",
  ]);
  // Fields a release lacks are absent, not zero.
  assert.equal(LAYOUT_5_1.AVCodecParameters.coded_side_data, undefined);
  assert.equal(LAYOUT_6_0.AVCodecParameters.coded_side_data, undefined);
  assert.equal(typeof LAYOUT_6_1.AVCodecParameters.coded_side_data, "number");
});

/** Release → env var naming a directory that holds that release's libavformat/, libavcodec/, libavutil/. */
const HEADER_DIRS: [FfmpegLayout, string][] = [
  [LAYOUT_5_1, "SLUICE_FFMPEG_HEADERS_5_1"],
  [LAYOUT_6_0, "SLUICE_FFMPEG_HEADERS_6_0"],
  [LAYOUT_6_1, "SLUICE_FFMPEG_HEADERS_6_1"],
  [LAYOUT_7_0, "SLUICE_FFMPEG_HEADERS_7_0"],
  [LAYOUT_7_1, "SLUICE_FFMPEG_HEADERS_7_1"],
];

for (const [layout, envVar] of HEADER_DIRS) {
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
