/**
 * The clip workload's video sets and shapes (issues 14, 23): which videos, and which clips of them each pass
 * decodes. A *variant* is a shape over a set, named `<shape>-<set>` (`rows-gop250`).
 *
 * Sets (made once with the ffmpeg CLI under the cache directory; a rerun makes only the videos missing):
 * 10 s videos at 30 fps, H.264 High with B-frames (x264 defaults: 3, pyramid), AAC audio, from six moving lavfi
 * sources with per-video temporal noise, in `root/<source>/vNN.mp4`:
 * - `gop250`, `gop30`: 48 videos of 340×256 (Kinetics-like), a keyframe every 250 frames (one at 0 s and one at
 *   8.33 s, like Kinetics' YouTube encodes) or every 30;
 * - `720p-gop30`, `720p-gop250`: 16 videos of 1280×720 (heavier decode and scale).
 *
 * Shapes (every clip 16 consecutive frames at the native rate → 112×112 RGB bilinear, batches of 16; each pass
 * an epoch's seeded list, the same for every contender):
 * - `sampler`: sluice's own sampler plans 2 clips per video at random places, a video's clips side by side
 *   (what decode-once exploits); the list is read from a loader's plan, and sluice's contender runs that sampler;
 * - `rows`: a manifest with one row per clip (`path,label,start,end`), 2–4 rows per video at random places,
 *   drawn by the benchmark and cut to whole batches; each pass is an epoch of that manifest, its rows shuffled
 *   over the epoch (a seeded uniform permutation: rows of a video lie anywhere);
 * - `kinetics`: one random clip per video per epoch, shuffled (Kinetics-style training).
 * Each pass is one epoch of one loader, as in training: decode-once sharing can happen only within an epoch.
 * @module
 */

import { type LoaderOptions, videoClassificationLoader } from "../src/loader/loader.ts";
import { hashSeed, mulberry32, shuffleInPlace } from "../src/dataset/random.ts";
import { type Clip, clipKey, type ClipList } from "./contenders/harness.ts";

/** What every set and shape share. */
export const WORKLOAD = {
  durationSec: 10,
  fps: 30,
  numFrames: 16,
  outWidth: 112,
  outHeight: 112,
  batchSize: 16,
  /** Clips per video of the `sampler` shape. */
  clipsPerVideo: 2,
} as const;

/** A set of videos. */
export interface VideoSet {
  id: string;
  videos: number;
  width: number;
  height: number;
  gop: number;
}

/** The sets; see the module docs. */
export const SETS: Readonly<Record<string, VideoSet>> = Object.fromEntries(
  [
    { id: "gop250", videos: 48, width: 340, height: 256, gop: 250 },
    { id: "gop30", videos: 48, width: 340, height: 256, gop: 30 },
    { id: "720p-gop30", videos: 16, width: 1280, height: 720, gop: 30 },
    { id: "720p-gop250", videos: 16, width: 1280, height: 720, gop: 250 },
  ].map((s) => [s.id, s]),
);

/** How a pass's clips are chosen; see the module docs. */
export type ShapeId = "sampler" | "rows" | "kinetics";

/** Each shape's heading and description in reports. */
export const SHAPES: Readonly<Record<ShapeId, { title: string; describe: string }>> = {
  sampler: {
    title: "2 clips per video, planned side by side by sluice's sampler",
    describe:
      `sluice's own sampler plans ${WORKLOAD.clipsPerVideo} clips per video at seeded random places, ` +
      "a video's clips next to each other (what decoding once for several clips exploits); every contender " +
      "gets that list",
  },
  rows: {
    title: "a manifest with one row per clip, 2–4 rows per video, shuffled",
    describe:
      "the benchmark writes a manifest with one row per clip (`path,label,start,end`), 2–4 rows per " +
      "video at seeded random places; each pass is an epoch of it, its rows shuffled over the epoch (rows of " +
      "a video lie anywhere); sluice reads the manifest as its dataset, the others the same list",
  },
  kinetics: {
    title: "one random clip per video per epoch (Kinetics-style)",
    describe: "one clip per video at a seeded random place, a new one each epoch, shuffled",
  },
};

/** The variants a run measures by default: every shape at GOP 250 and 30, and one 720p set. */
export const DEFAULT_VARIANTS = [
  "sampler-gop250",
  "sampler-gop30",
  "rows-gop250",
  "rows-gop30",
  "kinetics-gop250",
  "kinetics-gop30",
  "rows-720p-gop30",
];

