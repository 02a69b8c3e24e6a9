/**
 * Labelled video datasets: a directory tree `root/<label>/…/<video>` ({@link datasetFromDirectory}) or a CSV or
 * JSONL manifest ({@link datasetFromManifest}), local or at a URL; {@link openDataset} tells them (and packed
 * shards, `shards/`) apart.
 * @module
 */

import { DatasetError } from "../errors.ts";
import { fetchBytes, isUrl } from "./fetch.ts";
import { shardDataset } from "./shards/dataset.ts";
import { isShardSource, openShards } from "./shards/reader.ts";
import type { SkippedFile, VideoDataset, VideoItem } from "./items.ts";

export type { SkippedFile, VideoDataset, VideoItem } from "./items.ts";

/** File extensions a directory tree treats as videos. */
export const VIDEO_EXTENSIONS: readonly string[] = [
  ".mp4",
  ".mkv",
  ".mov",
  ".webm",
  ".avi",
  ".m4v",
  ".ts",
  ".mpg",
  ".mpeg",
  ".flv",
];

/** Largest integer label taken as a class id (the class list has one name per id up to the largest). */
const MAX_CLASS_ID = 1_000_000;

function isVideoName(name: string): boolean {
  const lower = name.toLowerCase().replace(/[?#].*$/, "");
  return VIDEO_EXTENSIONS.some((x) => lower.endsWith(x));
}

/**
 * `path` relative to the dataset `root` it belongs to (a directory tree's root, or the directory of a manifest or
 * shard index), so it reads the same wherever the dataset is; as it is when it lies elsewhere.
 */
export function datasetRelative(path: string, root: string): string {
  const absolute = (p: string) =>
    isUrl(p) || p.startsWith("/") ? p : `${Deno.cwd()}/${p.replace(/^\.\//, "")}`;
  [path, root] = [absolute(path), absolute(root)];
  for (const dir of [root, root.slice(0, root.lastIndexOf("/"))]) {
    const base = dir.endsWith("/") ? dir : `${dir}/`;
    if (base !== "/" && path.startsWith(base)) return path.slice(base.length);
  }
  return path;
}

/**
 * Opens a dataset: a directory tree ({@link datasetFromDirectory}), a `.csv` / `.jsonl` manifest, local or URL
 * ({@link datasetFromManifest}), or packed shards (a directory with `shards.json`, that file, an `.idx.json` or
 * a `.tar`, local or URL: what `sluice pack` writes).
 * @param source the directory, manifest or shard set
 * @returns its classes and items
 * @throws {DatasetError} for a source that cannot be read, a video file given as a dataset, or a malformed
 *   manifest (naming the line)
 * @example Open a dataset and look at it
 * ```ts
 * import { openDataset } from "@sluice/sluice";
 *
 * const ds = await openDataset("data/train");
 * console.log(ds.classes, ds.items.length, ds.skipped?.length ?? 0);
 * ```
 */
export async function openDataset(source: string): Promise<VideoDataset> {
  if (await isShardSource(source)) return shardDataset(await openShards(source));
  if (isVideoName(source)) {
    throw new DatasetError(
      `${source}: open dataset failed: this is a video file, not a dataset; give a directory of ` +
        `<label>/<video> folders or a CSV/JSONL manifest`,
    );
  }
  if (isUrl(source)) return await datasetFromManifest(source);
  let stat: Deno.FileInfo;
  try {
    stat = await Deno.stat(source);
  } catch (e) {
    throw new DatasetError(`${source}: open dataset failed: ${e instanceof Error ? e.message : e}`, {
      cause: e,
    });
  }
  return stat.isDirectory ? await datasetFromDirectory(source) : await datasetFromManifest(source);
}

/**
 * Reads a directory tree `root/<label>/…/<video>`: each directory under `root` is a label (sorted by name,
 * numbered from 0); every video file under it, in nested folders too, is one item of that label. Symbolic links
 * are followed (a link back to a directory already on the path is skipped). Files that are not videos (by
 * extension), hidden entries, files directly under `root` and broken links are listed in `skipped` with the
 * reason.
 * @param root the tree's root directory
 * @returns its classes (the directory names), its items, and the files left out with why
 * @throws {DatasetError} when `root` cannot be read or holds no video
 * @example The classes of a tree and what it left out
 * ```ts
 * import { datasetFromDirectory } from "@sluice/sluice";
 *
 * const ds = await datasetFromDirectory("data/train");
 * for (const s of ds.skipped ?? []) console.log(`left out ${s.path}: ${s.reason}`);
 * ```
 */
export async function datasetFromDirectory(root: string): Promise<VideoDataset> {
  const skipped: SkippedFile[] = [];
  const classes: string[] = [];
  for (const e of await entries(root)) {
    const path = `${root}/${e.name}`;
    if (e.name.startsWith(".")) skipped.push({ path, reason: "hidden" });
    else if (e.kind === "directory") classes.push(e.name);
    else if (e.kind === "broken") skipped.push({ path, reason: "broken symbolic link" });
    else skipped.push({ path, reason: "not inside a label directory" });
  }
  classes.sort();
  const items: VideoItem[] = [];
  for (const [label, name] of classes.entries()) {
    const files: string[] = [];
    await walk(`${root}/${name}`, new Set([await Deno.realPath(`${root}/${name}`)]), files, skipped);
    files.sort();
    for (const path of files) items.push({ path, label });
  }
  skipped.sort((a, b) => a.path < b.path ? -1 : a.path > b.path ? 1 : 0);
  if (items.length === 0) {
    throw new DatasetError(
      `${root}: open dataset failed: no videos found under ${root}/<label>/` +
        (skipped.length > 0
          ? ` (${skipped.length} file(s) skipped, e.g. ${skipped[0].path}: ${skipped[0].reason})`
          : ""),
    );
  }
  return { root, classes, items, skipped };
}

interface Entry {
  name: string;
  kind: "directory" | "file" | "broken";
}

/** The entries of a directory, symbolic links resolved. */
async function entries(dir: string): Promise<Entry[]> {
  const out: Entry[] = [];
  for await (const e of Deno.readDir(dir)) {
    if (!e.isSymlink) {
      out.push({ name: e.name, kind: e.isDirectory ? "directory" : "file" });
      continue;
    }
    try {
      const st = await Deno.stat(`${dir}/${e.name}`);
      out.push({ name: e.name, kind: st.isDirectory ? "directory" : "file" });
    } catch {
      out.push({ name: e.name, kind: "broken" });
    }
  }
  return out;
}

/** Collects the video files under `dir` (nested folders too); `onPath` holds the real paths of `dir`'s ancestors. */
async function walk(
  dir: string,
  onPath: Set<string>,
  files: string[],
  skipped: SkippedFile[],
): Promise<void> {
  for (const e of await entries(dir)) {
    const path = `${dir}/${e.name}`;
    if (e.name.startsWith(".")) skipped.push({ path, reason: "hidden" });
    else if (e.kind === "broken") skipped.push({ path, reason: "broken symbolic link" });
    else if (e.kind === "file") {
      if (isVideoName(e.name)) files.push(path);
      else skipped.push({ path, reason: `not a video file extension (${VIDEO_EXTENSIONS.join(" ")})` });
    } else {
      const real = await Deno.realPath(path);
      if (onPath.has(real)) {
        skipped.push({ path, reason: "symbolic link loop (links to a directory above it)" });
        continue;
      }
      await walk(path, new Set([...onPath, real]), files, skipped);
    }
  }
}

/** One manifest row before labels are numbered. */
interface Row {
  line: number;
  path: string;
  label?: string;
  start?: number;
  end?: number;
  fields?: Record<string, unknown>;
}

/**
 * Reads a CSV or JSONL manifest, local or at an `http(s)://` URL; relative paths resolve against the manifest's
 * directory.
 *
 * - Columns by name. A CSV's first row is a header when it names any of `path`, `label`, `start`, `end`
 *   (case-insensitive); a JSONL line is an object with those keys. `path` is required; `label`, `start` and
 *   `end` (seconds, the range of the video to sample from) are optional; every other column goes through to each
 *   item's `fields` (and from there to each clip's metadata): captions, multi-label ids, float targets. A CSV
 *   column whose non-empty cells are all numbers gives numbers, else strings; an empty cell gives `null`. A
 *   headerless CSV is read as `path,label[,start,end]`.
 * - Labels: when every label is a non-negative integer they are used as they are (class `i` is named `"i"`);
 *   when none is, the distinct names are numbered in sorted order; a mix is an error naming the first line of
 *   the rarer kind (so a typo like `1O` among integers does not silently renumber every class). A label that
 *   reads as a number but is no class id (`-1`, `1.5`) is an error naming its line. A manifest without labels
 *   gives every item label -1 and no classes.
 * @param source the manifest's path or URL (`.csv` or `.jsonl`)
 * @returns its classes and items
 * @throws {DatasetError} naming the file and line, for a manifest that cannot be read or is malformed
 * @example A manifest with captions
 * ```ts
 * import { datasetFromManifest } from "@sluice/sluice";
 *
 * // train.csv: path,label,caption
 * const ds = await datasetFromManifest("train.csv");
 * console.log(ds.items[0].fields?.caption);
 * ```
 */
export async function datasetFromManifest(source: string): Promise<VideoDataset> {
  let bytes: Uint8Array;
  try {
    bytes = await fetchBytes(source);
  } catch (e) {
    throw new DatasetError(`${source}: read manifest failed: ${e instanceof Error ? e.message : e}`, {
      cause: e,
    });
  }
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch (e) {
    throw new DatasetError(
      `${source}: read manifest failed: not a text file (a dataset is a directory of <label>/<video> folders ` +
        `or a CSV/JSONL manifest)`,
      { cause: e },
    );
  }
  const jsonl = /\.jsonl?(\?.*)?$/i.test(source) || text.trimStart().startsWith("{");
  const rows = jsonl ? parseJsonl(text, source) : parseCsv(text, source);
  if (rows.length === 0) throw new DatasetError(`${source}: manifest has no rows`);
  const base = baseOf(source);
  const { classes, labelOf } = numberLabels(rows, source);
  const items = rows.map((r): VideoItem => {
    const item: VideoItem = { path: resolvePath(r.path, base), label: labelOf(r) };
    if (r.start !== undefined) item.start = r.start;
    if (r.end !== undefined) item.end = r.end;
    if (r.fields !== undefined) item.fields = r.fields;
    return item;
  });
  return { root: source, classes, items, skipped: [] };
}

/** A label that reads as a number: a class id (an integer >= 0) or a mistake (`-1`, `1.5`, `2e3`). */
const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;
const CLASS_ID = /^\d+$/;

/** Class names and each row's class index; see the module docs (Labels). */
function numberLabels(rows: Row[], source: string): { classes: string[]; labelOf: (r: Row) => number } {
  const labelled = rows.filter((r) => r.label !== undefined);
  if (labelled.length === 0) return { classes: [], labelOf: () => -1 };
  if (labelled.length < rows.length) {
    const r = rows.find((r) => r.label === undefined)!;
    throw new DatasetError(`${source}:${r.line}: no label, but ${labelled.length} other row(s) have one`);
  }
  // A number that is no class id is wrong whatever the other rows hold (-1 "no label", a float target).
  const bad = rows.find((r) => NUMBER.test(r.label!) && !CLASS_ID.test(r.label!));
  if (bad !== undefined) {
    const n = Number(bad.label);
    const why = n < 0
      ? "is negative"
      : Number.isInteger(n)
      ? "is not written as an integer"
      : "is not an integer";
    throw new DatasetError(
      `${source}:${bad.line}: label ${bad.label} ${why}: a numeric label is a class id, an integer >= 0 (a ` +
        `manifest without a label column gives every clip -1; float targets go in a column of their own, ` +
        `which reaches each clip's fields)`,
    );
  }
  const ints = rows.filter((r) => CLASS_ID.test(r.label!));
  if (ints.length === rows.length) {
    const max = Math.max(...rows.map((r) => Number(r.label)));
    if (max > MAX_CLASS_ID) {
      const r = rows.find((r) => Number(r.label) === max)!;
      throw new DatasetError(
        `${source}:${r.line}: label ${r.label} is above ${MAX_CLASS_ID}, the largest integer class id; use names`,
      );
    }
    return { classes: Array.from({ length: max + 1 }, (_, i) => String(i)), labelOf: (r) => Number(r.label) };
  }
  if (ints.length > 0) {
    const names = rows.length - ints.length;
    const odd = names <= ints.length ? rows.find((r) => !CLASS_ID.test(r.label!))! : ints[0];
    const kind = names <= ints.length ? "is not an integer" : "is an integer";
    throw new DatasetError(
      `${source}:${odd.line}: label "${odd.label}" ${kind}, but ${ints.length} row(s) have integer labels and ` +
        `${names} have names: labels must be all class ids (integers >= 0) or all names`,
    );
  }
  const classes = [...new Set(rows.map((r) => r.label!))].sort();
  const index = new Map(classes.map((c, i) => [c, i]));
  return { classes, labelOf: (r) => index.get(r.label!)! };
}

const COLUMNS = ["path", "label", "start", "end"];

function parseCsv(text: string, source: string): Row[] {
  const lines: { line: number; cells: string[] }[] = [];
  for (const [i, raw] of text.split(/\r?\n/).entries()) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    lines.push({ line: i + 1, cells: splitCsvLine(line) });
  }
  if (lines.length === 0) return [];
  const first = lines[0].cells.map((c) => c.toLowerCase());
  if (!first.some((c) => COLUMNS.includes(c))) {
    return lines.map(({ line, cells }) => {
      if (cells.length < 2 || cells.length > 4) {
        throw new DatasetError(
          `${source}:${line}: expected path,label[,start,end] (or a header naming the columns), got ${cells.length} fields`,
        );
      }
      return row({ path: cells[0], label: cells[1], start: cells[2], end: cells[3] }, {}, line, source);
    });
  }
  const header = lines[0].cells;
  const names = first;
  for (const [i, n] of names.entries()) {
    if (n === "") {
      throw new DatasetError(`${source}:${lines[0].line}: column ${i + 1} of the header has no name`);
    }
    if (names.indexOf(n) !== i) {
      throw new DatasetError(`${source}:${lines[0].line}: column "${n}" appears twice`);
    }
  }
  if (!names.includes("path")) {
    throw new DatasetError(
      `${source}:${lines[0].line}: the header (${header.join(", ")}) has no "path" column`,
    );
  }
  const body = lines.slice(1);
  for (const { line, cells } of body) {
    if (cells.length > names.length) {
      throw new DatasetError(
        `${source}:${line}: ${cells.length} fields, but the header names ${names.length}`,
      );
    }
    while (cells.length < names.length) cells.push(""); // trailing empty cells may be left out
  }
  // Extra columns: numbers when every non-empty cell of the column is one.
  const extra = names.flatMap((n, i) => COLUMNS.includes(n) ? [] : [i]);
  const numeric = new Set(
    extra.filter((i) => body.every(({ cells }) => cells[i] === "" || Number.isFinite(Number(cells[i])))),
  );
  const at = (cells: string[], name: string) => {
    const i = names.indexOf(name);
    return i < 0 ? undefined : cells[i];
  };
  return body.map(({ line, cells }) => {
    const fields: Record<string, unknown> = {};
    for (const i of extra) {
      fields[header[i]] = cells[i] === "" ? null : numeric.has(i) ? Number(cells[i]) : cells[i];
    }
    const label = at(cells, "label");
    return row(
      {
        path: at(cells, "path")!,
        label: label === "" ? undefined : label,
        start: at(cells, "start"),
        end: at(cells, "end"),
      },
      fields,
      line,
      source,
    );
  });
}

function splitCsvLine(line: string): string[] {
  const out: string[] = [];
  let cur = "", quoted = false;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i];
    if (quoted) {
      if (ch === '"' && line[i + 1] === '"') {
        cur += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else cur += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ",") {
      out.push(cur.trim());
      cur = "";
    } else cur += ch;
  }
  out.push(cur.trim());
  return out;
}

