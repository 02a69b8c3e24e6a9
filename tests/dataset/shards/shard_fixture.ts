/**
 * A small packed dataset for shard tests: `n` one-second clips (generated with the ffmpeg CLI, sizes varied so
 * the files differ), a JSONL manifest with an extra column, packed into shards of `shardSize` bytes.
 */
import { packShards, type PackSummary } from "../../../src/prep/pack.ts";
import { generateClip } from "../../helpers/media.ts";

/** What {@link makePacked} made. */
export interface Packed {
  dir: string;
  manifest: string;
  /** Absolute path of each video, in manifest order. */
  videos: string[];
  out: string;
  summary: PackSummary;
}

/** Builds the dataset under `dir` and packs it into `dir/shards`. */
export async function makePacked(dir: string, n = 6, shardSize = 64 * 1024): Promise<Packed> {
  await Deno.mkdir(`${dir}/data/walk`, { recursive: true });
  await Deno.mkdir(`${dir}/data/run`, { recursive: true });
  const lines: string[] = [];
  const videos: string[] = [];
  for (let i = 0; i < n; i++) {
    const clip = await generateClip({ width: 160 + 32 * i, height: 96, fps: 15, durationSec: 1, gop: 5 });
    const rel = `${i % 2 ? "run" : "walk"}/v.${i}.mp4`; // a dot in the stem: keys must not keep it
    await Deno.copyFile(clip, `${dir}/data/${rel}`);
    videos.push(`${dir}/data/${rel}`);
    lines.push(JSON.stringify({ path: rel, label: i % 2 ? "run" : "walk", caption: `clip ${i}` }));
  }
  const manifest = `${dir}/data/manifest.jsonl`;
  await Deno.writeTextFile(manifest, lines.join("\n") + "\n");
  const out = `${dir}/shards`;
  const summary = await packShards({ manifest, outDir: out, shardSize });
  return { dir, manifest, videos, out, summary };
}