/** A variant: a shape over a set. */
export interface Variant {
  id: string;
  shape: ShapeId;
  set: VideoSet;
}

/** The variant named `id` (`<shape>-<set>`); throws naming the valid ones. */
export function parseVariant(id: string): Variant {
  const dash = id.indexOf("-");
  const shape = id.slice(0, dash) as ShapeId;
  const set = SETS[id.slice(dash + 1)];
  if (dash < 0 || !(shape in SHAPES) || set === undefined) {
    throw new Error(
      `unknown variant ${id}: want <shape>-<set>, shape one of ${
        Object.keys(SHAPES).join(", ")
      }, set one of ` +
        Object.keys(SETS).join(", "),
    );
  }
  return { id, shape, set };
}

/** Moving lavfi sources; video `i` uses `SOURCES[i % 6]` and is labelled by it. */
const SOURCES = ["testsrc2", "mandelbrot", "cellauto", "gradients", "sierpinski", "testsrc"];

function videoArgs(set: VideoSet, i: number): string[] {
  const w = WORKLOAD;
  return [
    ...["-v", "error", "-nostdin"],
    ...["-f", "lavfi", "-i", `${SOURCES[i % SOURCES.length]}=size=${set.width}x${set.height}:rate=${w.fps}`],
    ...["-f", "lavfi", "-i", `sine=frequency=${220 + 10 * i}:sample_rate=44100`],
    ...["-t", String(w.durationSec), "-vf", `noise=alls=10:allf=t+u:all_seed=${i + 1}`],
    ...["-c:v", "libx264", "-profile:v", "high", "-pix_fmt", "yuv420p", "-bf", "3"],
    ...["-g", String(set.gop), "-sc_threshold", "0", "-threads", "1"],
    ...["-c:a", "aac", "-b:a", "64k"],
  ];
}

/** One video of a set. */
export interface SetVideo {
  path: string;
  label: number;
}

/**
 * Makes the first `count` videos of `set` under `dir/<set>/videos` unless they are there already (a marker
 * records the encoding arguments; a video is written under a temporary name and renamed when complete) and
 * returns them, in dataset order (by class, then name).
 */
export async function ensureSet(
  dir: string,
  set: VideoSet,
  count: number,
  log: (line: string) => void = (l) => console.error(l),
): Promise<SetVideo[]> {
  const base = `${dir}/${set.id}`, root = `${base}/videos`, marker = `${base}/.args.json`;
  const want = JSON.stringify({ workload: WORKLOAD, set, args: videoArgs(set, 0) });
  let same = false;
  try {
    same = Deno.readTextFileSync(marker) === want;
  } catch {
    // not made yet
  }
  if (!same) {
    await Deno.remove(base, { recursive: true }).catch(() => {});
    await Deno.mkdir(base, { recursive: true });
    Deno.writeTextFileSync(marker, want);
  }
  const classes = [...SOURCES].sort();
  const videos = Array.from({ length: Math.min(count, set.videos) }, (_, i) => {
    const cls = SOURCES[i % SOURCES.length];
    return { i, path: `${root}/${cls}/v${String(i).padStart(2, "0")}.mp4`, label: classes.indexOf(cls) };
  });
  const made = await Promise.all(videos.map((v) => Deno.stat(v.path).then(() => true, () => false)));
  const missing = videos.filter((_, k) => !made[k]);
  if (missing.length > 0) log(`workload: making ${missing.length} ${set.id} videos under ${root} (once)`);
  let next = 0, done = 0;
  const one = async () => {
    while (next < missing.length) {
      const v = missing[next++];
      await Deno.mkdir(v.path.slice(0, v.path.lastIndexOf("/")), { recursive: true });
      const tmp = `${v.path}.partial.mp4`;
      const r = await new Deno.Command("ffmpeg", { args: [...videoArgs(set, v.i), "-y", tmp] }).output();
      if (!r.success) throw new Error(`ffmpeg failed for ${v.path}: ${new TextDecoder().decode(r.stderr)}`);
      Deno.renameSync(tmp, v.path);
      if (++done % 8 === 0) log(`workload: ${done}/${missing.length} ${set.id} videos`);
    }
  };
  await Promise.all([one(), one()]);
  return videos
    .map(({ path, label }) => ({ path, label }))
    .sort((a, b) => a.label - b.label || (a.path < b.path ? -1 : 1));
}