/**
 * The objects of JSON Lines `text`, one a non-blank line, each with its 1-based line number; a line that is not
 * a JSON object is a {@link DatasetError} naming `source` and the line.
 */
export function jsonlObjects(
  text: string,
  source: string,
): { line: number; value: Record<string, unknown> }[] {
  const out: { line: number; value: Record<string, unknown> }[] = [];
  for (const [i, raw] of text.split(/\r?\n/).entries()) {
    if (raw.trim() === "") continue;
    let o: unknown;
    try {
      o = JSON.parse(raw);
    } catch (e) {
      throw new DatasetError(`${source}:${i + 1}: not JSON: ${e instanceof Error ? e.message : e}`);
    }
    if (typeof o !== "object" || o === null || Array.isArray(o)) {
      throw new DatasetError(`${source}:${i + 1}: expected a JSON object`);
    }
    out.push({ line: i + 1, value: o as Record<string, unknown> });
  }
  return out;
}

function parseJsonl(text: string, source: string): Row[] {
  return jsonlObjects(text, source).map(({ line, value }) => {
    if (typeof value.path !== "string") {
      throw new DatasetError(
        `${source}:${line}: expected an object with a "path" string (and "label", "start", "end")`,
      );
    }
    const { path, label, start, end, ...fields } = value;
    if (label !== undefined && label !== null && typeof label !== "string" && typeof label !== "number") {
      throw new DatasetError(
        `${source}:${line}: "label" must be a string or a number, got ${JSON.stringify(label)} ` +
          `(put multi-label ids in another key: it goes through to each clip's metadata)`,
      );
    }
    const text = (v: unknown) => v === undefined || v === null ? undefined : String(v);
    return row({ path, label: text(label), start: text(start), end: text(end) }, fields, line, source);
  });
}

