/**
 * Reading packed shards (see `src/prep/pack.ts` for the layout), from local disk or over HTTP (range
 * requests through `fetchBytes`, with its retries):
 *
 * - {@link openShards}: a shard set (a directory with `shards.json`, that file's path or URL), one shard's
 *   index (`*.idx.json`) or one shard (`*.tar`, its index beside it). Every index is validated (checksum,
 *   fields, its checksum in the set) before anything in it is used.
 * - By index, {@link readSampleVideo}: one positioned read (an HTTP range request) per video.
 * - Sequentially, {@link streamSamples}: whole shards, one read each, in a seeded shuffled order per epoch,
 *   the next shard fetched while the current one is consumed (WebDataset's access pattern: big sequential
 *   reads, no seeks).
 *
 * Every member read is checked against the index: its length (a truncated shard fails with a
 * {@link ShardError} naming the shard and the member) and, unless turned off, its SHA-256 (a flipped byte).
 * @module
 */

import {
  FETCH_DEFAULTS,
  fetchBytes,
  type FetchLimits,
  type FetchOptions,
  fetchResolved,
  isUrl,
} from "../fetch.ts";
import { hashSeed, mulberry32, shuffleInPlace } from "../random.ts";
import { FetchError, ShardError } from "../../errors.ts";
import type { MemberRef } from "../items.ts";
import {
  indexNameOf,
  parseShardIndex,
  parseShardSet,
  sha256Hex,
  type ShardIndex,
  type ShardSample,
} from "./index_format.ts";

/** One shard ready to read: where its tar is and its validated index. */
export interface OpenedShard {
  /** Path or URL of the tar. */
  tar: string;
  /** Its validated index. */
  index: ShardIndex;
}

/** An opened set of shards. */
export interface OpenedShards {
  /** What was opened. */
  source: string;
  /** Class names; a sample's label indexes this list. */
  classes: string[];
  /** The shards, in set order. */
  shards: OpenedShard[];
}

/** Options of the readers. */
export interface ShardReadOptions {
  /** Check each member's SHA-256 against the index (default true). */
  verify?: boolean;
  /** Passed to `fetchBytes` (retries, timeout, signal). */
  fetch?: Omit<FetchOptions, "range">;
}

function dirOf(source: string): string {
  if (isUrl(source)) return new URL(".", source).href;
  const i = source.lastIndexOf("/");
  return i < 0 ? "." : source.slice(0, i) || "/";
}

function join(base: string, name: string): string {
  return isUrl(base) ? new URL(name, base).href : `${base.replace(/\/+$/, "")}/${name}`;
}

async function readText(
  source: string,
  opts: ShardReadOptions,
): Promise<{ text: string; bytes: Uint8Array }> {
  const bytes = await fetchBytes(source, opts.fetch);
  return { text: new TextDecoder().decode(bytes), bytes };
}

async function openIndex(
  source: string,
  tar: string | undefined,
  opts: ShardReadOptions,
): Promise<OpenedShard> {
  const { text } = await readText(source, opts);
  const index = parseShardIndex(text, source);
  return { tar: tar ?? join(dirOf(source), index.shard), index };
}

/** True when `source` names shards: a `shards.json`, an index, a `.tar`, or a directory with `shards.json`. */
export async function isShardSource(source: string): Promise<boolean> {
  if (/(\.tar|\.idx\.json|(^|\/)shards\.json)(\?.*)?$/.test(source)) return true;
  if (isUrl(source)) return false;
  try {
    return (await Deno.stat(source)).isDirectory && (await Deno.stat(join(source, "shards.json"))).isFile;
  } catch {
    return false;
  }
}

/**
 * Opens a shard set (a directory with `shards.json`, that file's path or URL), one shard's index (`*.idx.json`)
 * or one shard (`*.tar`, its index beside it). Every index is validated (checksum, fields, its checksum in the
 * set) before anything in it is used.
 * @param source the directory, file or URL
 * @param opts how the indexes are fetched
 * @returns each shard's tar path or URL and its index
 * @throws {ShardError} for an index or set that is damaged or does not match
 * @throws {FetchError} when a file cannot be read
 */