/** A window holds half a frame more than the clip's frames, so float rounding never leaves it one short. */
const WINDOW_SEC = (WORKLOAD.numFrames + 0.5) / WORKLOAD.fps;

/** The loader options every shape shares: what a clip becomes, and the batch size. */
function clipOptions(dataset: string): Record<string, unknown> {
  const w = WORKLOAD;
  return {
    dataset,
    batchSize: w.batchSize,
    clip: { numFrames: w.numFrames, width: w.outWidth, height: w.outHeight },
  };
}

/** Writes a CSV manifest (`path,label[,start,end]`, a header row first) of `rows` to `file`. */
function writeManifest(
  file: string,
  rows: { path: string; label: number; start?: number; end?: number }[],
): void {
  const line = (r: (typeof rows)[number]) =>
    r.start === undefined ? `${r.path},${r.label}` : `${r.path},${r.label},${r.start},${r.end}`;
  const header = rows[0]?.start === undefined ? "path,label" : "path,label,start,end";
  Deno.writeTextFileSync(file, [header, ...rows.map(line)].join("\n") + "\n");
}

/**
 * The clip list of `passes` passes of `variant` over `videos`, its manifest written under `work`; see the
 * module docs. Pass `p` is epoch `p` of one loader over one manifest, as in training: the list is that epoch's
 * plan, read from the loader's sampler, and sluice's contender runs the same options.
 */
export async function makeClipList(
  variant: Variant,
  videos: SetVideo[],
  work: string,
  seed: number,
  passes: number,
): Promise<ClipList> {
  const w = WORKLOAD;
  const dataset = `${work}/${variant.shape}.csv`;
  let sampler: Record<string, unknown>;
  if (variant.shape === "rows") {
    writeManifest(dataset, drawRows(videos, seed));
    // Every row is one clip: its range is the window (a clip duration longer than any row takes the whole row).
    sampler = { seed, clipsPerVideo: 1, clipDurationSec: 3600 };
  } else {
    writeManifest(dataset, videos);
    const clipsPerVideo = variant.shape === "sampler" ? w.clipsPerVideo : 1;
    sampler = { seed, clipsPerVideo, clipDurationSec: WINDOW_SEC, placement: "random" };
  }
  const sluice = { ...clipOptions(dataset), sampler };
  await using loader = await videoClassificationLoader(
    { ...sluice, log: () => {} } as unknown as LoaderOptions,
  );
  if (loader.indexFailures.length > 0) {
    throw new Error(`workload: videos failed to index: ${JSON.stringify(loader.indexFailures)}`);
  }
  const items = loader.dataset.items;
  const lists = Array.from({ length: passes }, (_, e) =>
    loader.sampler.epoch(e).map((c) => ({
      path: items[c.video].path,
      start: c.start,
      end: c.end,
      label: items[c.video].label,
    })));
  for (const [p, list] of lists.entries()) {
    const keys = new Set(list.map((c) => clipKey(c.path, c.start)));
    if (keys.size !== list.length) {
      throw new Error(`workload: pass ${p} holds a clip twice: pick another --seed`);
    }
  }
  return {
    seed,
    numFrames: w.numFrames,
    width: w.outWidth,
    height: w.outHeight,
    batchSize: w.batchSize,
    shape: variant.shape,
    passes: lists,
    sluice,
  };
}

/**
 * The `rows` shape's manifest: 2–4 rows per video at seeded random places, in a seeded random order, cut to
 * whole batches (so no epoch pads). With fewer videos than a batch (a quick run), it draws again until it has one.
 */
function drawRows(videos: SetVideo[], seed: number): Clip[] {
  const rand = mulberry32(hashSeed(seed, 0x726f7773));
  const last = WORKLOAD.durationSec - WINDOW_SEC - 2 / WORKLOAD.fps;
  const b = WORKLOAD.batchSize;
  const clips: Clip[] = [];
  while (clips.length < b) {
    for (const v of videos) {
      const n = 2 + Math.floor(rand() * 3);
      for (let k = 0; k < n; k++) {
        const start = rand() * last;
        clips.push({ path: v.path, label: v.label, start, end: start + WINDOW_SEC });
      }
    }
  }
  shuffleInPlace(clips, rand);
  return clips.slice(0, clips.length - clips.length % b);
}
