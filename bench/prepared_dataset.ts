/**
 * What dataset preparation buys, measured in one run with the `sluice` CLI itself:
 *
 * 1. a 1080p source set is generated with the ffmpeg CLI (testsrc2/mandelbrot/cellauto patterns with film
 *    grain so the bitrate is a camera's, not a test card's), `--videos` videos of `--seconds` seconds at 30 fps;
 * 2. `sluice transcode` makes the 128p / 15 fps / GOP 15 H.264 copy; `sluice pack` packs both into shards;
 * 3. `sluice bench-io --cold --repeat 5` reads the four datasets (source files, source shards, transcoded files,
 *    transcoded shards) cold and warm;
 * 4. `sluice load` runs the loader (cold page cache) over the source, the transcoded files and the transcoded
 *    shards with the same clip settings.
 *
 * The machine is shared: read the ratios, which come from the same run. Generated files stay in `--dir`
 * (default a temp dir, removed unless `--keep`); a second run with the same `--dir --keep` reuses the source.
 *
 * Run: `deno run -A bench/prepared_dataset.ts [--videos 24] [--seconds 6] [--batches 24] [--dir D] [--keep]`
 * @module
 */

import { parseArgs } from "node:util";
import { dropFromPageCache } from "../src/prep/page_cache.ts";
import { openDataset } from "../src/dataset/dataset.ts";
import { openShards } from "../src/dataset/shards/reader.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    videos: { type: "string", default: "24" },
    seconds: { type: "string", default: "6" },
    batches: { type: "string", default: "24" },
    dir: { type: "string" },
    keep: { type: "boolean", default: false },
  },
});
const videos = Number(values.videos), seconds = Number(values.seconds), batches = Number(values.batches);
const dir = values.dir ?? await Deno.makeTempDir({ prefix: "sluice-prepared-" });
const MAIN = new URL("../src/cli/main.ts", import.meta.url).pathname;

async function sluice(args: string[]): Promise<string> {
  console.error(`$ sluice ${args.join(" ")}`);
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MAIN, ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  if (!out.success) {
    throw new Error(`sluice ${args[0]} exited ${out.code}: ${new TextDecoder().decode(out.stderr)}`);
  }
  return text;
}

const SOURCES = [
  "testsrc2=size=1920x1080:rate=30",
  "mandelbrot=size=1920x1080:rate=30",
  "cellauto=size=1920x1080:rate=30:rule=110",
  "life=size=1920x1080:rate=30:mold=10:ratio=0.1",
];

async function makeSource(root: string): Promise<void> {
  for (let i = 0; i < videos; i++) {
    const cls = `class_${i % SOURCES.length}`;
    const path = `${root}/${cls}/v${String(i).padStart(3, "0")}.mp4`;
    try {
      await Deno.stat(path);
      continue;
    } catch { /* make it */ }
    await Deno.mkdir(`${root}/${cls}`, { recursive: true });
    console.error(`ffmpeg: ${path}`);
    const out = await new Deno.Command("ffmpeg", {
      args: [
        ...["-v", "error", "-nostdin", "-f", "lavfi", "-i", SOURCES[i % SOURCES.length]],
        ...["-t", String(seconds), "-vf", `noise=alls=8:allf=t+u,hue=H=${i}*0.3*t`],
        ...["-c:v", "libx264", "-preset", "veryfast", "-crf", "23", "-g", "60", "-pix_fmt", "yuv420p"],
        ...["-y", `${path}.tmp.mp4`],
      ],
    }).output();
    if (!out.success) throw new Error(`ffmpeg failed: ${new TextDecoder().decode(out.stderr)}`);
    await Deno.rename(`${path}.tmp.mp4`, path);
  }
}

/** Every local file a dataset reads, for dropping them from the page cache before a cold `load`. */
async function filesOf(dataset: string): Promise<string[]> {
  try {
    return (await openShards(dataset)).shards.map((s) => s.tar);
  } catch {
    return (await openDataset(dataset)).items.map((i) => i.path);
  }
}

try {
  const src = `${dir}/src`, t128 = `${dir}/t128`;
  await makeSource(src);
  console.log(
    await sluice([
      "transcode",
      src,
      t128,
      "--height",
      "128",
      "--fps",
      "15",
      "--codec",
      "h264",
      "--gop",
      "15",
    ]),
  );
  console.log(await sluice(["pack", src, `${dir}/src-shards`]));
  console.log(await sluice(["pack", `${t128}/manifest.jsonl`, `${dir}/t128-shards`]));
  const datasets = [src, `${dir}/src-shards`, `${t128}/manifest.jsonl`, `${dir}/t128-shards`];
  console.log(await sluice(["bench-io", ...datasets, "--cold", "--repeat", "5"]));
  const load = [
    "--batches",
    String(batches),
    "--batch-size",
    "8",
    "--frames",
    "8",
    "--width",
    "112",
    "--height",
    "112",
  ];
  const rows: [string, number, number][] = [];
  for (const ds of [src, `${t128}/manifest.jsonl`, `${dir}/t128-shards`]) {
    dropFromPageCache(await filesOf(ds));
    const r = JSON.parse(await sluice(["load", ds, ...load, "--frame-rate", "15", "--json"]));
    rows.push([ds, r.samplesPerSec, r.startupSec]);
  }
  console.log("sluice load, cold page cache: clips/s (ratio to the source), start-up (open + index) seconds");
  for (const [ds, v, up] of rows) {
    console.log(
      `  ${ds}: ${v.toFixed(1)} clips/s (${(v / rows[0][1]).toFixed(2)}x), start-up ${up.toFixed(2)} s`,
    );
  }
} finally {
  if (!values.keep && values.dir === undefined) await Deno.remove(dir, { recursive: true });
}
