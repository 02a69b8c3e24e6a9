/**
 * End to end: the video classification loader with sample → fetch → demux in process vs in a backend child
 * (`backend: "subprocess"`), decoding on the frontend either way, on the same clips (generated with the ffmpeg
 * CLI) in one run. Two consumers: an idle one (takes batches as fast as they come) and a busy one that spends
 * about 70% of each step on compute (a blocking busy-wait of 7/3 × the idle in-process step time).
 *
 * Run: `deno run --allow-all bench/backend_vs_inprocess.ts [--clips 48] [--epochs 2]`
 * @module
 */

import { videoClassificationLoader } from "../src/loader/loader.ts";

function arg(name: string, fallback: number): number {
  const i = Deno.args.indexOf(name);
  return i >= 0 ? Number(Deno.args[i + 1]) : fallback;
}

async function makeClips(dir: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const label = i % 4;
    await Deno.mkdir(`${dir}/class_${label}`, { recursive: true });
    const out = `${dir}/class_${label}/clip_${String(i).padStart(3, "0")}.mp4`;
    const src = `testsrc2=size=320x240:rate=25,hue=h=${i * 17}`;
    const r = await new Deno.Command("ffmpeg", {
      args: [
        "-v",
        "error",
        "-f",
        "lavfi",
        "-i",
        src,
        "-t",
        "4",
        "-c:v",
        "libx264",
        "-preset",
        "veryfast",
        "-bf",
        "2",
        "-g",
        "25",
        "-pix_fmt",
        "yuv420p",
        "-y",
        out,
      ],
    }).output();
    if (!r.success) throw new Error(`ffmpeg failed for ${out}: ${new TextDecoder().decode(r.stderr)}`);
  }
}

function busyWait(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) { /* simulated training step */ }
}

interface Result {
  backend: "inprocess" | "subprocess";
  computeMs: number;
  batches: number;
  clips: number;
  seconds: number;
  clipsPerSec: number;
  stepMs: number;
}

async function run(
  dir: string,
  backend: "inprocess" | "subprocess",
  epochs: number,
  computeMs: number,
): Promise<Result> {
  const loader = await videoClassificationLoader({
    dataset: dir,
    batchSize: 8,
    clip: { numFrames: 8, width: 112, height: 112 },
    sampler: { clipsPerVideo: 2, seed: 1, clipDurationSec: 1 },
    backend,
    log: () => {},
  });
  let batches = 0;
  let clips = 0;
  // Warm-up epoch (Workers, decoders, the child's start) is not timed.
  for await (using _ of loader) { /* untimed */ }
  const t0 = performance.now();
  for (let e = 0; e < epochs; e++) {
    for await (using b of loader) {
      batches++;
      clips += b.labels.length;
      if (computeMs > 0) busyWait(computeMs);
    }
  }
  const seconds = (performance.now() - t0) / 1000;
  await loader.close();
  return {
    backend,
    computeMs,
    batches,
    clips,
    seconds,
    clipsPerSec: clips / seconds,
    stepMs: 1000 * seconds / batches,
  };
}

async function main(): Promise<void> {
  const n = arg("--clips", 48);
  const epochs = arg("--epochs", 2);
  const dir = await Deno.makeTempDir({ prefix: "sluice-bench-backend-" });
  try {
    await makeClips(dir, n);
    const results: Result[] = [];
    const idleIn = await run(dir, "inprocess", epochs, 0);
    const idleSub = await run(dir, "subprocess", epochs, 0);
    const compute = idleIn.stepMs * 7 / 3;
    const busyIn = await run(dir, "inprocess", epochs, compute);
    const busySub = await run(dir, "subprocess", epochs, compute);
    results.push(idleIn, idleSub, busyIn, busySub);
    console.log(
      `${n} clips (320x240 H.264, 4 s), batch 8 × 8 frames 112×112, ${epochs} timed epochs, ` +
        `${navigator.hardwareConcurrency} cores`,
    );
    console.log("| frontend | demux | clips/s | step ms | subprocess / inprocess |");
    console.log("| --- | --- | --- | --- | --- |");
    for (
      const [a, b, label] of [[idleIn, idleSub, "idle"], [
        busyIn,
        busySub,
        `busy (${compute.toFixed(1)} ms/step)`,
      ]] as const
    ) {
      console.log(`| ${label} | in process | ${a.clipsPerSec.toFixed(1)} | ${a.stepMs.toFixed(1)} | 1.000 |`);
      console.log(
        `| ${label} | backend child | ${b.clipsPerSec.toFixed(1)} | ${b.stepMs.toFixed(1)} | ` +
          `${(b.clipsPerSec / a.clipsPerSec).toFixed(3)} |`,
      );
    }
    const busyShare = (r: Result) => (r.computeMs * r.batches / 1000 / r.seconds * 100).toFixed(0);
    console.log(
      `compute share of wall time, busy: in process ${busyShare(busyIn)}%, backend ${busyShare(busySub)}%`,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

if (import.meta.main) await main();
