/**
 * The workload of `bench/node_mode.py`: the `sampler` and `rows` shapes of `bench/compare.ts` (`workload_sets.ts`)
 * over one video set, as `sluice.Loader` keywords: 16 frames → 112×112, batches of 4, and for `sampler` 4 clips
 * per video (a video's clips dealt to different ranks). Makes the videos once (under the workload's cache) and
 * prints one JSON object: `{set, shapes: {sampler: {...keywords}, rows: {...keywords}}}`.
 *
 * Run: `deno run -A bench/node_mode_set.ts [--set gop30] [--videos 48] [--seed 1]`.
 * @module
 */

import { parseArgs } from "node:util";
import { DEFAULT_DIR } from "./clip_workload.ts";
import { ensureSet, makeClipList, parseVariant, type ShapeId } from "./workload_sets.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    set: { type: "string", default: "gop30" },
    videos: { type: "string", default: "48" },
    seed: { type: "string", default: "1" },
    dir: { type: "string", default: DEFAULT_DIR },
  },
});

/** Loader options (TypeScript's spelling) as `sluice.Loader` keywords (snake_case; groups stay dicts). */
function snake(v: unknown): unknown {
  if (v === null || typeof v !== "object" || Array.isArray(v)) return v;
  return Object.fromEntries(
    Object.entries(v).map(([k, x]) => [k.replace(/[A-Z]/g, (c) => "_" + c.toLowerCase()), snake(x)]),
  );
}

const seed = Number(values.seed);
const shapes: Record<string, unknown> = {};
for (const shape of ["sampler", "rows"] as ShapeId[]) {
  const variant = parseVariant(`${shape}-${values.set}`);
  const videos = await ensureSet(values.dir!, variant.set, Number(values.videos));
  const work = `${values.dir}/node_mode/${variant.id}-${videos.length}`;
  await Deno.mkdir(work, { recursive: true });
  const list = await makeClipList(variant, videos, work, seed, 1);
  const opts = list.sluice as Record<string, unknown> & { sampler: Record<string, unknown> };
  opts.batchSize = 4;
  if (shape === "sampler") opts.sampler = { ...opts.sampler, clipsPerVideo: 4 };
  shapes[shape] = snake(opts);
}
console.log(JSON.stringify({ set: values.set, videos: Number(values.videos), shapes }));
