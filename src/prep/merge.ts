/**
 * `mergeManifests`: the prepared manifests of a transcode's shards, joined into one.
 * @module
 */

import { DatasetError } from "../errors.ts";
import { readJsonl, writeJsonl } from "./manifest.ts";

/** Options of {@link mergeManifests}. */
export interface MergeOptions {
  /** Merge even when some shards' manifests are absent (default false). */
  allowMissing?: boolean;
}

/** What {@link mergeManifests} did. */
export interface MergeReport {
  /** The merged manifest written. */
  output: string;
  /** Rows in it. */
  rows: number;
  /** The shard manifests read. */
  inputs: string[];
  /** The shard count. */
  shards: number;
  /** Shards absent (only with `allowMissing`). */
  missing: number[];
}

const SHARD_NAME = /manifest\.shard-(\d+)-of-(\d+)\.jsonl$/;

/**
 * The shard manifests to merge: each argument is a manifest file, or a directory whose
 * `manifest.shard-I-of-N.jsonl` files are taken.
 * @param args the files and directories
 * @returns the manifest files, sorted
 */
export async function findShardManifests(args: string[]): Promise<string[]> {
  const out: string[] = [];
  for (const a of args) {
    let isDir = false;
    try {
      isDir = (await Deno.stat(a)).isDirectory;
    } catch (e) {
      throw new DatasetError(`${a}: manifest merge: ${e instanceof Error ? e.message : e}`, { cause: e });
    }
    if (!isDir) {
      out.push(a);
      continue;
    }
    const found: string[] = [];
    for await (const e of Deno.readDir(a)) {
      if (e.isFile && SHARD_NAME.test(e.name)) found.push(`${a}/${e.name}`);
    }
    if (found.length === 0) {
      throw new DatasetError(`${a}: manifest merge: no manifest.shard-I-of-N.jsonl files`);
    }
    out.push(...found.sort());
  }
  return out;
}

/**
 * Joins the prepared manifests that the `N` shards of a transcode wrote
 * (`manifest.shard-I-of-N.jsonl`) into one, in input order (`source_index`). Refuses to guess: shards of
 * different counts, a missing shard (unless allowed), two rows for one input or one output are errors.
 * @param inputs the shard manifests ({@link findShardManifests} finds them)
 * @param output the merged manifest to write
 * @param opts whether a missing shard is allowed
 * @returns what was written, from which inputs
 * @throws {DatasetError} for shards of different counts, a missing shard, or two rows for one input or output
 */
export async function mergeManifests(
  inputs: string[],
  output: string,
  opts: MergeOptions = {},
): Promise<MergeReport> {
  if (inputs.length === 0) throw new DatasetError("manifest merge: no input manifests");
  let count: number | undefined;
  const seen = new Set<number>();
  for (const path of inputs) {
    const m = path.match(SHARD_NAME);
    if (!m) continue; // a plain manifest: merged as it is
    const [i, n] = [Number(m[1]), Number(m[2])];
    if (count !== undefined && n !== count) {
      throw new DatasetError(
        `${path}: manifest merge: shard of ${n}, but another input is a shard of ${count}`,
      );
    }
    count = n;
    if (seen.has(i)) throw new DatasetError(`${path}: manifest merge: shard ${i} of ${n} given twice`);
    seen.add(i);
  }
  const missing = count === undefined
    ? []
    : Array.from({ length: count }, (_, i) => i).filter((i) => !seen.has(i));
  if (missing.length > 0 && !opts.allowMissing) {
    throw new DatasetError(
      `manifest merge: shard(s) ${
        missing.join(", ")
      } of ${count} missing (run them, or allow missing shards)`,
    );
  }
  const rows: Record<string, unknown>[] = [];
  const byIndex = new Map<number, string>();
  const byPath = new Map<string, string>();
  for (const path of inputs) {
    for (const [line, row] of (await readJsonl(path)).entries()) {
      const where = `${path}:${line + 1}`;
      if (typeof row.path !== "string" || row.label === undefined) {
        throw new DatasetError(`${where}: manifest merge: a row needs "path" and "label"`);
      }
      const idx = row.source_index;
      if (typeof idx !== "number" || !Number.isInteger(idx) || idx < 0) {
        throw new DatasetError(`${where}: manifest merge: "source_index" must be a non-negative integer`);
      }
      const dupI = byIndex.get(idx);
      if (dupI !== undefined) {
        throw new DatasetError(`${where}: manifest merge: input ${idx} is also in ${dupI}`);
      }
      const dupP = byPath.get(row.path);
      if (dupP !== undefined) {
        throw new DatasetError(`${where}: manifest merge: ${row.path} is also in ${dupP}`);
      }
      byIndex.set(idx, where);
      byPath.set(row.path, where);
      rows.push(row);
    }
  }
  rows.sort((a, b) => (a.source_index as number) - (b.source_index as number));
  await writeJsonl(output, rows);
  return { output, rows: rows.length, inputs, shards: count ?? inputs.length, missing };
}