function row(
  cells: { path: string; label?: string; start?: string; end?: string },
  fields: Record<string, unknown>,
  line: number,
  source: string,
): Row {
  if (cells.path === "") throw new DatasetError(`${source}:${line}: empty path`);
  const r: Row = { line, path: cells.path };
  if (cells.label !== undefined) {
    if (cells.label === "") throw new DatasetError(`${source}:${line}: empty label`);
    r.label = cells.label;
  }
  const time = (s: string | undefined, what: string) => {
    if (s === undefined || s === "") return undefined;
    const n = Number(s);
    if (!Number.isFinite(n) || n < 0) {
      throw new DatasetError(`${source}:${line}: ${what} "${s}" is not a time in seconds >= 0`);
    }
    return n;
  };
  const start = time(cells.start, "start"), end = time(cells.end, "end");
  if (start !== undefined && end !== undefined && !(end > start)) {
    throw new DatasetError(`${source}:${line}: end ${end} is not after start ${start}`);
  }
  if (start !== undefined) r.start = start;
  if (end !== undefined) r.end = end;
  if (Object.keys(fields).length > 0) r.fields = fields;
  return r;
}

function baseOf(source: string): string {
  if (isUrl(source)) return new URL(".", source).href;
  const i = source.lastIndexOf("/");
  return i < 0 ? "." : source.slice(0, i) || "/";
}

function resolvePath(p: string, base: string): string {
  if (isUrl(p) || p.startsWith("/")) return p;
  if (isUrl(base)) return new URL(p, base).href;
  return `${base}/${p}`;
}
