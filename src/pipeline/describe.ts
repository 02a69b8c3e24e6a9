/**
 * Short, bounded descriptions of pipeline items for logs and errors (never the item itself, so a failure record
 * does not keep a big buffer alive).
 * @module
 */

import { fmtSec } from "../errors.ts";

const MAX = 80;
/** How deep an item is searched for a field that names it (a clip's `meta.path`, a slot's `clip.meta.path`). */
const DEPTH = 3;

/**
 * Describes an item in about 80 characters (more only to keep paths whole): strings and numbers as such,
 * buffers by type and size, an item with a `path` or `url` by that in full (and its window `[start, end)` when
 * it has one), also when the path is in a field of the item (`meta.path`, `failed.path`), other objects by an
 * identifying field, arrays by their first elements and their count.
 */
export function describeItem(item: unknown): string {
  if (item === null || item === undefined) return String(item);
  switch (typeof item) {
    case "string":
      return JSON.stringify(clip(item));
    case "number":
    case "bigint":
    case "boolean":
      return String(item);
    case "function":
      return "function";
    case "symbol":
      return item.toString();
  }
  return describeObject(item as object);
}

function describeObject(obj: object): string {
  if (ArrayBuffer.isView(obj)) return `${obj.constructor.name}(${obj.byteLength} bytes)`;
  if (obj instanceof ArrayBuffer) return `ArrayBuffer(${obj.byteLength} bytes)`;
  if (Array.isArray(obj)) return describeArray(obj);
  // A file or URL names the item by itself, and in full: a path cut short cannot be found again.
  const named = nameOf(obj, DEPTH);
  if (named !== undefined) return named;
  const rec = obj as Record<string, unknown>;
  const type = obj.constructor === Object || obj.constructor === undefined ? "" : `${obj.constructor.name} `;
  for (const key of ["name", "id", "key", "index"]) {
    const v = rec[key];
    if (typeof v === "string" || typeof v === "number") return clip(`${type}${key}=${v}`);
  }
  return clip(type.trim() || "Object");
}

/** `[a.mp4 [0, 0.32), b.mp4 [1, 1.32), … (4 items)]`: elements while they fit, then the count. */
function describeArray(items: readonly unknown[]): string {
  if (items.length === 0) return "[] (0 items)";
  const parts: string[] = [];
  let length = 0;
  for (const item of items) {
    const d = describeItem(item);
    if (parts.length > 0 && length + d.length > MAX) break;
    parts.push(d);
    length += d.length + 2;
  }
  const more = parts.length < items.length ? ", …" : "";
  return `[${parts.join(", ")}${more}] (${items.length} item${items.length === 1 ? "" : "s"})`;
}

/** The `path` or `url` of `obj` or of a plain object in its fields (breadth first), with its window if any. */
function nameOf(obj: object, depth: number): string | undefined {
  let level: object[] = [obj];
  for (let d = 0; d <= depth && level.length > 0; d++) {
    const next: object[] = [];
    for (const o of level) {
      const rec = o as Record<string, unknown>;
      for (const key of ["path", "url"]) {
        const v = rec[key];
        if (typeof v !== "string") continue;
        const { start, end } = rec;
        return typeof start === "number" && typeof end === "number"
          ? `${v} [${fmtSec(start)}, ${fmtSec(end)})`
          : v;
      }
      for (const v of Object.values(rec)) {
        if (typeof v === "object" && v !== null && !Array.isArray(v) && !ArrayBuffer.isView(v)) next.push(v);
      }
    }
    level = next;
  }
  return undefined;
}

function clip(s: string): string {
  return s.length <= MAX ? s : s.slice(0, MAX - 1) + "…";
}
