/**
 * `packShards`: a dataset packed into WebDataset-style tar shards with sidecar indexes.
 * @module
 */

import { openDataset } from "../dataset/dataset.ts";
import { fetchBytes } from "../dataset/fetch.ts";
import { indexDataset } from "../dataset/video_index.ts";
import { DatasetError, InvalidArgumentError } from "../errors.ts";
import {
  indexNameOf,
  type MemberLocation,
  sealJson,
  sha256Hex,
  SHARD_FORMAT_VERSION,
  SHARD_INDEX_FORMAT,
  SHARD_SET_FORMAT,
  type ShardEntry,
  type ShardIndex,
  type ShardSample,
} from "../dataset/shards/index_format.ts";
import { BLOCK, END_OF_ARCHIVE, memberHeader, padding } from "../dataset/shards/tar.ts";
import { type SourceRow, sourceRows } from "./manifest.ts";
import { type ProgressSnapshot, ProgressTracker } from "./progress.ts";

/** Options of {@link packShards}. */
export interface PackOptions {
  /** Dataset to pack: a manifest (CSV/JSONL, path or URL) or a directory tree. */
  manifest: string;
  /** Where the shards, their indexes and `shards.json` go. */
  outDir: string;
  /** Largest shard in bytes (default 1 GiB). */
  shardSize?: number;
  /** Shard file name prefix (default "shard": `shard-000000.tar`, ...). */
  prefix?: string;
  /** Called after each video. */
  onProgress?: (
    s: ProgressSnapshot,
    last: { path: string; status: "done" | "failed"; error?: string },
  ) => void;
}

/** What {@link packShards} wrote. */
export interface PackSummary {
  /** Counts, bytes and speed of the run. */
  progress: ProgressSnapshot;
  /** The shard set file. */
  setFile: string;
  /** The shards written, in order. */
  shards: ShardEntry[];
  /** Videos left out, with the reason. */
  failures: { path: string; error: string }[];
}

/** The shard set file name in a packed directory. */
export const SHARD_SET_FILE = "shards.json";

/**
 * Parses a byte size: `1GiB`, `500MB`, `64M`, `1048576` (K/M/G/T: binary with or without `i`, decimal with `B`).
 * @param s the size as written
 * @returns bytes
 * @throws {InvalidArgumentError} for a size it cannot read
 */
export function parseByteSize(s: string): number {
  const m = s.trim().match(/^(\d+(?:\.\d+)?)\s*([kmgt]?)(i?)(b?)$/i);
  if (!m) throw new InvalidArgumentError(`not a byte size: "${s}" (e.g. 1GiB, 500MB, 64M)`);
  const power = " kmgt".indexOf(m[2].toLowerCase() || " ");
  const decimal = m[3] === "" && m[4] !== "" && power > 0;
  const n = Math.floor(Number(m[1]) * (decimal ? 1000 : 1024) ** power);
  if (!(n > 0)) throw new InvalidArgumentError(`byte size must be positive: "${s}"`);
  return n;
}

/**
 * The WebDataset key of a relative path: the path without its extension, dots in the file name turned into
 * underscores (WebDataset splits a member name into key and extension at the first dot of the file name).
 */
export function sampleKey(relative: string): { key: string; ext: string } {
  const slash = relative.lastIndexOf("/");
  const base = relative.slice(slash + 1);
  const dot = base.lastIndexOf(".");
  const stem = dot > 0 ? base.slice(0, dot) : base;
  const ext = dot > 0 ? base.slice(dot + 1).toLowerCase() : "mp4";
  return { key: `${relative.slice(0, slash + 1)}${stem.replaceAll(".", "_")}`, ext };
}

/** One shard being written. */
class ShardWriter {
  readonly name: string;
  readonly #final: string;
  readonly #tmp: string;
  readonly #file: Deno.FsFile;
  size = 0;
  readonly samples: ShardSample[] = [];

  private constructor(dir: string, name: string, file: Deno.FsFile, tmp: string) {
    this.name = name;
    this.#final = `${dir}/${name}`;
    this.#tmp = tmp;
    this.#file = file;
  }

  static async create(dir: string, name: string): Promise<ShardWriter> {
    const tmp = `${dir}/.${name}.partial`;
    return new ShardWriter(
      dir,
      name,
      await Deno.open(tmp, { write: true, create: true, truncate: true }),
      tmp,
    );
  }