export async function openShards(source: string, opts: ShardReadOptions = {}): Promise<OpenedShards> {
  let file = source;
  if (!isUrl(source)) {
    try {
      if ((await Deno.stat(source)).isDirectory) file = join(source, "shards.json");
    } catch (e) {
      throw new ShardError(source, "", `cannot open: ${e instanceof Error ? e.message : e}`, { cause: e });
    }
  }
  if (/\.tar(\?.*)?$/.test(file)) {
    const one = await openIndex(indexNameOf(file), file, opts);
    return { source, classes: one.index.classes, shards: [one] };
  }
  const { text } = await readText(file, opts);
  if (text.includes('"format":"sluice-shard-index"')) {
    const index = parseShardIndex(text, file);
    return { source, classes: index.classes, shards: [{ tar: join(dirOf(file), index.shard), index }] };
  }
  const set = parseShardSet(text, file);
  const base = dirOf(file);
  const shards = await Promise.all(set.shards.map(async (entry) => {
    const where = join(base, entry.index);
    const { text, bytes } = await readText(where, opts);
    if (sha256Hex(bytes) !== entry.indexSha256) {
      throw new ShardError(
        where,
        "",
        `the index does not match its checksum in ${file} (replaced or damaged)`,
      );
    }
    const index = parseShardIndex(text, where);
    if (index.shard !== entry.tar || index.size !== entry.size || index.samples.length !== entry.samples) {
      throw new ShardError(where, "", `the index disagrees with ${file} about its shard`);
    }
    if (JSON.stringify(index.classes) !== JSON.stringify(set.classes)) {
      throw new ShardError(where, "", `the index's classes differ from ${file}'s`);
    }
    return { tar: join(base, entry.tar), index };
  }));
  return { source, classes: set.classes, shards };
}

/** Checks a member's bytes against the index: length (truncation) and, when `verify`, its SHA-256. */
function checkMember(shard: string, m: MemberRef, bytes: Uint8Array, verify: boolean): void {
  if (bytes.length !== m.size) {
    throw new ShardError(
      shard,
      m.name,
      `truncated: got ${bytes.length} of ${m.size} bytes (the shard ends before the member does, at bytes ` +
        `${m.offset}–${m.offset + m.size})`,
    );
  }
  if (verify && sha256Hex(bytes) !== m.sha256) {
    throw new ShardError(shard, m.name, "checksum mismatch: the member's bytes are damaged");
  }
}

/**
 * Reads one member with one positioned read (an HTTP range request for URLs), checked against the index.
 * @param tar the shard's path or URL
 * @param m where the member lies and its checksum
 * @param opts how to fetch it, and whether to check its SHA-256
 * @returns the member's bytes
 * @throws {ShardError} for a truncated shard or a checksum mismatch, naming the shard and the member
 */
export async function readMember(
  tar: string,
  m: MemberRef,
  opts: ShardReadOptions = {},
): Promise<Uint8Array<ArrayBuffer>> {
  const read = fetchBytes(tar, { ...opts.fetch, range: [m.offset, m.offset + m.size] });
  return await checkedMember(tar, m, read, opts.verify ?? true);
}

/**
 * {@link readMember} with fetch limits resolved at a door (the loader's: not checked again for every member),
 * the member's checksum verified.
 */
export function readMemberResolved(
  tar: string,
  m: MemberRef,
  limits: FetchLimits,
  signal?: AbortSignal,
): Promise<Uint8Array<ArrayBuffer>> {
  return checkedMember(
    tar,
    m,
    fetchResolved(tar, limits, { range: [m.offset, m.offset + m.size], signal }),
    true,
  );
}

/** The bytes `read` gives, checked against the member's index entry. */
async function checkedMember(
  tar: string,
  m: MemberRef,
  read: Promise<Uint8Array<ArrayBuffer>>,
  verify: boolean,
): Promise<Uint8Array<ArrayBuffer>> {
  let bytes: Uint8Array<ArrayBuffer>;
  try {
    bytes = await read;
  } catch (e) {
    // 416: the range starts past the end of the file.
    if (e instanceof FetchError && e.status === 416) bytes = new Uint8Array(0);
    else throw e;
  }
  checkMember(tar, m, bytes, verify);
  return bytes;
}

/**
 * The video bytes of one sample, by index ({@link readMember}).
 * @param shard the opened shard
 * @param sample the sample, from its index
 * @param opts how to fetch it, and whether to check its SHA-256
 * @returns the video file's bytes
 */
export function readSampleVideo(
  shard: OpenedShard,
  sample: ShardSample,
  opts: ShardReadOptions = {},
): Promise<Uint8Array<ArrayBuffer>> {
  return readMember(shard.tar, sample.video, opts);
}

/**
 * The metadata JSON of one sample, by index ({@link readMember}).
 * @param shard the opened shard
 * @param sample the sample, from its index
 * @param opts how to fetch it, and whether to check its SHA-256
 * @returns the sample's metadata
 * @throws {ShardError} when the member is not a JSON object
 */
export async function readSampleMeta(
  shard: OpenedShard,
  sample: ShardSample,
  opts: ShardReadOptions = {},
): Promise<Record<string, unknown>> {
  const bytes = await readMember(shard.tar, sample.meta, opts);
  try {
    const o = JSON.parse(new TextDecoder().decode(bytes));
    if (typeof o === "object" && o !== null && !Array.isArray(o)) return o;
  } catch { /* reported below */ }
  throw new ShardError(shard.tar, sample.meta.name, "metadata is not a JSON object");
}

