/**
 * Seeded mutations of media files and serialized packets for the fuzzer. A mutator looks at the input (MP4/MOV
 * box tree, EBML element tree, RIFF/AVI chunk tree, the `VideoPackets` header) and emits primitive {@link Op}s — write bytes,
 * truncate, insert a copy, remove — so that a case is replayable from its op list alone (fixtures store it).
 * @module
 */

import { mulberry32 } from "../../src/dataset/random.ts";

/** One primitive edit. `why` says which mutator made it and what it aimed at. */
export type Op =
  | { op: "write"; at: number; bytes: number[]; why: string }
  | { op: "truncate"; at: number; why: string }
  | { op: "insert"; at: number; from: number; n: number; why: string }
  | { op: "remove"; at: number; n: number; why: string };

/** The library's mulberry32 (`src/dataset/random.ts`) with draws for mutators; `int(n)` is uniform in [0, n). */
export class Rng {
  readonly next: () => number;
  constructor(seed: number) {
    this.next = mulberry32(seed);
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)];
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
}

/** A stable 32-bit seed for case `index` of a run seeded `seed`. */
export function caseSeed(seed: number, index: number): number {
  return mix((mix(seed) + Math.imul(index, 0x9e3779b9)) >>> 0);
}

/** murmur3's 32-bit finalizer: every input bit affects every output bit. */
function mix(x: number): number {
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b);
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
  return (x ^ (x >>> 16)) >>> 0;
}

/** Applies `ops` in order to a copy of `input`. Offsets past the end are clamped, so every op list is valid. */
export function applyOps(input: Uint8Array, ops: readonly Op[]): Uint8Array {
  let b = input.slice();
  for (const o of ops) {
    const at = Math.min(o.at, b.length);
    if (o.op === "write") {
      const n = Math.min(o.bytes.length, b.length - at);
      b.set(o.bytes.slice(0, n), at);
    } else if (o.op === "truncate") {
      b = b.slice(0, at);
    } else if (o.op === "insert") {
      const from = Math.min(o.from, b.length);
      const chunk = b.slice(from, Math.min(b.length, from + o.n));
      const out = new Uint8Array(b.length + chunk.length);
      out.set(b.subarray(0, at));
      out.set(chunk, at);
      out.set(b.subarray(at), at + chunk.length);
      b = out;
    } else {
      const end = Math.min(b.length, at + o.n);
      const out = new Uint8Array(b.length - (end - at));
      out.set(b.subarray(0, at));
      out.set(b.subarray(end), at);
      b = out;
    }
  }
  return b;
}

// ------------------------------------------------------------------------------------------ structure

/** A box or element found in the input: where its header and its size field are. */
interface Node {
  at: number;
  headerSize: number;
  size: number;
  name: string;
  /** Offset and width of the size field; of the type/ID field. */
  sizeAt: number;
  sizeLen: number;
  typeAt: number;
  typeLen: number;
}

const MP4_CONTAINERS = new Set([
  "moov",
  "trak",
  "mdia",
  "minf",
  "stbl",
  "dinf",
  "edts",
  "udta",
  "mvex",
  "moof",
  "traf",
  "mfra",
  "meta",
]);

/** The ISO-BMFF (MP4/MOV) box tree, flattened; empty when the input is not one. */
export function mp4Boxes(b: Uint8Array): Node[] {
  const out: Node[] = [];
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const walk = (start: number, end: number, depth: number) => {
    let at = start;
    while (at + 8 <= end && out.length < 4096) {
      let size = dv.getUint32(at);
      const type = String.fromCharCode(...b.subarray(at + 4, at + 8));
      if (!/^[\x20-\x7e]{4}$/.test(type)) return;
      let header = 8;
      if (size === 1 && at + 16 <= end) {
        size = Number(dv.getBigUint64(at + 8));
        header = 16;
      } else if (size === 0) size = end - at;
      if (size < header || at + size > end) return;
      out.push({
        at,
        headerSize: header,
        size,
        name: type,
        sizeAt: at,
        sizeLen: 4,
        typeAt: at + 4,
        typeLen: 4,
      });
      if (depth < 8 && MP4_CONTAINERS.has(type)) {
        walk(at + header + (type === "meta" ? 4 : 0), at + size, depth + 1);
      } else if (type === "stsd" && depth < 8) walk(at + header + 8, at + size, depth + 1);
      at += size;
    }
  };
  walk(0, b.length, 0);
  return out.length >= 2 ? out : [];
}

