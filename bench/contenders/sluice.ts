/**
 * Contender: sluice's `videoClassificationLoader` (see `harness.ts` for the contract). The loader is configured
 * with the clip list's `sluice` options merged with `--config JSON` (a named configuration's own options, e.g.
 * `{"backend":"subprocess"}`). Those options are the seeded sampler that planned exactly these clips, and epoch
 * `p` is pass `p`; a pass ends when its last clip has come. Every pass is checked to
 * deliver exactly the listed clips (same videos, same windows); a loader that delivers others fails the run
 * rather than being timed.
 *
 * Decode amplification: when the loader reports frames decoded per clip (`decodedFrames` in the clip metadata,
 * issue 14), `decoded` counts them; otherwise it is null. In time mode the run ends with the loader's verdict:
 * `{"event":"stats","bottleneck":…}` (`loader.stats().pipeline.bottleneck`).
 *
 * Run: `deno run -A bench/contenders/sluice.ts --clips FILE --mode time|verify [--out DIR] [--config JSON]`
 * @module
 */

import { type LoaderOptions, videoClassificationLoader } from "../../src/loader/loader.ts";
import type { Batch } from "../../src/loader/batch/collate.ts";
import { clipKey, contenderArgs } from "./harness.ts";

const { list, verify, out, opts: own } = contenderArgs(Deno.args, { config: "{}" });
const config = JSON.parse(own.config) as Record<string, unknown>;

/** Deep merge of plain objects (`b` wins); arrays and other values are replaced. */
function merge(a: Record<string, unknown>, b: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...a };
  for (const [k, v] of Object.entries(b)) {
    const old = out[k];
    const plain = (x: unknown): x is Record<string, unknown> =>
      x !== null && typeof x === "object" && !Array.isArray(x);
    out[k] = plain(old) && plain(v) ? merge(old, v) : v;
  }
  return out;
}

const opts = merge(list.sluice, config) as unknown as LoaderOptions;
opts.log = (line) => console.error(line);
const T = list.numFrames, frameBytes = list.width * list.height * 3, clipBytes = T * frameBytes;
const passes = verify ? 1 : list.passes.length;
/** Where each listed clip is in its pass (epoch `p` is pass `p`; a manifest's rows recur in every pass). */
const where = list.passes.map((clips) => new Map(clips.map((c, i) => [clipKey(c.path, c.start), i])));

await using loader = await videoClassificationLoader(opts);

/** The loader's batches over the passes: one epoch per pass. */
async function* batches(): AsyncGenerator<Batch> {
  for (let e = 0; e < passes; e++) {
    for await (using batch of loader) yield batch;
  }
}

const seen = list.passes.map(() => new Set<number>());
const frames = verify ? new Uint8Array(clipBytes * list.passes[0].length) : null;
const pts: number[][] = new Array(list.passes[0].length);
const counts = list.passes.map(() => ({ emitted: 0, decoded: 0 as number | null }));
let p = 0, t0 = 0;
const startPass = () => {
  console.log(JSON.stringify({ event: "start", pass: p }));
  t0 = performance.now();
};
/** Ends every pass whose clips have all come, in order. */
const endPasses = () => {
  while (p < passes && seen[p].size === list.passes[p].length) {
    const wall = (performance.now() - t0) / 1000;
    const { emitted, decoded } = counts[p];
    console.log(
      JSON.stringify({ event: "end", pass: p, wall, clips: seen[p].size, frames: emitted, decoded }),
    );
    if (++p < passes) startPass();
  }
};
startPass();
for await (const batch of batches()) {
  const [b] = batch.shape;
  if (batch.shape.join() !== [b, T, list.height, list.width, 3].join()) {
    throw new Error(`batch shape ${batch.shape} is not [B, ${T}, ${list.height}, ${list.width}, 3]`);
  }
  for (const [j, m] of batch.clips.entries()) {
    const q = m.epoch, i = where[q]?.get(clipKey(m.path, m.start));
    if (i === undefined || seen[q].has(i)) {
      throw new Error(`pass ${q}: the loader delivered a clip not in the list: ${m.path} @ ${m.start}`);
    }
    seen[q].add(i);
    const c = counts[q];
    c.emitted += T;
    const d = (m as { decodedFrames?: unknown }).decodedFrames;
    c.decoded = typeof d === "number" && c.decoded !== null ? c.decoded + d : null;
    if (frames && q === 0) {
      frames.set(batch.data.subarray(j * clipBytes, (j + 1) * clipBytes), i * clipBytes);
      pts[i] = [...m.pts];
    }
  }
  endPasses();
  if (p === passes) break;
}
if (p < passes) {
  throw new Error(`pass ${p}: ${list.passes[p].length - seen[p].size} listed clips were not delivered`);
}
if (frames) {
  Deno.writeFileSync(`${out}/frames.bin`, frames);
  Deno.writeTextFileSync(`${out}/pts.json`, JSON.stringify(pts));
} else {
  console.log(JSON.stringify({ event: "stats", bottleneck: loader.stats().pipeline.bottleneck }));
}
