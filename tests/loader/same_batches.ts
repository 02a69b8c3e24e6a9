/**
 * Running a loader for whole epochs and comparing batches clip by clip and byte for byte, and the videos to do it
 * on; shared by the loader tests.
 */
import assert from "node:assert/strict";
import { type LoaderOptions, videoClassificationLoader } from "../../src/loader/loader.ts";
import type { Batch } from "../../src/loader/batch/collate.ts";
import type { ClipCounts } from "../../src/loader/batch/clip_stats.ts";
import { assertAccounted } from "./accounting.ts";
import { sameBytes } from "../helpers/decode_oracles.ts";
import { generateClip } from "../helpers/media.ts";
import type { ClipMeta } from "../../src/loader/clip/life.ts";

/** Videos of 6 s, 25 fps, B-pyramid, keyframes at 0 and 4 s, one per lavfi source, copied to `dir` as v{i}.mp4. */
export async function gopVideos(dir: string, sources: string[]): Promise<string[]> {
  const out: string[] = [];
  for (const [i, source] of sources.entries()) {
    const path = await generateClip({
      width: 96,
      height: 64,
      fps: 25,
      durationSec: 6,
      gop: 100,
      bframes: 3,
      source,
      extraArgs: ["-x264-params", "b-pyramid=normal"],
    });
    out.push(`${dir}/v${i}.mp4`);
    await Deno.copyFile(path, out[i]);
  }
  return out;
}

/** Runs a loader for `epochs` whole epochs: its batches and clip counters, the accounting asserted. */
export async function runEpochs(
  opts: LoaderOptions,
  epochs = 1,
): Promise<{ batches: Batch[]; total: ClipCounts }> {
  await using loader = await videoClassificationLoader(opts);
  const batches: Batch[] = [];
  for (let e = 0; e < epochs; e++) for await (const b of loader) batches.push(b);
  const clips = loader.stats().clips;
  assertAccounted(clips, batches, loader.clipsPerEpoch, epochs, false);
  return { batches, total: clips.total };
}

/** A clip's metadata without the decode counts (which decoding less changes by design). */
function plain(c: ClipMeta) {
  const { decodedFrames: _d, skippedFrames: _s, passClips: _p, ...rest } = c;
  return rest;
}

/** Asserts `a` and `b` hold the same clips (decode counts aside) and the same pixels, batch by batch. */
export function assertSameBatches(a: Batch[], b: Batch[], what: string): void {
  assert.equal(a.length, b.length, `${what}: batches`);
  for (const [i, x] of a.entries()) {
    assert.deepEqual(x.clips.map(plain), b[i].clips.map(plain), `${what}: batch ${i} clips`);
    assert.ok(sameBytes(x.data as Uint8Array, b[i].data as Uint8Array), `${what}: batch ${i} pixels`);
  }
}
