/**
 * Labelled video datasets: a directory tree `root/<label>/<video>` or a manifest (CSV or JSONL) of
 * `path,label[,start,end]` rows. Paths may be local (relative ones resolve against the manifest's directory)
 * or `http(s)://` URLs; a manifest may itself be a URL.
 *
 * Labels: a directory tree numbers its label directories in sorted order. A manifest whose labels are all
 * non-negative integers uses them as they are (class names are the numbers); otherwise the distinct label
 * names are numbered in sorted order.
 * @module
 */

import { DatasetError } from "../errors.ts";
import { fetchBytes, isUrl } from "./fetch.ts";
import type { IndexedVideo } from "./video_index.ts";
import { type MemberRef, shardDataset } from "../shards/dataset.ts";
import { isShardSource, openShards } from "../shards/reader.ts";

/** One labelled video (or a time range of one). */
export interface VideoItem {
  /** Local path or http(s) URL. */
  path: string;
  /** Class index into `VideoDataset.classes`. */
  label: number;
  /** Optional range of the video to sample from, seconds. */
  start?: number;
  end?: number;
  /** The video is this member of the file at `path` (a tar shard): one positioned read, checked (`readMember`). */
  member?: MemberRef;
  /** What indexing would find (time range, frame rate, keyframes) when it is known without probing. */
  indexed?: IndexedVideo;
}

/** A labelled list of videos. */
export interface VideoDataset {
  /** Where it came from (directory, manifest path or URL). */
  root: string;
  /** Class names; a label is an index into this list. */
  classes: string[];
  items: VideoItem[];
}

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

/**
 * Opens a dataset: a directory tree, a `.csv` / `.jsonl` manifest (local or URL), or packed shards (a directory
 * with `shards.json`, that file, an `.idx.json` or a `.tar`, local or URL; see `src/shards/`).
 */
export async function openDataset(source: string): Promise<VideoDataset> {
  if (await isShardSource(source)) return shardDataset(await openShards(source));
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

/** Reads `root/<label>/<video>`: labels are the sorted subdirectory names; only video extensions count. */
export async function datasetFromDirectory(root: string): Promise<VideoDataset> {
  const classes: string[] = [];
  for await (const e of Deno.readDir(root)) {
    if (e.isDirectory && !e.name.startsWith(".")) classes.push(e.name);
  }
  classes.sort();
  const items: VideoItem[] = [];
  for (const [label, name] of classes.entries()) {
    const files: string[] = [];
    for await (const e of Deno.readDir(`${root}/${name}`)) {
      if (e.isFile && VIDEO_EXTENSIONS.some((x) => e.name.toLowerCase().endsWith(x))) files.push(e.name);
    }
    files.sort();
    for (const f of files) items.push({ path: `${root}/${name}/${f}`, label });
  }
  if (items.length === 0) {
    throw new DatasetError(`${root}: open dataset failed: no videos found under ${root}/<label>/`);
  }
  return { root, classes, items };
}

interface Row {
  path: string;
  label: string;
  start?: number;
  end?: number;
  line: number;
}

/** Reads a CSV (`path,label[,start,end]`, header optional) or JSONL (`{"path","label","start"?,"end"?}`) manifest. */
export async function datasetFromManifest(source: string): Promise<VideoDataset> {
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
  const numeric = rows.every((r) => /^\d+$/.test(r.label));
  const classes = numeric
    ? Array.from({ length: Math.max(...rows.map((r) => Number(r.label))) + 1 }, (_, i) => String(i))
    : [...new Set(rows.map((r) => r.label))].sort();
  const index = new Map(classes.map((c, i) => [c, i]));
  const items = rows.map((r): VideoItem => {
    const item: VideoItem = { path: resolvePath(r.path, base), label: index.get(r.label)! };
    if (r.start !== undefined) item.start = r.start;
    if (r.end !== undefined) item.end = r.end;
    return item;
  });
  return { root: source, classes, items };
}

function parseCsv(text: string, source: string): Row[] {
  const rows: Row[] = [];
  for (const [i, raw] of text.split(/\r?\n/).entries()) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const cells = splitCsvLine(line);
    if (rows.length === 0 && cells[0].toLowerCase() === "path") continue; // header
    if (cells.length < 2 || cells.length > 4) {
      throw new DatasetError(
        `${source}:${i + 1}: expected path,label[,start,end], got ${cells.length} fields`,
      );
    }
    rows.push(row(cells[0], cells[1], cells[2], cells[3], i + 1, source));
  }
  return rows;
}

/** True when a manifest is JSON lines (by its name, or its first non-blank character), CSV otherwise. */
export function isJsonlManifest(source: string, text: string): boolean {
  return /\.jsonl?(\?.*)?$/i.test(source) || text.trimStart().startsWith("{");
}

/** Splits one CSV line into trimmed cells (double quotes quote, `""` is a quote). */
export function splitCsvLine(line: string): string[] {
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

function parseJsonl(text: string, source: string): Row[] {
  const rows: Row[] = [];
  for (const [i, raw] of text.split(/\r?\n/).entries()) {
    if (raw.trim() === "") continue;
    let o: Record<string, unknown>;
    try {
      o = JSON.parse(raw);
    } catch (e) {
      throw new DatasetError(`${source}:${i + 1}: not JSON: ${e instanceof Error ? e.message : e}`);
    }
    if (typeof o !== "object" || o === null || typeof o.path !== "string" || o.label === undefined) {
      throw new DatasetError(`${source}:${i + 1}: expected {"path": string, "label": ..., "start"?, "end"?}`);
    }
    const opt = (v: unknown) => v === undefined || v === null ? undefined : String(v);
    rows.push(row(o.path, String(o.label), opt(o.start), opt(o.end), i + 1, source));
  }
  return rows;
}

function row(
  path: string,
  label: string,
  start: string | undefined,
  end: string | undefined,
  line: number,
  source: string,
): Row {
  if (path === "") throw new DatasetError(`${source}:${line}: empty path`);
  if (label === "") throw new DatasetError(`${source}:${line}: empty label`);
  const r: Row = { path, label, line };
  const num = (s: string | undefined, what: string) => {
    if (s === undefined || s === "") return undefined;
    const n = Number(s);
    if (!Number.isFinite(n) || n < 0) {
      throw new DatasetError(`${source}:${line}: ${what} "${s}" is not a time >= 0`);
    }
    return n;
  };
  r.start = num(start, "start");
  r.end = num(end, "end");
  if (r.start !== undefined && r.end !== undefined && !(r.end > r.start)) {
    throw new DatasetError(`${source}:${line}: end ${r.end} is not after start ${r.start}`);
  }
  if (r.start === undefined) delete r.start;
  if (r.end === undefined) delete r.end;
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
