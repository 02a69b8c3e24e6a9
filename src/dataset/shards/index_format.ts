/**
 * The sidecar index of a tar shard (`shard-000000.idx.json` beside `shard-000000.tar`) and the shard set
 * (`shards.json`) that lists a dataset's shards. Both are JSON objects with a `format` name, a `version` and
 * a `sha256` of their own canonical text (the object without `sha256`, as `JSON.stringify` writes it), so a
 * damaged or hand-edited index is caught before it is used. Every field is validated on reading: an index
 * comes from disk or the network and is untrusted.
 *
 * A shard index lists, per sample, where its video member and its JSON member lie in the tar (offset of the
 * first header block, offset and size of the data, SHA-256 of the data), its label (an index into the set's
 * `classes`) and what the loader's index would otherwise probe: the time range (`start`, `end`) and the
 * keyframe times.
 * @module
 */

import { createHash } from "node:crypto";
import { ShardError } from "../../errors.ts";

/** `format` of a shard index. */
export const SHARD_INDEX_FORMAT = "sluice-shard-index";
/** `format` of a shard set. */
export const SHARD_SET_FORMAT = "sluice-shard-set";
/** The version this code writes and reads. */
export const SHARD_FORMAT_VERSION = 1;

/** Where one tar member lies. */
export interface MemberLocation {
  /** Name inside the tar, e.g. `sub/v0.mp4`. */
  name: string;
  /** Offset of its first header block. */
  header: number;
  /** Offset of its data. */
  offset: number;
  /** Size of its data in bytes. */
  size: number;
  /** SHA-256 of the data, hex. */
  sha256: string;
}

/** One sample of a shard: a video and its metadata JSON. */
export interface ShardSample {
  /** WebDataset key (member name without its extension). */
  key: string;
  /** The video member (`<key>.<ext>`). */
  video: MemberLocation;
  /** The metadata member (`<key>.json`). */
  meta: MemberLocation;
  /** Class index into the set's `classes`. */
  label: number;
  /** Start of the time range the loader samples from, seconds. */
  start: number;
  /** End of that range, seconds. */
  end: number;
  /** Keyframe presentation times, seconds, ascending (empty when unknown). */
  keyframes: number[];
  /** Frames per second (0 when unknown). */
  frameRate: number;
}

/** A shard's sidecar index. */
export interface ShardIndex {
  /** `"sluice-shard-index"`. */
  format: "sluice-shard-index";
  /** {@link SHARD_FORMAT_VERSION}. */
  version: number;
  /** The tar's file name, relative to the index. */
  shard: string;
  /** The tar's size in bytes. */
  size: number;
  /** Class names; a sample's label indexes this list. */
  classes: string[];
  /** The samples, in tar order. */
  samples: ShardSample[];
}

/** One shard of a set. */
export interface ShardEntry {
  /** The tar's file name, relative to the set file. */
  tar: string;
  /** Its index's file name, relative to the set file. */
  index: string;
  /** The tar's size in bytes. */
  size: number;
  /** Samples in the shard. */
  samples: number;
  /** SHA-256 of the index file's bytes. */
  indexSha256: string;
}

/** The list of a dataset's shards. */
export interface ShardSet {
  /** `"sluice-shard-set"`. */
  format: "sluice-shard-set";
  /** {@link SHARD_FORMAT_VERSION}. */
  version: number;
  /** Class names, the same in every shard's index. */
  classes: string[];
  /** The shards, in dataset order. */
  shards: ShardEntry[];
}

/** SHA-256 of bytes, hex. */
export function sha256Hex(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** Serialises an index or set with its checksum (one line of JSON). */
export function sealJson(o: ShardIndex | ShardSet): string {
  const body = JSON.stringify(o);
  const sum = sha256Hex(new TextEncoder().encode(body));
  return `${body.slice(0, -1)},"sha256":"${sum}"}\n`;
}

/** Parses sealed JSON, checking its `format`, `version` and checksum. */
function unseal(text: string, format: string, where: string): Record<string, unknown> {
  let o: unknown;
  try {
    o = JSON.parse(text);
  } catch (e) {
    throw new ShardError(
      where,
      "",
      `not JSON (damaged or not a ${format} file): ${e instanceof Error ? e.message : e}`,
    );
  }
  if (typeof o !== "object" || o === null || Array.isArray(o)) {
    throw new ShardError(where, "", `not a ${format} file`);
  }
  const rec = o as Record<string, unknown>;
  if (rec.format !== format) {
    throw new ShardError(where, "", `not a ${format} file (format ${JSON.stringify(rec.format)})`);
  }
  if (rec.version !== SHARD_FORMAT_VERSION) {
    throw new ShardError(
      where,
      "",
      `${format} version ${rec.version} is not supported (this sluice reads ${SHARD_FORMAT_VERSION})`,
    );
  }
  const { sha256, ...body } = rec;
  if (typeof sha256 !== "string" || sha256Hex(new TextEncoder().encode(JSON.stringify(body))) !== sha256) {
    throw new ShardError(where, "", `checksum mismatch: the ${format} file is damaged`);
  }
  return body;
}

const isCount = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v >= 0;
const isTime = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v) && v >= 0;
const isHex = (v: unknown): v is string => typeof v === "string" && /^[0-9a-f]{64}$/.test(v);
/** A relative name that stays where it is put: no absolute path, no `..`, no NUL. */
const isSafeName = (v: unknown): v is string =>
  typeof v === "string" && v.length > 0 && !v.startsWith("/") && !v.includes("\0") &&
  !v.split("/").some((s) => s === ".." || s === "");

