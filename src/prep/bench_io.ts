/**
 * `benchIo`: how fast a dataset's bytes come off the storage, cold and warm.
 * @module
 */

import { openDataset } from "../dataset/dataset.ts";
import { fetchBytes, isUrl } from "../dataset/fetch.ts";
import { hashSeed, mulberry32, shuffleInPlace } from "../dataset/random.ts";
import { isShardSource, openShards, wholeShardFetch } from "../dataset/shards/reader.ts";
import { dropFromPageCache } from "./page_cache.ts";

/** Options of {@link benchIo}. */
export interface BenchIoOptions {
  /** Also measure with the page cache dropped before the pass (default false: warm only). */
  cold?: boolean;
  /** Seed of the shuffled read order (default 0). */
  seed?: number;
  /** Reads in flight (default 1: one stream of reads, as one loader fetch lane). */
  concurrency?: number;
  /** Passes per measurement; the one with the median time is reported (default 1). Shared machines are noisy. */
  repeat?: number;
}

/** One measured pass. */
export interface IoPass {
  /** The dataset as given. */
  dataset: string;
  /** "files" or "shards". */
  layout: "files" | "shards";
  /** "whole-file", "sequential" or "indexed". */
  access: "whole-file" | "sequential" | "indexed";
  /** Page cache dropped before the pass, or filled by the pass before. */
  cache: "cold" | "warm";
  /** Files opened (videos, shards, or one per positioned read). */
  files: number;
  /** Videos delivered. */
  clips: number;
  /** Bytes read. */
  bytes: number;
  /** Wall time of the pass. */
  seconds: number;
  /** Megabytes (10^6) per second. */
  mbPerSec: number;
  /** Files opened per second. */
  filesPerSec: number;
  /** Videos delivered per second. */
  clipsPerSec: number;
}

interface Plan {
  dataset: string;
  layout: IoPass["layout"];
  access: IoPass["access"];
  /** Local files to drop from the cache before a cold pass. */
  files: string[];
  clips: number;
  /** Each read: source, optional byte range, and its size when known (for the fetch's time limits). */
  reads: { source: string; range?: [number, number]; size?: number }[];
  filesOpened: number;
}

async function plans(source: string, seed: number): Promise<Plan[]> {
  const rand = () => mulberry32(hashSeed(seed, 0x10));
  if (await isShardSource(source)) {
    const set = await openShards(source);
    const tars = set.shards.map((s) => s.tar);
    const local = tars.filter((t) => !isUrl(t));
    const samples = set.shards.flatMap((s) => s.index.samples.map((x) => ({ tar: s.tar, m: x.video })));
    const clips = samples.length;
    return [
      {
        dataset: source,
        layout: "shards",
        access: "sequential",
        files: local,
        clips,
        reads: shuffleInPlace(set.shards.map((s) => ({ source: s.tar, size: s.index.size })), rand()),
        filesOpened: tars.length,
      },
      {
        dataset: source,
        layout: "shards",
        access: "indexed",
        files: local,
        clips,
        reads: shuffleInPlace(
          samples.map(({ tar, m }) => ({
            source: tar,
            range: [m.offset, m.offset + m.size] as [number, number],
          })),
          rand(),
        ),
        filesOpened: samples.length,
      },
    ];
  }
  const ds = await openDataset(source);
  const paths = ds.items.map((i) => i.path);
  const unique = [...new Set(paths)];
  return [{
    dataset: source,
    layout: "files",
    access: "whole-file",
    files: unique.filter((p) => !isUrl(p)),
    clips: paths.length,
    reads: shuffleInPlace(unique.map((p) => ({ source: p })), rand()),
    filesOpened: unique.length,
  }];
}

async function run(plan: Plan, cache: IoPass["cache"], concurrency: number): Promise<IoPass> {
  if (cache === "cold") dropFromPageCache(plan.files);
  let bytes = 0, next = 0;
  const t0 = performance.now();
  const lane = async () => {
    while (next < plan.reads.length) {
      const r = plan.reads[next++];
      const opts = r.range ? { range: r.range } : r.size !== undefined ? wholeShardFetch(r.size) : {};
      bytes += (await fetchBytes(r.source, opts)).length;
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, concurrency) }, lane));
  const seconds = (performance.now() - t0) / 1000;
  const per = (x: number) => seconds > 0 ? Math.round((x / seconds) * 100) / 100 : 0;
  return {
    dataset: plan.dataset,
    layout: plan.layout,
    access: plan.access,
    cache,
    files: plan.filesOpened,
    clips: plan.clips,
    bytes,
    seconds: Math.round(seconds * 1e4) / 1e4,
    mbPerSec: per(bytes / 1e6),
    filesPerSec: per(plan.filesOpened),
    clipsPerSec: per(plan.clips),
  };
}

/**
 * How fast a dataset's bytes come off the storage, cold (page cache dropped for the dataset's files
 * first, with `posix_fadvise(DONTNEED)`: what a dataset bigger than RAM sees) and warm (read again at once),
 * through the same calls the loader makes (`fetchBytes`, whole or by range).
 *
 * Per dataset and access pattern it reports bytes, seconds, MB/s, files/s (files or shards opened) and
 * clips/s (videos delivered):
 * - one file per video (a directory tree or manifest): each video read whole, in a seeded shuffled order
 *   (the loader's order is shuffled too);
 * - shards (a packed directory, `shards.json`, an index or a tar): `sequential` reads each shard whole, shards
 *   in a shuffled order; `indexed` reads each video with one positioned read, in a shuffled order.
 * @param sources the datasets: directories, manifests, or shard sets
 * @param opts cold or warm only, the read order's seed, reads in flight, passes per measurement
 * @returns one pass per dataset, access pattern and cache state
 * @throws {SluiceError} when `cold` is asked and the page cache cannot be dropped
 */
export async function benchIo(sources: string[], opts: BenchIoOptions = {}): Promise<IoPass[]> {
  const out: IoPass[] = [];
  const repeat = Math.max(1, opts.repeat ?? 1), concurrency = opts.concurrency ?? 1;
  const median = async (plan: Plan, cache: IoPass["cache"]) => {
    const passes: IoPass[] = [];
    for (let i = 0; i < repeat; i++) passes.push(await run(plan, cache, concurrency));
    return passes.sort((a, b) => a.seconds - b.seconds)[Math.floor((repeat - 1) / 2)];
  };
  for (const source of sources) {
    for (const plan of await plans(source, opts.seed ?? 0)) {
      if (opts.cold) out.push(await median(plan, "cold"));
      else await run(plan, "warm", concurrency); // fill the cache: the measured passes are warm
      out.push(await median(plan, "warm"));
    }
  }
  return out;
}
