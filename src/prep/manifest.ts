/**
 * Manifests for dataset preparation. Reading keeps everything a row says: besides `path`, `label`, `start` and
 * `end` (the columns the loader reads, see `src/data/dataset.ts`), every other column of a CSV with a header or
 * every other key of a JSONL object travels to the output manifest unchanged. A directory tree
 * `root/<label>/<video>` reads as rows labelled by their directory.
 *
 * Prepared datasets are described by JSONL manifests (one object a line), which the loader opens as they are:
 * `{"path", "label", …extra columns, "duration", "frames", "fps", "width", "height", "codec", "keyframes",
 * "source", "source_index"}`; `source_index` is the row's position in the input, which orders merged shards.
 * @module
 */

import { datasetFromDirectory, isJsonlManifest, splitCsvLine } from "../data/dataset.ts";
import { fetchBytes, isUrl } from "../data/fetch.ts";
import { DatasetError } from "../errors.ts";

/** One input row with all its columns. */
export interface SourceRow {
  /** Position in the input, from 0. */
  index: number;
  /** Where to read it: a local path (resolved against the manifest's directory) or a URL. */
  source: string;
  /** Path relative to the dataset's root: where the output goes under the output directory. */
  relative: string;
  /** The label as written (a JSONL number stays a number). */
  label: string | number;
  start?: number;
  end?: number;
  /** Every other column, in input order. */
  extra: Record<string, unknown>;
}

/** Keys the prepared manifest writes itself: `transcode` refuses inputs with a column of one of these names. */
export const RESERVED_COLUMNS: readonly string[] = [
  "duration",
  "frames",
  "fps",
  "width",
  "height",
  "codec",
  "keyframes",
  "source",
  "source_index",
];

const CORE = new Set(["path", "label", "start", "end"]);

/** Reads a directory tree or a CSV/JSONL manifest (local or URL) into rows; see the module docs. */
export async function readSourceRows(source: string): Promise<SourceRow[]> {
  if (!isUrl(source)) {
    let dir = false;
    try {
      dir = (await Deno.stat(source)).isDirectory;
    } catch (e) {
      throw new DatasetError(`${source}: open dataset failed: ${e instanceof Error ? e.message : e}`, {
        cause: e,
      });
    }
    if (dir) return await rowsFromDirectory(source);
  }
  let text: string;
  try {
    text = new TextDecoder().decode(await fetchBytes(source));
  } catch (e) {
    throw new DatasetError(`${source}: read manifest failed: ${e instanceof Error ? e.message : e}`, {
      cause: e,
    });
  }
  const rows = isJsonlManifest(source, text) ? parseJsonl(text, source) : parseCsv(text, source);
  if (rows.length === 0) throw new DatasetError(`${source}: manifest has no rows`);
  const base = baseOf(source);
  return rows.map((r, index) => ({
    ...r,
    index,
    source: resolve(r.path, base),
    relative: relativeOf(r.path),
  }));
}

async function rowsFromDirectory(root: string): Promise<SourceRow[]> {
  const ds = await datasetFromDirectory(root.replace(/\/+$/, "") || "/");
  return ds.items.map((item, index) => ({
    index,
    source: item.path,
    relative: item.path.slice(ds.root.length + 1),
    label: ds.classes[item.label],
    extra: {},
  }));
}

type ParsedRow = Omit<SourceRow, "index" | "source" | "relative"> & { path: string };

function parseCsv(text: string, source: string): ParsedRow[] {
  const out: ParsedRow[] = [];
  let header: string[] | null = null;
  for (const [i, raw] of text.split(/\r?\n/).entries()) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const cells = splitCsvLine(line);
    if (header === null && out.length === 0 && cells[0].toLowerCase() === "path") {
      header = cells.map((c) =>
        c.toLowerCase() === "path" || c.toLowerCase() === "label" ? c.toLowerCase() : c
      );
      continue;
    }
    const names = header ?? ["path", "label", "start", "end"];
    if (cells.length < 2 || cells.length > names.length) {
      throw new DatasetError(`${source}:${i + 1}: expected ${names.join(",")}, got ${cells.length} fields`);
    }
    const o: Record<string, unknown> = {};
    names.forEach((n, k) => {
      if (k < cells.length) o[n] = cells[k];
    });
    out.push(fromObject(o, i + 1, source));
  }
  return out;
}

function parseJsonl(text: string, source: string): ParsedRow[] {
  return jsonObjects(text, source).map(({ line, o }) => fromObject(o, line, source));
}

/** The objects of JSON-lines text, with their line numbers; anything else on a line is an error naming it. */
function jsonObjects(text: string, source: string): { line: number; o: Record<string, unknown> }[] {
  const out: { line: number; o: Record<string, unknown> }[] = [];
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
    out.push({ line: i + 1, o: o as Record<string, unknown> });
  }
  return out;
}

function fromObject(o: Record<string, unknown>, line: number, source: string): ParsedRow {
  const where = `${source}:${line}`;
  if (typeof o.path !== "string" || o.path === "") {
    throw new DatasetError(`${where}: "path" must be a non-empty string`);
  }
  if ((typeof o.label !== "string" && typeof o.label !== "number") || o.label === "") {
    throw new DatasetError(`${where}: "label" must be a non-empty string or a number`);
  }
  const time = (k: "start" | "end") => {
    const v = o[k];
    if (v === undefined || v === null || v === "") return undefined;
    const n = Number(v);
    if (!Number.isFinite(n) || n < 0) throw new DatasetError(`${where}: ${k} "${v}" is not a time >= 0`);
    return n;
  };
  const start = time("start"), end = time("end");
  if (start !== undefined && end !== undefined && !(end > start)) {
    throw new DatasetError(`${where}: end ${end} is not after start ${start}`);
  }
  const extra: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) if (!CORE.has(k)) extra[k] = v;
  const row: ParsedRow = { path: o.path, label: o.label, extra };
  if (start !== undefined) row.start = start;
  if (end !== undefined) row.end = end;
  return row;
}

function baseOf(source: string): string {
  if (isUrl(source)) return new URL(".", source).href;
  const i = source.lastIndexOf("/");
  return i < 0 ? "." : source.slice(0, i) || "/";
}

function resolve(p: string, base: string): string {
  if (isUrl(p) || p.startsWith("/")) return p;
  if (isUrl(base)) return new URL(p, base).href;
  return `${base}/${p}`;
}

/**
 * Where a row's output goes, relative to the output directory: its path as written, with URLs reduced to host
 * and path, and `.`/`..`/empty segments removed so that nothing can land outside the output directory.
 */
export function relativeOf(path: string): string {
  const p = isUrl(path)
    ? (() => {
      const u = new URL(path);
      return `${u.host}${decodeURIComponent(u.pathname)}`;
    })()
    : path;
  const segments = p.split("/").filter((s) => s !== "" && s !== "." && s !== "..");
  if (segments.length === 0) throw new DatasetError(`${path}: no file name to write an output for`);
  return segments.join("/");
}

/** Writes `rows` as JSON lines to `path` atomically (a temporary file renamed over it). */
export async function writeJsonl(path: string, rows: readonly object[]): Promise<void> {
  const tmp = `${path}.partial`;
  await Deno.writeTextFile(tmp, rows.map((r) => JSON.stringify(r) + "\n").join(""));
  await Deno.rename(tmp, path);
}

/** Reads a JSONL file into objects (no schema check beyond "one object a line"). */
export async function readJsonl(path: string): Promise<Record<string, unknown>[]> {
  return jsonObjects(new TextDecoder().decode(await fetchBytes(path)), path).map((r) => r.o);
}