/** One sample from {@link streamSamples}. */
export interface StreamedSample {
  /** The shard it came from. */
  shard: OpenedShard;
  /** Its index entry. */
  sample: ShardSample;
  /** The video's bytes (a view into the shard's buffer). */
  video: Uint8Array;
  /** Its metadata member, parsed. */
  meta: Record<string, unknown>;
}

/** Options of {@link streamSamples}. */
export interface StreamOptions extends ShardReadOptions {
  /** Shuffle the shard order (default true), seeded by `seed` and `epoch`. */
  shuffle?: boolean;
  /** Shuffle seed (default 0). */
  seed?: number;
  /** Epoch: each has its own order (default 0). */
  epoch?: number;
  /** Take only shards `i` with `i mod count = index` of the shuffled order (e.g. one per rank). */
  part?: { index: number; count: number };
}

/**
 * The order {@link streamSamples} visits shards in for an epoch.
 * @param n the shards in the set
 * @param opts whether to shuffle, with which seed and epoch, and which part of the order to take
 * @returns shard indexes, in visiting order
 */
export function shardOrder(
  n: number,
  opts: Pick<StreamOptions, "shuffle" | "seed" | "epoch" | "part"> = {},
): number[] {
  const order = Array.from({ length: n }, (_, i) => i);
  if (opts.shuffle ?? true) {
    shuffleInPlace(order, mulberry32(hashSeed(opts.seed ?? 0, opts.epoch ?? 0, 0x5348)));
  }
  const part = opts.part;
  return part ? order.filter((_, i) => i % part.count === part.index) : order;
}

/**
 * Fetch limits for reading `size` bytes in one request: `fetchBytes`' defaults fit one video, not a 1 GiB
 * shard, so unless the caller set them, the attempt's and the whole fetch's time limits allow 10 MB/s plus
 * the defaults.
 */
export function wholeShardFetch(
  size: number,
  fetch: ShardReadOptions["fetch"] = {},
): ShardReadOptions["fetch"] {
  const ms = FETCH_DEFAULTS.timeoutMs + size / 10_000;
  return { timeoutMs: ms, deadlineMs: ms + FETCH_DEFAULTS.deadlineMs, ...fetch };
}

/** Reads a whole shard in one read and checks its length against the index. */
async function readWholeShard(shard: OpenedShard, opts: ShardReadOptions): Promise<Uint8Array> {
  const bytes = await fetchBytes(shard.tar, wholeShardFetch(shard.index.size, opts.fetch));
  if (bytes.length < shard.index.size) {
    const cut = shard.index.samples.flatMap((s) => [s.video, s.meta]).find((m) =>
      m.offset + m.size > bytes.length
    );
    throw new ShardError(
      shard.tar,
      cut?.name ?? "",
      `truncated: the shard has ${bytes.length} of ${shard.index.size} bytes` +
        (cut ? `; the member needs bytes ${cut.offset}–${cut.offset + cut.size}` : ""),
    );
  }
  return bytes;
}

/**
 * Every sample of the set, shard by shard, each shard in one read, in a shuffled shard order (samples keep
 * their order inside a shard); the next shard is fetched while the current one is consumed. Memory: two
 * shards at most.
 * @param set the opened shards
 * @param opts shuffle, seed, epoch, part of the order, fetching and checking ({@link StreamOptions})
 * @returns each sample with its video bytes and metadata
 * @throws {ShardError} for a truncated shard or a damaged member
 */
export async function* streamSamples(
  set: OpenedShards,
  opts: StreamOptions = {},
): AsyncGenerator<StreamedSample> {
  const order = shardOrder(set.shards.length, opts);
  const verify = opts.verify ?? true;
  let next: Promise<Uint8Array> | undefined = order.length
    ? readWholeShard(set.shards[order[0]], opts)
    : undefined;
  for (let k = 0; k < order.length; k++) {
    const shard = set.shards[order[k]];
    const bytes = await next!;
    next = k + 1 < order.length ? readWholeShard(set.shards[order[k + 1]], opts) : undefined;
    next?.catch(() => {}); // reported when awaited
    for (const sample of shard.index.samples) {
      const video = bytes.subarray(sample.video.offset, sample.video.offset + sample.video.size);
      const metaBytes = bytes.subarray(sample.meta.offset, sample.meta.offset + sample.meta.size);
      checkMember(shard.tar, sample.video, video, verify);
      checkMember(shard.tar, sample.meta, metaBytes, verify);
      let meta: unknown;
      try {
        meta = JSON.parse(new TextDecoder().decode(metaBytes));
      } catch {
        meta = null;
      }
      if (typeof meta !== "object" || meta === null || Array.isArray(meta)) {
        throw new ShardError(shard.tar, sample.meta.name, "metadata is not a JSON object");
      }
      yield { shard, sample, video, meta: meta as Record<string, unknown> };
    }
  }
}
