/**
 * Manifests for dataset preparation. Inputs are opened exactly as the loader opens them (`openDataset`: a
 * directory tree `root/<label>/…/<video>`, or a CSV/JSONL manifest by column name), and each row keeps what it
 * says: path (relative to the dataset's root), label, time range and every other column (`fields`).
 *
 * Prepared datasets are described by JSONL manifests (one object a line), which the loader opens as they are:
 * `{"path", "label", …extra columns, "duration", "frames", "fps", "width", "height", "codec", "keyframes",
 * "source", "source_index"}`; `source_index` is the row's position in the input, which orders merged shards.
 * @module
 */

import { jsonlObjects, openDataset, type VideoDataset } from "../dataset/dataset.ts";
import { fetchBytes, isUrl } from "../dataset/fetch.ts";
import { DatasetError } from "../errors.ts";

/** One input video with everything its row says. */
export interface SourceRow {
  /** Position in the input, from 0. */
  index: number;
  /** Where to read it: a local path (resolved against the manifest's directory) or a URL. */
  source: string;
  /** Path relative to the dataset's root: where the output goes under the output directory. */
  relative: string;
  /** The class name (a number when every label of the dataset is one), undefined for an unlabelled dataset. */
  label?: string | number;
  start?: number;
  end?: number;
  /** Every other column, as the loader reads it (`VideoItem.fields`). */
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

/** The rows of a dataset opened from `source`; see {@link SourceRow}. */
export function sourceRows(ds: VideoDataset, source: string): SourceRow[] {
  if (ds.items.some((i) => i.member !== undefined)) {
    throw new DatasetError(
      `${source}: packed shards are a dataset to load, not one to prepare: give the manifest`,
    );
  }
  const base = rootOf(ds, source);
  const numeric = ds.classes.every((c, i) => c === String(i));
  return ds.items.map((item, index) => {
    const row: SourceRow = {
      index,
      source: item.path,
      relative: relativeOf(item.path.startsWith(base) ? item.path.slice(base.length) : item.path),
      extra: item.fields ?? {},
    };
    if (item.label >= 0) row.label = numeric ? item.label : ds.classes[item.label];
    if (item.start !== undefined) row.start = item.start;
    if (item.end !== undefined) row.end = item.end;
    return row;
  });
}

/** Opens a directory tree or a CSV/JSONL manifest (path or URL) as the loader does and returns its rows. */
export async function readSourceRows(source: string): Promise<SourceRow[]> {
  return sourceRows(await openDataset(source), source);
}

/** What item paths of `ds` are relative to: the directory tree's root, or the manifest's directory. */
function rootOf(ds: VideoDataset, source: string): string {
  if (isUrl(source)) return new URL(".", source).href;
  const asDir = `${source.replace(/\/+$/, "")}/`;
  if (ds.items.every((i) => i.path.startsWith(asDir))) return asDir;
  const i = source.lastIndexOf("/");
  return i < 0 ? "./" : `${source.slice(0, i)}/`;
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

/** Reads a JSONL file into objects (no schema check beyond "one object a line", each error naming its line). */
export async function readJsonl(path: string): Promise<Record<string, unknown>[]> {
  return jsonlObjects(new TextDecoder().decode(await fetchBytes(path)), path).map((o) => o.value);
}
