/**
 * POSIX tar (ustar, with PAX extended headers for long names) as WebDataset shards use it: 512-byte blocks,
 * each member a header block and its data padded to a block boundary, two zero blocks at the end. Writing
 * produces what `tar tf`, Python's `tarfile` and `webdataset` read; reading accepts what those write (ustar,
 * PAX `x`/`g` headers, GNU `L` long names) and treats every header as untrusted: its checksum is verified and
 * every number parsed strictly before any of it is used.
 * @module
 */

import { ShardError } from "../../errors.ts";

/** Bytes in a tar block. */
export const BLOCK = 512;

/** Largest member a plain ustar size field can describe (11 octal digits). */
export const MAX_USTAR_SIZE = 8 ** 11 - 1;

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

/** Bytes of padding after `size` bytes of data. */
export function padding(size: number): number {
  return (BLOCK - (size % BLOCK)) % BLOCK;
}

function octal(field: Uint8Array, offset: number, length: number, value: number): void {
  const s = value.toString(8).padStart(length - 1, "0");
  field.set(encoder.encode(s), offset);
  field[offset + length - 1] = 0;
}

function putString(block: Uint8Array, offset: number, length: number, s: Uint8Array): void {
  block.set(s.subarray(0, length), offset);
}

function checksumOf(block: Uint8Array): number {
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 32 : block[i];
  return sum;
}

function ustarHeader(name: Uint8Array, prefix: Uint8Array, size: number, type: string): Uint8Array {
  const h = new Uint8Array(BLOCK);
  putString(h, 0, 100, name);
  octal(h, 100, 8, 0o644);
  octal(h, 108, 8, 0);
  octal(h, 116, 8, 0);
  octal(h, 124, 12, size);
  octal(h, 136, 12, 0); // mtime 0: the same inputs give byte-identical shards
  h[156] = type.charCodeAt(0);
  putString(h, 257, 6, encoder.encode("ustar\0"));
  putString(h, 263, 2, encoder.encode("00"));
  putString(h, 345, 155, prefix);
  const sum = checksumOf(h);
  h.set(encoder.encode(sum.toString(8).padStart(6, "0")), 148);
  h[154] = 0;
  h[155] = 32;
  return h;
}

/** Splits a name into ustar's `prefix` (≤ 155 bytes) and `name` (≤ 100 bytes) at a slash, if it can. */
function splitName(bytes: Uint8Array): [Uint8Array, Uint8Array] | null {
  if (bytes.length <= 100) return [new Uint8Array(0), bytes];
  for (let i = bytes.length - 1; i > 0; i--) {
    if (bytes[i] !== 0x2f) continue;
    const prefix = bytes.subarray(0, i), name = bytes.subarray(i + 1);
    if (prefix.length <= 155 && name.length <= 100 && name.length > 0) return [prefix, name];
    if (bytes.length - i - 1 > 100) break;
  }
  return null;
}

/** One PAX record: `"<len> <key>=<value>\n"` where `<len>` counts the whole record. */
function paxRecord(key: string, value: Uint8Array): Uint8Array {
  const body = encoder.encode(` ${key}=`);
  const rest = body.length + value.length + 1;
  let len = rest + String(rest).length;
  if (String(len).length !== String(rest).length) len = rest + String(len).length;
  const out = new Uint8Array(len);
  out.set(encoder.encode(String(len)), 0);
  out.set(body, String(len).length);
  out.set(value, String(len).length + body.length);
  out[len - 1] = 0x0a;
  return out;
}

/**
 * The header block(s) of a regular-file member `name` of `size` bytes: one ustar block, or a PAX extended
 * header (plus its data) and then the ustar block when the name does not fit ustar's fields.
 */
export function memberHeader(name: string, size: number): Uint8Array {
  if (!Number.isInteger(size) || size < 0 || size > MAX_USTAR_SIZE) {
    throw new RangeError(`tar: member ${name} has an unsupported size ${size}`);
  }
  const bytes = encoder.encode(name);
  if (bytes.length === 0 || bytes.includes(0)) {
    throw new RangeError(`tar: invalid member name ${JSON.stringify(name)}`);
  }
  const split = splitName(bytes);
  if (split !== null) return ustarHeader(split[1], split[0], size, "0");
  const record = paxRecord("path", bytes);
  const pax = ustarHeader(encoder.encode("PaxHeader"), new Uint8Array(0), record.length, "x");
  const out = new Uint8Array(BLOCK + record.length + padding(record.length) + BLOCK);
  out.set(pax, 0);
  out.set(record, BLOCK);
  out.set(ustarHeader(bytes.subarray(bytes.length - 100), new Uint8Array(0), size, "0"), out.length - BLOCK);
  return out;
}

/** The end of an archive: two zero blocks. */
export const END_OF_ARCHIVE: Uint8Array = new Uint8Array(2 * BLOCK);

/** A parsed header block. */
export interface HeaderBlock {
  /** Type flag: "0" regular file, "x"/"g" PAX, "L" GNU long name, "5" directory, ... */
  type: string;
  name: string;
  size: number;
}

