/** A small dataset whose manifest has clips that fail, shared by the loader tests that replace them. @module */
import { makeSyntheticDataset } from "../helpers/synthetic.ts";

/** The dataset's directory, its manifest, and its good files (sorted). */
export interface MixedDataset {
  dir: string;
  manifest: string;
  files: string[];
}

/**
 * 5 synthetic videos (2 s, 25 fps, 96×64) in 2 classes under a new temp dir (removed at exit), and `mixed.csv`
 * listing them (labels from their folders) plus a missing and a truncated file, whose clips fail.
 */
export async function mixedDataset(prefix: string): Promise<MixedDataset> {
  const dir = await Deno.makeTempDir({ prefix });
  makeSyntheticDataset(dir, { videos: 5, classes: 2, durationSec: 2, fps: 25, width: 96, height: 64 });
  globalThis.addEventListener("unload", () => Deno.removeSync(dir, { recursive: true }));
  const files = [0, 1].flatMap((c) =>
    [...Deno.readDirSync(`${dir}/class_0${c}`)].map((e) => `${dir}/class_0${c}/${e.name}`)
  ).sort();
  const full = Deno.readFileSync(files[0]);
  Deno.writeFileSync(`${dir}/trunc.mp4`, full.subarray(0, full.length >> 2));
  const manifest = `${dir}/mixed.csv`;
  Deno.writeTextFileSync(manifest, mixedRows(dir, files, () => false));
  return { dir, manifest, files };
}

/** The manifest's rows; `flip(i)` flips the label of good file `i`. */
export function mixedRows(dir: string, files: string[], flip: (i: number) => boolean): string {
  return [
    "path,label,start,end",
    ...files.map((f, i) => `${f},${(f.includes("class_01") ? 1 : 0) ^ (flip(i) ? 1 : 0)},,`),
    `${dir}/missing.mp4,0,0,2`,
    `${dir}/trunc.mp4,1,0,2`,
  ].join("\n");
}