  async #write(bytes: Uint8Array): Promise<void> {
    let n = 0;
    while (n < bytes.length) n += await this.#file.write(bytes.subarray(n));
    this.size += bytes.length;
  }

  /** Appends one member; returns where it lies. */
  async add(name: string, data: Uint8Array): Promise<MemberLocation> {
    const header = this.size;
    const h = memberHeader(name, data.length);
    await this.#write(h);
    const offset = this.size;
    await this.#write(data);
    await this.#write(new Uint8Array(padding(data.length)));
    return { name, header, offset, size: data.length, sha256: sha256Hex(data) };
  }

  /** Ends the archive, then renames it into place and writes its index. */
  async finish(classes: string[]): Promise<ShardEntry> {
    await this.#write(END_OF_ARCHIVE);
    await this.#file.syncData();
    this.#file.close();
    await Deno.rename(this.#tmp, this.#final);
    const index: ShardIndex = {
      format: SHARD_INDEX_FORMAT,
      version: SHARD_FORMAT_VERSION,
      shard: this.name,
      size: this.size,
      classes,
      samples: this.samples,
    };
    const text = sealJson(index);
    const indexName = indexNameOf(this.name);
    const dir = this.#final.slice(0, this.#final.lastIndexOf("/"));
    await writeAtomic(`${dir}/${indexName}`, text);
    return {
      tar: this.name,
      index: indexName,
      size: this.size,
      samples: this.samples.length,
      indexSha256: sha256Hex(new TextEncoder().encode(text)),
    };
  }

  async abandon(): Promise<void> {
    try {
      this.#file.close();
    } catch { /* already closed */ }
    await Deno.remove(this.#tmp).catch(() => {});
  }
}

async function writeAtomic(path: string, text: string): Promise<void> {
  const slash = path.lastIndexOf("/");
  const tmp = `${path.slice(0, slash + 1)}.${path.slice(slash + 1)}.partial`;
  await Deno.writeTextFile(tmp, text);
  await Deno.rename(tmp, path);
}

/** The shards of one run: samples go into the current shard until the next would overflow it, then a new one. */
class ShardSet {
  /** The shards finished, in order. */
  readonly shards: ShardEntry[] = [];
  readonly #dir: string;
  readonly #prefix: string;
  readonly #shardSize: number;
  readonly #classes: string[];
  #writer: ShardWriter | undefined;

  constructor(dir: string, prefix: string, shardSize: number, classes: string[]) {
    this.#dir = dir;
    this.#prefix = prefix;
    this.#shardSize = shardSize;
    this.#classes = classes;
  }

  /** Appends a sample's video and metadata members, to a new shard when the current one has no room. */
  async add(
    key: string,
    ext: string,
    video: Uint8Array,
    meta: Uint8Array,
    place: Pick<ShardSample, "label" | "start" | "end" | "keyframes" | "frameRate">,
  ): Promise<void> {
    const need = 2 * BLOCK + memberHeader(`${key}.${ext}`, video.length).length + video.length +
      padding(video.length) + memberHeader(`${key}.json`, meta.length).length + meta.length +
      padding(meta.length);
    if (this.#writer && this.#writer.samples.length > 0 && this.#writer.size + need > this.#shardSize) {
      this.shards.push(await this.#writer.finish(this.#classes));
      this.#writer = undefined;
    }
    this.#writer ??= await ShardWriter.create(
      this.#dir,
      `${this.#prefix}-${String(this.shards.length).padStart(6, "0")}.tar`,
    );
    const videoLoc = await this.#writer.add(`${key}.${ext}`, video);
    const metaLoc = await this.#writer.add(`${key}.json`, meta);
    this.#writer.samples.push({
      key,
      video: videoLoc,
      meta: metaLoc,
      label: place.label,
      start: place.start,
      end: place.end,
      keyframes: place.keyframes,
      frameRate: place.frameRate,
    });
  }

  /** Finishes the current shard, if any. */
  async finish(): Promise<void> {
    if (this.#writer) this.shards.push(await this.#writer.finish(this.#classes));
    this.#writer = undefined;
  }

  /** Removes the unfinished shard, if any (after a failure). */
  async abandon(): Promise<void> {
    await this.#writer?.abandon();
  }
}