/** The RIFF (AVI) chunk tree, flattened: `RIFF`/`LIST` hold a form type and sub-chunks; empty when not RIFF. */
export function riffChunks(b: Uint8Array): Node[] {
  const out: Node[] = [];
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const walk = (start: number, end: number, depth: number) => {
    let at = start;
    while (at + 8 <= end && out.length < 4096) {
      const id = String.fromCharCode(...b.subarray(at, at + 4));
      if (!/^[\x20-\x7e]{4}$/.test(id)) return;
      const size = dv.getUint32(at + 4, true);
      if (at + 8 + size > end) return;
      out.push({
        at,
        headerSize: 8,
        size: 8 + size,
        name: id,
        sizeAt: at + 4,
        sizeLen: 4,
        typeAt: at,
        typeLen: 4,
      });
      if ((id === "RIFF" || id === "LIST") && depth < 8) walk(at + 12, at + 8 + size, depth + 1);
      at += 8 + size + (size & 1);
    }
  };
  if (b.length >= 12 && String.fromCharCode(...b.subarray(0, 4)) === "RIFF") walk(0, b.length, 0);
  return out;
}

const EBML_MASTERS = new Set([
  0x1a45dfa3, // EBML header
  0x18538067, // Segment
  0x114d9b74, // SeekHead
  0x4dbb, // Seek
  0x1549a966, // Info
  0x1654ae6b, // Tracks
  0xae, // TrackEntry
  0xe0, // Video
  0x55b0, // Colour
  0x1f43b675, // Cluster
  0xa0, // BlockGroup
  0x1c53bb6b, // Cues
  0xbb, // CuePoint
  0xb7, // CueTrackPositions
  0x1254c367, // Tags
  0x7373, // Tag
  0x6d80, // ContentEncodings
  0x6240, // ContentEncoding
]);

/** Reads an EBML variable-length integer at `at`: its width and value (marker bit removed for sizes). */
function vint(b: Uint8Array, at: number, keepMarker: boolean): { len: number; value: number } | null {
  const first = b[at];
  if (first === undefined || first === 0) return null;
  const len = Math.clz32(first) - 23;
  if (len > 8 || at + len > b.length) return null;
  let value = keepMarker ? first : first & (0xff >> len);
  for (let i = 1; i < len; i++) value = value * 256 + b[at + i];
  return { len, value };
}

/** The EBML (Matroska/WebM) element tree, flattened; empty when the input is not one. */
export function ebmlElements(b: Uint8Array): Node[] {
  const out: Node[] = [];
  const walk = (start: number, end: number, depth: number) => {
    let at = start;
    while (at < end && out.length < 4096) {
      const id = vint(b, at, true);
      if (id === null || id.len > 4) return;
      const size = vint(b, at + id.len, false);
      if (size === null) return;
      const header = id.len + size.len;
      const unknown = size.value === 2 ** (7 * size.len) - 1;
      const total = unknown ? end - at : header + size.value;
      if (at + total > end) return;
      out.push({
        at,
        headerSize: header,
        size: total,
        name: `0x${id.value.toString(16)}`,
        sizeAt: at + id.len,
        sizeLen: size.len,
        typeAt: at,
        typeLen: id.len,
      });
      if (depth < 8 && EBML_MASTERS.has(id.value)) walk(at + header, at + total, depth + 1);
      at += total;
    }
  };
  walk(0, b.length, 0);
  return out.length >= 2 && b[0] === 0x1a ? out : [];
}

// ------------------------------------------------------------------------------------------ mutators

/** Values that break size and count fields in interesting ways. */
const EVIL_U32 = [0, 1, 2, 7, 8, 0x7f, 0x80, 0xff, 0x100, 0x7fff, 0xffff, 0x7fffffff, 0x80000000, 0xffffffff];

function u32be(v: number): number[] {
  return [(v >>> 24) & 255, (v >>> 16) & 255, (v >>> 8) & 255, v & 255];
}

function randomBytes(r: Rng, n: number): number[] {
  return Array.from({ length: n }, () => r.int(256));
}

