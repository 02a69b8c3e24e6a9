/**
 * Short, bounded descriptions of pipeline items for logs and errors (never the item itself, so a failure record
 * does not keep a big buffer alive).
 * @module
 */

const MAX = 80;

/** Describes an item in at most ~80 characters: strings and numbers as such, buffers by type and size. */
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
  return clip(describeObject(item as object));
}

function describeObject(obj: object): string {
  if (ArrayBuffer.isView(obj)) return `${obj.constructor.name}(${obj.byteLength} bytes)`;
  if (obj instanceof ArrayBuffer) return `ArrayBuffer(${obj.byteLength} bytes)`;
  if (Array.isArray(obj)) return `Array(${obj.length})`;
  const rec = obj as Record<string, unknown>;
  for (const key of ["path", "url", "name", "id", "key", "index"]) {
    const v = rec[key];
    if (typeof v === "string" || typeof v === "number") {
      return `${obj.constructor?.name ?? "Object"} ${key}=${v}`;
    }
  }
  return obj.constructor?.name ?? "Object";
}

function clip(s: string): string {
  return s.length <= MAX ? s : s.slice(0, MAX - 1) + "…";
}
