/** C string helpers shared by every binding. @module */

const encoder = new TextEncoder();

/** A NUL-terminated UTF-8 copy of `s`, to pass as a `const char *` ("buffer") argument. */
export function cstr(s: string): Uint8Array<ArrayBuffer> {
  const bytes = encoder.encode(s);
  const out = new Uint8Array(bytes.length + 1);
  out.set(bytes);
  return out;
}

/** Reads a `const char *` result; `null` for a NULL pointer. */
export function readCString(ptr: Deno.PointerValue): string | null {
  if (ptr === null) return null;
  return Deno.UnsafePointerView.getCString(ptr);
}