function location(v: unknown, size: number, where: string, key: string): MemberLocation {
  const bad = (what: string) => new ShardError(where, key, `index entry is invalid: ${what}`);
  if (typeof v !== "object" || v === null) throw bad("member location missing");
  const m = v as Record<string, unknown>;
  if (!isSafeName(m.name)) throw bad(`member name ${JSON.stringify(m.name)}`);
  if (!isCount(m.header) || !isCount(m.offset) || !isCount(m.size)) throw bad("offsets must be byte counts");
  if (!(m.header < m.offset) || m.offset + m.size > size) {
    throw bad(`bytes ${m.offset}+${m.size} lie outside the shard`);
  }
  if (!isHex(m.sha256)) throw bad("sha256 must be 64 hex digits");
  return { name: m.name, header: m.header, offset: m.offset, size: m.size, sha256: m.sha256 };
}

/** Parses and validates a shard index (`where` names it in errors). */
export function parseShardIndex(text: string, where: string): ShardIndex {
  const o = unseal(text, SHARD_INDEX_FORMAT, where);
  if (!isSafeName(o.shard) || o.shard.includes("/")) {
    throw new ShardError(where, "", "index names no shard file");
  }
  if (!isCount(o.size)) throw new ShardError(where, "", "index has no valid shard size");
  const classes = o.classes;
  if (!Array.isArray(classes) || !classes.every((c) => typeof c === "string")) {
    throw new ShardError(where, "", "index has no valid class list");
  }
  if (!Array.isArray(o.samples)) throw new ShardError(where, "", "index has no sample list");
  const size = o.size;
  let last = 0;
  const samples = o.samples.map((s: unknown, i: number): ShardSample => {
    if (typeof s !== "object" || s === null) throw new ShardError(where, "", `sample ${i} is not an object`);
    const r = s as Record<string, unknown>;
    const key = typeof r.key === "string" ? r.key : `#${i}`;
    const bad = (what: string) => new ShardError(where, key, `index entry is invalid: ${what}`);
    if (!isSafeName(r.key)) throw bad("key");
    const video = location(r.video, size, where, key), meta = location(r.meta, size, where, key);
    // Members lie in order and never overlap: what the writer produced, and what a sequential read needs.
    for (const m of [video, meta].sort((a, b) => a.header - b.header)) {
      if (m.header < last) throw bad(`member ${m.name} overlaps the one before it`);
      last = m.offset + m.size;
    }
    if (!isCount(r.label) || r.label >= classes.length) throw bad(`label ${r.label} is not a class index`);
    if (!isTime(r.start) || !isTime(r.end) || !(r.end > r.start)) throw bad("start/end");
    if (!Array.isArray(r.keyframes) || !r.keyframes.every(isTime)) throw bad("keyframes");
    for (let k = 1; k < r.keyframes.length; k++) {
      if (r.keyframes[k] < r.keyframes[k - 1]) throw bad("keyframes out of order");
    }
    if (!isTime(r.frameRate)) throw bad("frameRate");
    return {
      key: r.key,
      video,
      meta,
      label: r.label,
      start: r.start,
      end: r.end,
      keyframes: r.keyframes,
      frameRate: r.frameRate,
    };
  });
  return {
    format: SHARD_INDEX_FORMAT,
    version: SHARD_FORMAT_VERSION,
    shard: o.shard,
    size,
    classes,
    samples,
  };
}

/** Parses and validates a shard set. */
export function parseShardSet(text: string, where: string): ShardSet {
  const o = unseal(text, SHARD_SET_FORMAT, where);
  const classes = o.classes;
  if (!Array.isArray(classes) || !classes.every((c) => typeof c === "string")) {
    throw new ShardError(where, "", "shard set has no valid class list");
  }
  if (!Array.isArray(o.shards) || o.shards.length === 0) {
    throw new ShardError(where, "", "shard set lists no shards");
  }
  const shards = o.shards.map((s: unknown, i: number): ShardEntry => {
    const r = (typeof s === "object" && s !== null ? s : {}) as Record<string, unknown>;
    const ok = isSafeName(r.tar) && isSafeName(r.index) && isCount(r.size) && isCount(r.samples) &&
      isHex(r.indexSha256);
    if (!ok) throw new ShardError(where, "", `shard entry ${i} is invalid`);
    return {
      tar: r.tar as string,
      index: r.index as string,
      size: r.size as number,
      samples: r.samples as number,
      indexSha256: r.indexSha256 as string,
    };
  });
  return { format: SHARD_SET_FORMAT, version: SHARD_FORMAT_VERSION, classes, shards };
}

/** The sidecar index name of a shard: `x.tar` → `x.idx.json`. */
export function indexNameOf(tar: string): string {
  return tar.replace(/\.tar$/, "") + ".idx.json";
}
