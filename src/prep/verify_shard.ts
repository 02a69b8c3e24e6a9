/**
 * `verifyShard`: checks a tar shard against its sidecar index. The index must be intact (its own checksum, its
 * fields); the tar's headers are walked from the first to the end-of-archive blocks (each header's checksum
 * verified) and must list exactly the members the index lists, at the same offsets and sizes; every member's
 * data must match its SHA-256. A truncated shard is reported naming the member it cuts. Local shards are
 * read member by member (memory bounded by the largest member); a URL is fetched whole.
 * @module
 */

import { fetchBytes, isUrl } from "../dataset/fetch.ts";
import { ShardError } from "../errors.ts";
import {
  indexNameOf,
  type MemberLocation,
  parseShardIndex,
  sha256Hex,
  type ShardIndex,
} from "../dataset/shards/index_format.ts";
import { type TarEntry, type TarSource, walkTar } from "../dataset/shards/tar.ts";

/** What {@link verifyShard} found. */
export interface VerifyReport {
  /** The shard checked. */
  shard: string;
  /** The index it was checked against. */
  index: string;
  /** Samples the index lists. */
  samples: number;
  /** Bytes the index lists. */
  bytes: number;
  /** Members whose data matched their checksum. */
  verifiedMembers: number;
  /** Every problem found, each naming the shard and (where it applies) the member. */
  problems: ShardError[];
  /** True when there is no problem. */
  ok: boolean;
}

/** Positioned reads of a shard. */
interface Source extends TarSource, Disposable {}

function fileSource(path: string): Source {
  const file = Deno.openSync(path, { read: true });
  return {
    size: file.statSync().size,
    read(offset, length) {
      const buf = new Uint8Array(Math.max(0, Math.min(length, this.size - offset)));
      file.seekSync(offset, Deno.SeekMode.Start);
      let n = 0;
      while (n < buf.length) {
        const got = file.readSync(buf.subarray(n));
        if (got === null) break;
        n += got;
      }
      return buf.subarray(0, n);
    },
    [Symbol.dispose]: () => file.close(),
  };
}

function memorySource(bytes: Uint8Array): Source {
  return {
    size: bytes.length,
    read: (offset, length) => bytes.subarray(offset, Math.min(bytes.length, offset + length)),
    [Symbol.dispose]: () => {},
  };
}

/** Reads and parses the index; null, with the problem recorded, when it is unreadable or damaged. */
async function readIndex(indexPath: string, problems: ShardError[]): Promise<ShardIndex | null> {
  try {
    return parseShardIndex(new TextDecoder().decode(await fetchBytes(indexPath)), indexPath);
  } catch (e) {
    problems.push(
      e instanceof ShardError ? e : new ShardError(indexPath, "", e instanceof Error ? e.message : String(e)),
    );
    return null;
  }
}

/** Opens the shard for positioned reads; null, with the problem recorded, when it cannot be read. */
async function openShard(shard: string, problems: ShardError[]): Promise<Source | null> {
  try {
    return isUrl(shard) ? memorySource(await fetchBytes(shard)) : fileSource(shard);
  } catch (e) {
    problems.push(
      new ShardError(shard, "", `cannot read: ${e instanceof Error ? e.message : e}`, { cause: e }),
    );
    return null;
  }
}

/** One shard checked against its index: each check adds what it finds to `problems`. */
class ShardCheck {
  readonly #shard: string;
  readonly #source: Source;
  readonly #index: ShardIndex;
  readonly #problems: ShardError[];
  /** The members the index lists, in the order of their headers. */
  readonly #listed: MemberLocation[];

  constructor(shard: string, source: Source, index: ShardIndex, problems: ShardError[]) {
    this.#shard = shard;
    this.#source = source;
    this.#index = index;
    this.#problems = problems;
    this.#listed = index.samples.flatMap((s) => [s.video, s.meta]).sort((a, b) => a.header - b.header);
  }

