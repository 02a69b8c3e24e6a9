/**
 * Short, bounded descriptions of pipeline items for logs and errors (never the item itself, so a failure record
 * does not keep a big buffer alive).
 * @module
 */

const MAX = 80;

/**
 * Describes an item in at most ~80 characters (an item with a `path` or `url`, by that in full): strings and
 * numbers as such, buffers by type and size, other objects by an identifying field.
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
  if (Array.isArray(obj)) return `Array(${obj.length})`;
  const rec = obj as Record<string, unknown>;
  // A file or URL names the item by itself, and in full: a path cut short cannot be found again.
  for (const key of ["path", "url"]) if (typeof rec[key] === "string") return rec[key] as string;
  const type = obj.constructor === Object || obj.constructor === undefined ? "" : `${obj.constructor.name} `;
  for (const key of ["name", "id", "key", "index"]) {
    const v = rec[key];
    if (typeof v === "string" || typeof v === "number") return clip(`${type}${key}=${v}`);
  }
  return clip(type.trim() || "Object");
}

function clip(s: string): string {
  return s.length <= MAX ? s : s.slice(0, MAX - 1) + "…";
}
