/**
 * Per-clip cost on a manifest with one row per clip (issue 23): the clip workload's set (`clip_workload.ts`,
 * 340×256 H.264 with B-frames, 10 s), its seeded clips written as manifest rows (`path,label,start,end`, one
 * row per clip, the rows of one video far apart), loaded by sluice in-process and by PyTorch
 * `DataLoader(num_workers=2)` + PyAV over the same clips (sluice's own plan of the manifest, so both decode the
 * same windows in the same order). Both run through the contenders' harness (`contenders/harness.ts`): process
 * tree CPU seconds per clip and clips/s over the timed passes, contenders interleaved round by round, the ratio
 * to PyAV's in the same run. Then, once, sluice in this process with `profile: true`: its per-clip breakdown
 * (`stats().profile`) and its clip counters (shared clips: decode once across rows).
 *
 * Run: `deno run -A bench/per_clip.ts [--gop 30] [--passes 3] [--rounds 2] [--seed 1] [--config JSON]
 * [--contenders sluice,pyav] [--no-breakdown] [--dir DIR]`
 * @module
 */

import { parseArgs } from "node:util";
import { type LoaderOptions, videoClassificationLoader } from "../src/loader/loader.ts";
import { formatProfile } from "../src/loader/clip_profile.ts";
import { DEFAULT_DIR, ensureWorkloadSet, makeClipList, PYTHON, WORKLOAD } from "./clip_workload.ts";
import { type ClipList, runContender, type RunResult, summarise } from "./contenders/harness.ts";

const HERE = new URL(".", import.meta.url).pathname;

const { values } = parseArgs({
  args: Deno.args,
  options: {
    gop: { type: "string", default: "30" },
    passes: { type: "string", default: "3" },
    rounds: { type: "string", default: "2" },
    seed: { type: "string", default: "1" },
    config: { type: "string", default: "{}" },
    contenders: { type: "string", default: "sluice,pyav" },
    "no-breakdown": { type: "boolean", default: false },
    dir: { type: "string", default: DEFAULT_DIR },
  },
});
const gop = Number(values.gop), passes = Number(values.passes), rounds = Number(values.rounds);
const seed = Number(values.seed);
const config = JSON.parse(values.config!) as Record<string, unknown>;
const log = (l: string) => console.error(l);

/** The manifest: one row per clip of the workload's pass 0, the rows of one video far apart. */
async function writeManifest(root: string): Promise<{ csv: string; rowSec: number; like: ClipList }> {
  const like = await makeClipList(root, seed, 1);
  const clips = like.passes[0];
  const byVideo = new Map<string, typeof clips>();
  for (const c of clips) byVideo.set(c.path, [...(byVideo.get(c.path) ?? []), c]);
  // all first clips, then all second ones: a video's rows are a whole video count apart
  const rows = [...byVideo.values()].flatMap((cs, v) => cs.map((c, k) => ({ c, key: k * byVideo.size + v })))
    .sort((a, b) => a.key - b.key).map((r) => r.c);
  const rowSec = (WORKLOAD.numFrames + 0.5) / WORKLOAD.fps;
  const csv = `${values.dir}/gop${gop}/per_clip.csv`;
  const label = (p: string) => p.split("/").at(-2)!;
  Deno.writeTextFileSync(
    csv,
    "path,label,start,end\n" +
      rows.map((c) => `${c.path},${label(c.path)},${c.start.toFixed(6)},${(c.start + rowSec).toFixed(6)}`)
        .join("\n") +
      "\n",
  );
  return { csv, rowSec, like };
}

/** The loader options over the manifest: each row is one clip (its whole window). */
function manifestOptions(csv: string, rowSec: number): Record<string, unknown> {
  const w = WORKLOAD;
  return {
    dataset: csv,
    batchSize: w.batchSize,
    clip: { numFrames: w.numFrames, width: w.outWidth, height: w.outHeight },
    sampler: { seed, clipsPerVideo: 1, clipDurationSec: rowSec, placement: "uniform" },
  };
}

/** sluice's plan of the manifest, `passes` epochs, as the contenders' clip list (`like`'s sizes and seed). */
async function clipList(like: ClipList, opts: Record<string, unknown>, file: string): Promise<ClipList> {
  await using loader = await videoClassificationLoader(
    { ...opts, log: () => {} } as unknown as LoaderOptions,
  );
  const items = loader.dataset.items;
  const pass = (e: number) =>
    loader.sampler.epoch(e).map((c) => ({
      ...items[c.video],
      ...c,
      label: Number(items[c.video].label) || 0,
    }))
      .map(({ path, start, end, label }) => ({ path, start, end, label }));
  const list = { ...like, dataset: opts.dataset as string, sluice: opts, passes: [] as ClipList["passes"] };
  for (let e = 0; e < passes; e++) list.passes.push(pass(e));
  Deno.writeTextFileSync(file, JSON.stringify(list));
  return list;
}

const root = await ensureWorkloadSet(values.dir!, gop, log);
const { csv, rowSec, like } = await writeManifest(root);
const opts = manifestOptions(csv, rowSec);
const listFile = `${values.dir}/gop${gop}/per_clip_list.json`;
const list = await clipList(like, opts, listFile);
const commands: Record<string, string[]> = {
  sluice: [
    Deno.execPath(),
    "run",
    "-A",
    `${HERE}contenders/sluice.ts`,
    ...["--clips", listFile, "--mode", "time", "--config", JSON.stringify(config)],
  ],
  pyav: [
    PYTHON,
    `${HERE}contenders/pyav_dataloader.py`,
    ...["--clips", listFile, "--mode", "time", "--workers", "2"],
  ],
};
const ids = values.contenders!.split(",");
const runs: Record<string, RunResult[]> = Object.fromEntries(ids.map((id) => [id, []]));
for (let r = 0; r < rounds; r++) {
  for (const id of ids) {
    const res = await runContender(commands[id]);
    if (!res.ok) throw new Error(`${id} failed: ${res.error}`);
    runs[id].push(res);
  }
}
const load = Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).join(" ");
console.log(
  `gop ${gop}: ${list.passes[0].length} clips per pass (one manifest row each), ${passes} passes ` +
    `(pass 0 untimed), ${rounds} rounds interleaved; config ${values.config}; load ${load}`,
);
const base = ids.includes("pyav") ? summarise(runs.pyav) : null;
for (const id of ids) {
  const s = summarise(runs[id]);
  const ratio = (x: number, b: number | undefined) => b === undefined ? "" : ` (${(x / b).toFixed(2)}× PyAV)`;
  console.log(
    `  ${id.padEnd(7)} CPU ${(s.cpuPerClip * 1000).toFixed(2)} ms/clip${
      ratio(s.cpuPerClip, base?.cpuPerClip)
    }` +
      `   ${s.clipsPerSec.toFixed(1)} clips/s${ratio(s.clipsPerSec, base?.clipsPerSec)}`,
  );
}

if (!values["no-breakdown"]) {
  await using loader = await videoClassificationLoader({
    ...opts,
    ...config,
    profile: true,
    log,
  } as unknown as LoaderOptions);
  for (let p = 0; p < passes; p++) for await (using _ of loader) { /* the batches */ }
  const s = loader.stats();
  console.log(formatProfile(s.profile!));
  const t = s.clips.total;
  console.log(
    `  clips: delivered ${t.delivered}, shared ${t.sharedClips}, decoded ${t.decodedFrames} frames, ` +
      `skipped ${t.skippedFrames}, amplification ${t.decodeAmplification.toFixed(2)}`,
  );
}