function fieldString(block: Uint8Array, offset: number, length: number): string {
  let end = offset;
  while (end < offset + length && block[end] !== 0) end++;
  return decoder.decode(block.subarray(offset, end));
}

function parseOctal(block: Uint8Array, offset: number, length: number): number | null {
  let s = "";
  for (let i = offset; i < offset + length; i++) {
    const c = block[i];
    if (c === 0 || c === 32) {
      if (s.length > 0) break;
      continue;
    }
    if (c < 0x30 || c > 0x37) return null;
    s += String.fromCharCode(c);
  }
  return s === "" ? 0 : parseInt(s, 8);
}

/** True when `block` is all zeros (end of archive). */
export function isZeroBlock(block: Uint8Array): boolean {
  for (let i = 0; i < BLOCK; i++) if (block[i] !== 0) return false;
  return true;
}

/**
 * Parses one header block. Throws {@link ShardError} (naming `shard` and the byte offset) when the checksum or
 * a number is wrong: bytes from a shard are untrusted.
 */
export function parseHeader(block: Uint8Array, shard: string, at: number): HeaderBlock {
  if (block.length < BLOCK) throw new ShardError(shard, "", `truncated tar header at byte ${at}`);
  const stored = parseOctal(block, 148, 8);
  if (stored === null || stored !== checksumOf(block)) {
    throw new ShardError(shard, "", `tar header at byte ${at} is damaged (checksum mismatch)`);
  }
  const size = parseOctal(block, 124, 12);
  if (size === null || size > MAX_USTAR_SIZE) {
    throw new ShardError(shard, "", `tar header at byte ${at}: bad size field`);
  }
  let name: string, prefix: string;
  try {
    name = fieldString(block, 0, 100);
    const magic = fieldString(block, 257, 6);
    prefix = magic === "ustar" ? fieldString(block, 345, 155) : "";
  } catch {
    throw new ShardError(shard, "", `tar header at byte ${at}: name is not UTF-8`);
  }
  const type = block[156] === 0 ? "0" : String.fromCharCode(block[156]);
  return { type, name: prefix ? `${prefix}/${name}` : name, size };
}

/** The `path` of a PAX extended header's records, or undefined. Throws on malformed records. */
export function paxPath(data: Uint8Array, shard: string, at: number): string | undefined {
  let path: string | undefined;
  let i = 0;
  while (i < data.length) {
    let sp = i;
    while (sp < data.length && data[sp] !== 0x20) sp++;
    const len = Number(new TextDecoder().decode(data.subarray(i, sp)));
    if (!Number.isInteger(len) || len <= sp - i || i + len > data.length || data[i + len - 1] !== 0x0a) {
      throw new ShardError(shard, "", `PAX header at byte ${at} is malformed`);
    }
    const rec = data.subarray(sp + 1, i + len - 1);
    const eq = rec.indexOf(0x3d);
    if (eq > 0 && decoder.decode(rec.subarray(0, eq)) === "path") path = decoder.decode(rec.subarray(eq + 1));
    i += len;
  }
  return path;
}

/** A regular-file member found by {@link walkTar}. */
export interface TarEntry {
  name: string;
  /** Offset of its first header block (a PAX or long-name header when there is one). */
  header: number;
  /** Offset and length of its data. */
  offset: number;
  size: number;
}

/** Positioned reads of an archive: `read` may return fewer bytes than asked only at the end of the file. */
export interface TarSource {
  size: number;
  read(offset: number, length: number): Uint8Array;
}

/**
 * Walks an archive's headers from the first to the end-of-archive blocks, checking each, and appends every
 * regular-file member to `entries` (so a caller keeps what was found before a problem). Throws
 * {@link ShardError} naming the shard and the member when the archive is damaged or ends early.
 */
export function walkTar(src: TarSource, shard: string, entries: TarEntry[] = []): TarEntry[] {
  let at = 0, start = -1;
  let longName: string | undefined;
  for (;;) {
    const block = src.read(at, BLOCK);
    if (block.length < BLOCK) {
      throw new ShardError(
        shard,
        entries.at(-1)?.name ?? "",
        `truncated: no end-of-archive blocks (the file ends at byte ${src.size})`,
      );
    }
    if (isZeroBlock(block)) return entries;
    const h = parseHeader(block, shard, at);
    if (start < 0) start = at;
    const dataAt = at + BLOCK;
    const name = longName ?? h.name;
    if (dataAt + h.size > src.size) {
      throw new ShardError(
        shard,
        name,
        `truncated: the shard ends at byte ${src.size}, inside the member's data (bytes ${dataAt}–${
          dataAt + h.size
        })`,
      );
    }
    if (h.type === "x") longName = paxPath(src.read(dataAt, h.size), shard, at) ?? longName;
    else if (h.type === "L") longName = fieldString(src.read(dataAt, h.size), 0, h.size);
    else if (h.type !== "g") { // "g": a global PAX header, nothing sluice needs
      if (h.type === "0" || h.type === "7") {
        entries.push({ name, header: start, offset: dataAt, size: h.size });
      }
      longName = undefined;
      start = -1;
    }
    at = dataAt + h.size + padding(h.size);
  }
}