/** Where to aim: half the time inside the first 4 KiB (headers), else anywhere. */
function spot(r: Rng, len: number): number {
  return r.chance(0.5) ? r.int(Math.min(len, 4096)) : r.int(len);
}

type Mutator = (r: Rng, b: Uint8Array) => Op[];

const generic: Record<string, Mutator> = {
  bitflips: (r, b) =>
    Array.from({ length: 1 + r.int(8) }, () => {
      const at = spot(r, b.length);
      return { op: "write" as const, at, bytes: [b[at] ^ (1 << r.int(8))], why: "bit flip" };
    }),
  byteRun: (r, b) => {
    const n = 1 + r.int(64);
    const bytes = r.chance(0.5) ? Array(n).fill(r.pick([0, 0xff, r.int(256)])) : randomBytes(r, n);
    return [{ op: "write", at: spot(r, b.length), bytes, why: `run of ${n} bytes` }];
  },
  truncateHeader: (
    r,
    b,
  ) => [{ op: "truncate", at: r.int(Math.min(b.length, 2048)), why: "truncated in the header" }],
  truncate: (r, b) => [{ op: "truncate", at: r.int(b.length), why: "truncated" }],
  duplicate: (r, b) => {
    const n = 1 + r.int(Math.min(65536, b.length));
    return [{ op: "insert", at: r.int(b.length), from: r.int(b.length), n, why: `chunk of ${n} duplicated` }];
  },
  remove: (r, b) => {
    const n = 1 + r.int(Math.min(65536, b.length));
    return [{ op: "remove", at: spot(r, b.length), n, why: `chunk of ${n} removed` }];
  },
  zero: (r, b) => {
    const n = 1 + r.int(4096);
    return [{ op: "write", at: spot(r, b.length), bytes: Array(n).fill(0), why: `${n} bytes zeroed` }];
  },
};

function nodeMutation(r: Rng, nodes: Node[], kind: "mp4" | "ebml" | "riff"): Op[] {
  const n = r.pick(nodes);
  const what = `${kind} ${kind === "ebml" ? `element ${n.name}` : `'${n.name}'`} at ${n.at}`;
  const choice = r.int(4);
  if (choice === 0) {
    // The type / ID: another plausible one, or noise.
    const bytes = kind === "mp4" && r.chance(0.5)
      ? [...r.pick(["moov", "trak", "mdat", "stsz", "stco", "free", "avcC", "ctts", "elst"])].map((c) =>
        c.charCodeAt(0)
      )
      : randomBytes(r, n.typeLen);
    return [{ op: "write", at: n.typeAt, bytes, why: `${what}: type` }];
  }
  if (choice === 3) return [{ op: "truncate", at: n.at + r.int(n.size), why: `${what}: cut inside` }];
  // The size: an evil value, or off by a little.
  if (kind !== "ebml") {
    // An MP4 size counts its header, a RIFF size does not.
    const base = kind === "mp4" ? n.size : n.size - n.headerSize;
    const v = (r.chance(0.6) ? r.pick(EVIL_U32) : Math.max(0, base + r.int(33) - 16)) >>> 0;
    const bytes = kind === "mp4" ? u32be(v) : u32be(v).reverse();
    return [{ op: "write", at: n.sizeAt, bytes, why: `${what}: size ${v}` }];
  }
  // An EBML size keeps its width (the length marker), with a new value; all ones means "unknown".
  const width = n.sizeLen;
  const max = (1n << BigInt(7 * width)) - 1n;
  const near = BigInt(Math.max(0, n.size - n.headerSize + r.int(33) - 16));
  let size = r.pick([0n, 1n, max, max - 1n, near, BigInt(r.int(0x7fffffff))]);
  if (size > max) size = max;
  const bytes = Array.from(
    { length: width },
    (_, i) => Number((size >> BigInt(8 * (width - 1 - i))) & 0xffn),
  );
  bytes[0] |= 0x80 >> (width - 1);
  return [{ op: "write", at: n.sizeAt, bytes, why: `${what}: size ${size}` }];
}