  /** Whether the shard is shorter than its index says. */
  get #cut(): boolean {
    return this.#source.size < this.#index.size;
  }

  /** The shard's size against the index's: a truncation names the member it cuts. */
  checkSize(): void {
    const { size } = this.#source, listedSize = this.#index.size;
    if (this.#cut) {
      const cut = this.#listed.find((m) => m.offset + m.size > size);
      this.#problems.push(
        new ShardError(
          this.#shard,
          cut?.name ?? "",
          `truncated: the shard has ${size} of the ${listedSize} bytes its index lists` +
            (cut ? `; the member needs bytes ${cut.offset}–${cut.offset + cut.size}` : ""),
        ),
      );
    } else if (size > listedSize) {
      this.#problems.push(
        new ShardError(this.#shard, "", `the shard has ${size - listedSize} bytes more than its index lists`),
      );
    }
  }

  /** Walks the tar's headers (each checksum verified) and reports the members the index does not list. */
  walk(): TarEntry[] {
    const walked: TarEntry[] = [];
    try {
      walkTar(this.#source, this.#shard, walked);
    } catch (e) {
      // A cut already reported against the index needs no second report from the walk.
      if (!(this.#cut && e instanceof ShardError && e.message.includes("truncated"))) {
        this.#problems.push(e instanceof ShardError ? e : new ShardError(this.#shard, "", String(e)));
      }
    }
    for (const w of walked) {
      if (!this.#listed.some((m) => m.header === w.header)) {
        this.#problems.push(
          new ShardError(this.#shard, w.name, `is in the tar at byte ${w.header} but not in the index`),
        );
      }
    }
    return walked;
  }

  /** Checks each listed member against the tar's header and its SHA-256; returns how many passed. */
  checkMembers(walked: readonly TarEntry[]): number {
    const shard = this.#shard;
    const byHeader = new Map(walked.map((w) => [w.header, w]));
    let verified = 0;
    for (const m of this.#listed) {
      if (m.offset + m.size > this.#source.size) continue; // reported as truncation
      const w = byHeader.get(m.header);
      if (w === undefined) {
        this.#problems.push(
          new ShardError(shard, m.name, `no tar header at byte ${m.header}, where the index puts it`),
        );
        continue;
      }
      if (w.name !== m.name || w.offset !== m.offset || w.size !== m.size) {
        this.#problems.push(
          new ShardError(
            shard,
            m.name,
            `the tar says ${w.name} at ${w.offset} (${w.size} bytes), the index ${m.name} at ${m.offset} (${m.size} bytes)`,
          ),
        );
        continue;
      }
      if (sha256Hex(this.#source.read(m.offset, m.size)) !== m.sha256) {
        this.#problems.push(
          new ShardError(shard, m.name, "checksum mismatch: the member's bytes are damaged"),
        );
        continue;
      }
      verified++;
    }
    return verified;
  }
}

/**
 * Verifies `shard` against its index: the tar's headers, each member's offset, size and SHA-256, the sample's
 * pairing of video and metadata.
 * @param shard the shard's path or URL
 * @param opts the index (default: the sidecar `<shard>.idx.json`)
 * @returns the samples and bytes the index lists, the members verified, and each problem found
 */
export async function verifyShard(shard: string, opts: { index?: string } = {}): Promise<VerifyReport> {
  const indexPath = opts.index ?? indexNameOf(shard);
  const problems: ShardError[] = [];
  const report = (index: ShardIndex | null, verified = 0): VerifyReport => ({
    shard,
    index: indexPath,
    samples: index?.samples.length ?? 0,
    bytes: index?.size ?? 0,
    verifiedMembers: verified,
    problems,
    ok: problems.length === 0,
  });
  const index = await readIndex(indexPath, problems);
  if (index === null) return report(null);
  const src = await openShard(shard, problems);
  if (src === null) return report(index);
  using source = src;
  const check = new ShardCheck(shard, source, index, problems);
  check.checkSize();
  const walked = check.walk();
  return report(index, check.checkMembers(walked));
}
