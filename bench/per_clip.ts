/**
 * Per-clip cost on a manifest with one row per clip (issue 23): the bench's "rows" shape
 * (`workload_sets.ts`: 340×256 H.264 with B-frames, 10 s, GOP 30 or 250; 2–4 rows per video at random places,
 * shuffled), loaded by sluice in-process and by PyTorch `DataLoader(num_workers=2)` + PyAV over the same clips.
 * Both run through the contenders' harness (`contenders/harness.ts`): process tree CPU seconds per clip and
 * clips/s over the timed passes, contenders interleaved round by round, the ratio to PyAV's in the same run.
 * Then, once, sluice in this process with `profile: true`: its per-clip breakdown (`stats().profile`) and its
 * clip counters (shared clips: decode once across rows).
 *
 * Run: `deno run -A bench/per_clip.ts [--gop 30] [--passes 3] [--rounds 2] [--seed 1] [--config JSON]
 * [--contenders sluice,pyav] [--no-breakdown] [--dir DIR]`
 * @module
 */

import { parseArgs } from "node:util";
import { type LoaderOptions, videoClassificationLoader } from "../src/loader/loader.ts";
import { formatProfile } from "../src/loader/decode/clip_profile.ts";
import { DEFAULT_DIR, PYTHON } from "./clip_workload.ts";
import { ensureSet, makeClipList, parseVariant } from "./workload_sets.ts";
import { runContender, type RunResult, summarise } from "./contenders/harness.ts";

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

// The bench's "rows" shape (one manifest row per clip, 2–4 rows per video at random places, shuffled):
// the same clips every contender of `bench/compare.ts` gets.
const variant = parseVariant(`rows-gop${gop}`);
const videos = await ensureSet(values.dir!, variant.set, variant.set.videos, log);
const work = `${values.dir}/${variant.set.id}/per_clip`;
await Deno.mkdir(work, { recursive: true });
const list = await makeClipList(variant, videos, work, seed, passes);
const listFile = `${work}/clips.json`;
Deno.writeTextFileSync(listFile, JSON.stringify(list));
const opts = list.sluice as Record<string, unknown>;
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
  for await (using _ of loader) { /* one epoch: the batches of pass 0 */ }
  const s = loader.stats();
  console.log(formatProfile(s.profile!));
  const t = s.clips.total;
  console.log(
    `  clips: delivered ${t.delivered}, shared ${t.sharedClips}, decoded ${t.decodedFrames} frames, ` +
      `skipped ${t.skippedFrames}, amplification ${t.decodeAmplification.toFixed(2)}`,
  );
}