/** The sample's key, made unique among `keys` (`_1`, `_2`, ... appended) and added to them, and its extension. */
function uniqueKey(relative: string, keys: Set<string>): { key: string; ext: string } {
  let { key, ext } = sampleKey(relative);
  for (let n = 1; keys.has(key); n++) key = `${sampleKey(relative).key}_${n}`;
  keys.add(key);
  return { key, ext };
}

/** The `<key>.json` member of a sample: its path, label, class name and the manifest's extra columns. */
function sampleMeta(row: SourceRow, label: number, classes: readonly string[]): Uint8Array {
  return new TextEncoder().encode(
    JSON.stringify({
      path: row.relative,
      label,
      class: classes[label],
      ...row.extra,
    }),
  );
}

/**
 * Packs the videos of a dataset (a prepared JSONL manifest, any manifest, or a directory tree)
 * into POSIX tar shards in WebDataset's layout: per sample `<key>.<ext>` (the video's bytes, unchanged) then
 * `<key>.json` (`path`, `label`, `class` and every extra column of the manifest), shards filled up to
 * `shardSize` bytes in manifest order (a video bigger than that gets a shard of its own). Beside each shard
 * goes its sidecar index (`<shard>.idx.json`, see `src/dataset/shards/index_format.ts`), and a `shards.json` lists the
 * set; `openShards` opens the output directory (or that file's URL) as a dataset.
 *
 * Labels and time ranges come from the loader's own dataset and index code (`openDataset`, `indexDataset` with
 * keyframes), so the loader over the shards plans exactly what it plans over the files. Videos that cannot
 * be read or probed are listed and left out. Shards are written under hidden temporary names and renamed when
 * complete.
 * @param opts the manifest or tree to pack, the output directory, the shard size ({@link PackOptions})
 * @returns the shards written and the videos left out, with why
 */
export async function packShards(opts: PackOptions): Promise<PackSummary> {
  const shardSize = opts.shardSize ?? 1024 ** 3;
  if (!(shardSize >= 4 * BLOCK)) {
    throw new InvalidArgumentError(`shard size must be at least ${4 * BLOCK} bytes`);
  }
  const prefix = opts.prefix ?? "shard";
  const outDir = opts.outDir.replace(/\/+$/, "") || "/";
  const ds = await openDataset(opts.manifest);
  const rows = sourceRows(ds, opts.manifest);
  await Deno.mkdir(outDir, { recursive: true });
  const tracker = new ProgressTracker("pack", rows.length);
  const failures: { path: string; error: string }[] = [];
  const fail = (path: string, error: string) => {
    failures.push({ path, error });
    tracker.add({ status: "failed", bytesIn: 0, bytesOut: 0 });
    opts.onProgress?.(tracker.snapshot(), { path, status: "failed", error });
  };
  const index = await indexDataset(ds, { keyframes: true });
  const keys = new Set<string>();
  const set = new ShardSet(outDir, prefix, shardSize, ds.classes);
  try {
    for (const [i, row] of rows.entries()) {
      const indexed = index.videos[i];
      if (indexed === null) {
        fail(row.source, index.failures.find((f) => f.path === row.source)?.error ?? "could not be indexed");
        continue;
      }
      let video: Uint8Array;
      try {
        video = await fetchBytes(row.source);
      } catch (e) {
        fail(row.source, e instanceof Error ? e.message : String(e));
        continue;
      }
      const { key, ext } = uniqueKey(row.relative, keys);
      const { label } = ds.items[i];
      const meta = sampleMeta(row, label, ds.classes);
      const { start, end, frameRate } = indexed;
      await set.add(key, ext, video, meta, {
        label,
        start,
        end,
        keyframes: [...(indexed.keyframes ?? [])],
        frameRate,
      });
      tracker.add({ status: "done", bytesIn: video.length, bytesOut: video.length + meta.length });
      opts.onProgress?.(tracker.snapshot(), { path: row.source, status: "done" });
    }
    await set.finish();
  } finally {
    await set.abandon();
  }
  const shards = set.shards;
  if (shards.length === 0) throw new DatasetError(`${opts.manifest}: pack: no video could be packed`);
  const setFile = `${outDir}/${SHARD_SET_FILE}`;
  await writeAtomic(
    setFile,
    sealJson({ format: SHARD_SET_FORMAT, version: SHARD_FORMAT_VERSION, classes: ds.classes, shards }),
  );
  return { progress: tracker.snapshot(), setFile, shards, failures };
}
