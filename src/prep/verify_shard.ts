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
import { indexNameOf, parseShardIndex, sha256Hex, type ShardIndex } from "../dataset/shards/index_format.ts";
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
  let index: ShardIndex;
  try {
    index = parseShardIndex(new TextDecoder().decode(await fetchBytes(indexPath)), indexPath);
  } catch (e) {
    problems.push(
      e instanceof ShardError ? e : new ShardError(indexPath, "", e instanceof Error ? e.message : String(e)),
    );
    return report(null);
  }
  let src: Source;
  try {
    src = isUrl(shard) ? memorySource(await fetchBytes(shard)) : fileSource(shard);
  } catch (e) {
    problems.push(
      new ShardError(shard, "", `cannot read: ${e instanceof Error ? e.message : e}`, { cause: e }),
    );
    return report(index);
  }
  using source = src;
  const listed = index.samples.flatMap((s) => [s.video, s.meta]).sort((a, b) => a.header - b.header);
  if (source.size < index.size) {
    const cut = listed.find((m) => m.offset + m.size > source.size);
    problems.push(
      new ShardError(
        shard,
        cut?.name ?? "",
        `truncated: the shard has ${source.size} of the ${index.size} bytes its index lists` +
          (cut ? `; the member needs bytes ${cut.offset}–${cut.offset + cut.size}` : ""),
      ),
    );
  } else if (source.size > index.size) {
    problems.push(
      new ShardError(shard, "", `the shard has ${source.size - index.size} bytes more than its index lists`),
    );
  }
  const walked: TarEntry[] = [];
  try {
    walkTar(source, shard, walked);
  } catch (e) {
    // A cut already reported against the index needs no second report from the walk.
    if (!(source.size < index.size && e instanceof ShardError && e.message.includes("truncated"))) {
      problems.push(e instanceof ShardError ? e : new ShardError(shard, "", String(e)));
    }
  }
  const byHeader = new Map(walked.map((w) => [w.header, w]));
  for (const w of walked) {
    if (!listed.some((m) => m.header === w.header)) {
      problems.push(new ShardError(shard, w.name, `is in the tar at byte ${w.header} but not in the index`));
    }
  }
  let verified = 0;
  for (const m of listed) {
    if (m.offset + m.size > source.size) continue; // reported as truncation above
    const w = byHeader.get(m.header);
    if (w === undefined) {
      problems.push(
        new ShardError(shard, m.name, `no tar header at byte ${m.header}, where the index puts it`),
      );
      continue;
    }
    if (w.name !== m.name || w.offset !== m.offset || w.size !== m.size) {
      problems.push(
        new ShardError(
          shard,
          m.name,
          `the tar says ${w.name} at ${w.offset} (${w.size} bytes), the index ${m.name} at ${m.offset} (${m.size} bytes)`,
        ),
      );
      continue;
    }
    if (sha256Hex(source.read(m.offset, m.size)) !== m.sha256) {
      problems.push(new ShardError(shard, m.name, "checksum mismatch: the member's bytes are damaged"));
      continue;
    }
    verified++;
  }
  return report(index, verified);
}