/** Serialized `VideoPackets`: header fields (32..151) set to boundary values, besides the generic mutations. */
function packetsHeader(r: Rng, b: Uint8Array): Op[] {
  const at = 32 + 4 * r.int(30);
  const v = r.pick([0, 1, -1, 8, 9, 10, 12, 16, 255, 0x7fffffff, -0x80000000, r.int(0x10000), -99]);
  const bytes = [v & 255, (v >> 8) & 255, (v >> 16) & 255, (v >>> 24) & 255];
  if (at + 4 > b.length) return [];
  return [{ op: "write", at, bytes, why: `header field at ${at} = ${v}` }];
}

/**
 * Serialized `VideoPackets`: one entry of the packet table damaged where it decides which frame shows when: a
 * pts moved a little or far (to INT64_MIN, "no timestamp", too), two packets' pts swapped, one copied onto
 * another, a duration or a flag (key, discard) changed.
 */
function packetTable(r: Rng, b: Uint8Array): Op[] {
  if (b.length < 32) return [];
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const header = v.getUint32(8, true), n = v.getUint32(12, true);
  const strings = v.getUint32(16, true) + v.getUint32(20, true) + v.getUint32(24, true);
  const table = Math.ceil((header + strings) / 8) * 8;
  if (n === 0 || n > 1e6 || table + n * 36 > b.length) return [];
  const i = r.int(n), j = r.int(n);
  const ptsAt = (k: number) => table + 8 * k;
  const i64 = (x: bigint) =>
    Array.from({ length: 8 }, (_, k) => Number((BigInt.asUintN(64, x) >> BigInt(8 * k)) & 255n));
  const pts = (k: number) => v.getBigInt64(ptsAt(k), true);
  const what = `packet ${i}`;
  switch (r.int(6)) {
    case 0: {
      const d = BigInt(r.pick([-1, 1, -2, 3, -1000, 1000, -90000]));
      return [{
        op: "write",
        at: ptsAt(i),
        bytes: i64(pts(i) + d),
        why: `${what}: pts ${d > 0 ? "+" : ""}${d}`,
      }];
    }
    case 1: {
      const x = r.pick([-(2n ** 63n), -(2n ** 62n), 2n ** 62n, -1n, 0n, -(10n ** 18n)]);
      return [{ op: "write", at: ptsAt(i), bytes: i64(x), why: `${what}: pts ${x}` }];
    }
    case 2:
      return [
        { op: "write", at: ptsAt(i), bytes: i64(pts(j)), why: `${what}: pts swapped with packet ${j}'s` },
        { op: "write", at: ptsAt(j), bytes: i64(pts(i)), why: `packet ${j}: pts swapped with packet ${i}'s` },
      ];
    case 3:
      return [{ op: "write", at: ptsAt(i), bytes: i64(pts(j)), why: `${what}: pts of packet ${j}` }];
    case 4: {
      const x = BigInt(r.pick([0, 1, -1, 1 << 30]));
      return [{ op: "write", at: table + 16 * n + 8 * i, bytes: i64(x), why: `${what}: duration ${x}` }];
    }
    default: {
      const at = table + 24 * n + 4 * i;
      const flags = v.getUint32(at, true) ^ r.pick([1, 4, 2]);
      return [{ op: "write", at, bytes: [flags & 255, 0, 0, 0], why: `${what}: flags ${flags}` }];
    }
  }
}

/** One to three mutations of `b`, aware of its structure; `packets` marks a serialized `VideoPackets`. */
export function mutations(r: Rng, b: Uint8Array, packets = false): Op[] {
  const boxes = packets ? [] : mp4Boxes(b);
  const elements = packets || boxes.length > 0 ? [] : ebmlElements(b);
  const chunks = packets || boxes.length > 0 || elements.length > 0 ? [] : riffChunks(b);
  const ops: Op[] = [];
  for (let k = 0, n = 1 + r.int(3); k < n && b.length > 0; k++) {
    const x = r.int(10);
    if (x < 3 && boxes.length > 0) ops.push(...nodeMutation(r, boxes, "mp4"));
    else if (x < 3 && elements.length > 0) ops.push(...nodeMutation(r, elements, "ebml"));
    else if (x < 3 && chunks.length > 0) ops.push(...nodeMutation(r, chunks, "riff"));
    else if (x < 4 && packets) ops.push(...packetsHeader(r, b));
    else if (x < 7 && packets) ops.push(...packetTable(r, b));
    else ops.push(...r.pick(Object.values(generic))(r, b));
  }
  return ops;
}
