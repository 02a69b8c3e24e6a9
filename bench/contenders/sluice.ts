/**
 * Contender: sluice's `videoClassificationLoader` (see `harness.ts` for the contract). The loader is configured
 * with the clip list's `sluice` options (the seeded sampler that planned exactly these clips) merged with
 * `--config JSON` (a named configuration's own options, e.g. `{"backend":"subprocess"}`), and runs one epoch per
 * pass: epoch `p` of that sampler is pass `p` of the list. Every epoch is checked to deliver exactly the listed
 * clips (same videos, same windows); a loader that delivers others fails the run rather than being timed.
 *
 * Decode amplification: when the loader reports frames decoded per clip (`decodedFrames` in the clip metadata,
 * issue 14), `decoded` counts them; otherwise it is null.
 *
 * Run: `deno run -A bench/contenders/sluice.ts --clips FILE --mode time|verify [--out DIR] [--config JSON]`
 * @module
 */

import { type LoaderOptions, videoClassificationLoader } from "../../src/loader/loader.ts";
import { type Clip, contenderArgs } from "./harness.ts";

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
const key = (path: string, start: number) => `${path}@${start.toFixed(6)}`;
const T = list.numFrames, frameBytes = list.width * list.height * 3, clipBytes = T * frameBytes;

await using loader = await videoClassificationLoader(opts);
const passes = verify ? 1 : list.passes.length;
for (let p = 0; p < passes; p++) {
  const want = new Map<string, number>();
  list.passes[p].forEach((c: Clip, i) => want.set(key(c.path, c.start), i));
  const seen = new Set<number>();
  const frames = verify ? new Uint8Array(clipBytes * list.passes[p].length) : null;
  const pts: number[][] = new Array(list.passes[p].length);
  let emitted = 0, decoded: number | null = 0;
  console.log(JSON.stringify({ event: "start", pass: p }));
  const t0 = performance.now();
  for await (using batch of loader) {
    const [b] = batch.shape;
    if (batch.shape.join() !== [b, T, list.height, list.width, 3].join()) {
      throw new Error(`batch shape ${batch.shape} is not [B, ${T}, ${list.height}, ${list.width}, 3]`);
    }
    for (const [j, m] of batch.clips.entries()) {
      const i = want.get(key(m.path, m.start));
      if (i === undefined || seen.has(i)) {
        throw new Error(`pass ${p}: the loader delivered a clip not in the list: ${m.path} @ ${m.start}`);
      }
      seen.add(i);
      emitted += T;
      const d = (m as { decodedFrames?: unknown }).decodedFrames;
      decoded = typeof d === "number" && decoded !== null ? decoded + d : null;
      if (frames) {
        frames.set(batch.data.subarray(j * clipBytes, (j + 1) * clipBytes), i * clipBytes);
        pts[i] = [...m.pts];
      }
    }
  }
  const wall = (performance.now() - t0) / 1000;
  if (seen.size !== list.passes[p].length) {
    throw new Error(`pass ${p}: ${list.passes[p].length - seen.size} listed clips were not delivered`);
  }
  console.log(JSON.stringify({ event: "end", pass: p, wall, clips: seen.size, frames: emitted, decoded }));
  if (frames) {
    Deno.writeFileSync(`${out}/frames.bin`, frames);
    Deno.writeTextFileSync(`${out}/pts.json`, JSON.stringify(pts));
  }
}
