/**
 * Test helper: checks a struct layout table against real FFmpeg headers. It generates a C program from the
 * table's struct and field names only (never from its offsets), compiles it with `cc`, runs it and compares
 * every printed `offsetof` / `sizeof` with the table.
 * @module
 */
import type { FfmpegLayout } from "../../ffi/ffmpeg/layouts.ts";

/** One table entry whose value differs from what the compiler reports. */
export interface LayoutMismatch {
  struct: string;
  field: string;
  /** Value in the table. */
  table: number;
  /** Value the compiler computed from the headers. */
  headers: number;
}

/** Keys of a layout that are not structs. */
const NOT_STRUCTS = new Set(["release", "provenance", "headers", "reuseHevcAfterSkip", "grayMatrix"]);

/** `[struct, field]` for every entry of `layout`, in table order. */
export function layoutEntries(layout: FfmpegLayout): [string, string, number][] {
  const out: [string, string, number][] = [];
  for (const [struct, fields] of Object.entries(layout)) {
    if (NOT_STRUCTS.has(struct)) continue;
    for (const [field, value] of Object.entries(fields as Record<string, number>)) {
      out.push([struct, field, value]);
    }
  }
  return out;
}

/**
 * The C expression for one entry: `$size` = sizeof the struct, `<field>$bytes` = sizeof the field, an
 * `AVCodecID` entry = the enum constant's value.
 */
export function entryExpression(struct: string, field: string): string {
  if (struct === "AVCodecID") return field; // an enum constant: its value
  if (field === "$size") return `sizeof(${struct})`;
  if (field.endsWith("$bytes")) return `sizeof(((${struct} *)0)->${field.slice(0, -"$bytes".length)})`;
  return `offsetof(${struct}, ${field})`;
}

/** The C source that prints `Struct.field value` for every entry of `layout` (see {@link entryExpression}). */
export function offsetofProgram(layout: FfmpegLayout): string {
  const lines = layoutEntries(layout).map(([struct, field]) => {
    const expr = entryExpression(struct, field);
    return `  printf("%s.%s %zu\\n", "${struct}", "${field}", (size_t)${expr});`;
  });
  return [
    "#include <stddef.h>",
    "#include <stdio.h>",
    "#include <libavformat/avformat.h>",
    "#include <libavcodec/avcodec.h>",
    "#include <libavcodec/bsf.h>",
    "#include <libavutil/frame.h>",
    "#include <libavutil/pixdesc.h>",
    "#include <libavutil/rational.h>",
    "int main(void) {",
    ...lines,
    "  return 0;",
    "}",
    "",
  ].join("\n");
}

async function run(cmd: string, args: string[]): Promise<string> {
  const out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  const text = new TextDecoder().decode(out.stdout);
  if (!out.success) {
    throw new Error(
      `${cmd} ${args.join(" ")} failed (${out.code}):\n${new TextDecoder().decode(out.stderr)}`,
    );
  }
  return text;
}

/** `pkg-config --cflags libavformat libavcodec libavutil` split into arguments. */
export async function installedCflags(): Promise<string[]> {
  const text = await run("pkg-config", ["--cflags", "libavformat", "libavcodec", "libavutil"]);
  return text.split(/\s+/).filter((a) => a !== "");
}

/**
 * Compiles and runs {@link offsetofProgram} with `cflags` (e.g. `-I/path/to/headers`) and returns the
 * printed values keyed `Struct.field`. A field that the headers lack fails the compilation, loudly.
 */
export async function measureLayout(layout: FfmpegLayout, cflags: string[]): Promise<Map<string, number>> {
  const dir = await Deno.makeTempDir({ prefix: "sluice-offsetof-" });
  try {
    const src = `${dir}/offsets.c`;
    const exe = `${dir}/offsets`;
    await Deno.writeTextFile(src, offsetofProgram(layout));
    await run("cc", ["-std=c11", "-Wno-deprecated-declarations", ...cflags, "-o", exe, src]);
    const measured = new Map<string, number>();
    for (const line of (await run(exe, [])).split("\n")) {
      const [key, value] = line.split(" ");
      if (key && value !== undefined) measured.set(key, Number(value));
    }
    return measured;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Every entry of `layout` whose value differs from `measured` (or that `measured` lacks: headers = -1). */
export function compareLayout(layout: FfmpegLayout, measured: Map<string, number>): LayoutMismatch[] {
  const out: LayoutMismatch[] = [];
  for (const [struct, field, table] of layoutEntries(layout)) {
    const headers = measured.get(`${struct}.${field}`) ?? -1;
    if (headers !== table) out.push({ struct, field, table, headers });
  }
  return out;
}

/** Measures `layout` against the headers `cflags` point at and returns the mismatches. */
export async function checkLayout(layout: FfmpegLayout, cflags: string[]): Promise<LayoutMismatch[]> {
  return compareLayout(layout, await measureLayout(layout, cflags));
}
