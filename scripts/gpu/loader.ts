/**
 * Phase `loader`: the loader with `decode: "nvdec"` as users run it — `sluice load --decode nvdec` for two
 * epochs (every planned clip delivered) — and its batches against the CPU loader's on the same seed: at the
 * dataset's own size (same clips, labels and pts; PSNR), and resized by the hardware scaler (each frame's
 * pattern reads back its label and frame index: the synthetic dataset draws both into every frame).
 * @module
 */
import { type LoaderOptions, videoClassificationLoader } from "../../src/loader/loader.ts";
import { readPattern } from "../../src/prep/synthetic.ts";
import { probe } from "../../src/media/probe.ts";
import { DATASET, nvdecMissing } from "./kit.ts";
import { db, fail, pass, type PhaseResult, psnr, skip } from "./result.ts";

interface HostBatch {
  data: Uint8Array;
  shape: number[];
  labels: number[];
  clips: { video: number; start: number; end: number; pts: number[]; frameIndex: number[] | null }[];
}

/** One epoch of batches copied to the host (a device batch through `toHost()`, before its slot goes back). */
export async function epochOf(opts: LoaderOptions): Promise<HostBatch[]> {
  await using loader = await videoClassificationLoader({ log: () => {}, ...opts });
  const out: HostBatch[] = [];
  for await (using b of loader) {
    out.push({
      data: (b.toHost() as Uint8Array).slice(),
      shape: [...b.shape],
      labels: [...b.labels],
      clips: b.clips.map((c) => ({
        video: c.video,
        start: c.start,
        end: c.end,
        pts: [...c.pts],
        frameIndex: c.frameIndex,
      })),
    });
  }
  const c = loader.stats().clips.total;
  if (c.planned !== c.delivered) throw new Error(`${c.delivered} of ${c.planned} planned clips delivered`);
  return out;
}

/** Same clips, labels and pts in both epochs, or why not. */
function sameClips(a: HostBatch[], b: HostBatch[]): string | null {
  if (a.length !== b.length) return `${a.length} batches, the CPU ${b.length}`;
  const key = (x: HostBatch[]) =>
    JSON.stringify(x.map((y) => [y.labels, y.clips.map((c) => [c.video, c.start, c.pts])]));
  return key(a) === key(b) ? null : "clips, labels or pts differ from the CPU loader's";
}

/** The loader phase. */
export async function loader(r: PhaseResult): Promise<void> {
  const missing = nvdecMissing();
  const base = { dataset: DATASET, sampler: { seed: 3 }, concurrency: { decode: 2 } } as const;

  await r.check("sluice load --decode nvdec, 2 epochs", async () => {
    if (missing) return skip(missing);
    const args = ["run", "--allow-all", "--no-lock", "src/cli/main.ts", "load", DATASET, "--decode", "nvdec"];
    args.push(
      "--epochs",
      "2",
      "--batch-size",
      "4",
      "--frames",
      "16",
      "--width",
      "112",
      "--height",
      "112",
      "--json",
    );
    const o = await new Deno.Command(Deno.execPath(), { args, stdout: "piped", stderr: "piped" }).output();
    const err = new TextDecoder().decode(o.stderr).trim();
    if (!o.success) return fail(`exit ${o.code}: ${err.split("\n").slice(-4).join(" / ")}`);
    const s = JSON.parse(new TextDecoder().decode(o.stdout));
    const figures = {
      decoder: s.decoder,
      epochs: s.epochs,
      clips: s.clips.delivered,
      planned: s.clips.planned,
      failed: s.clips.failed,
      samplesPerSec: Math.round(s.samplesPerSec),
      elapsedSec: s.elapsedSec,
      startupSec: s.startupSec,
      bottleneck: s.bottleneck,
      peakRssMiB: Math.round(s.peakRssBytes / 2 ** 20),
    };
    const why = s.decoder !== "nvdec"
      ? `decoded with ${s.decoder}`
      : s.epochs !== 2
      ? `${s.epochs} epochs`
      : s.clips.delivered !== s.clips.planned || s.clips.failed
      ? `${s.clips.delivered} of ${s.clips.planned} clips delivered, ${s.clips.failed} failed`
      : null;
    return why ? fail(why, figures) : pass(figures);
  });

  await r.check("batches against the CPU loader, native size", async () => {
    if (missing) return skip(missing);
    const first = [...Deno.readDirSync(DATASET)].filter((e) => e.isDirectory)[0].name;
    const video = [...Deno.readDirSync(`${DATASET}/${first}`)][0].name;
    const v = (await probe(`${DATASET}/${first}/${video}`)).video!;
    const clip = { numFrames: 8, width: v.width, height: v.height };
    const opts = { ...base, batchSize: 4, clip, layout: "BCTHW" } as const;
    const cpu = await epochOf({ ...opts, decode: "cpu" });
    const gpu = await epochOf({ ...opts, decode: "nvdec", slots: 4 });
    const why = sameClips(gpu, cpu);
    let worst = Infinity, near = 0, total = 0, max = 0;
    for (const [i, g] of gpu.entries()) {
      if (!cpu[i] || cpu[i].data.length !== g.data.length) continue;
      worst = Math.min(worst, psnr(g.data, cpu[i].data));
      for (let k = 0; k < g.data.length; k++) {
        const d = Math.abs(g.data[k] - cpu[i].data[k]);
        if (d <= 2) near++;
        if (d > max) max = d;
      }
      total += g.data.length;
    }
    const figures = {
      size: `${clip.width}x${clip.height}`,
      batches: gpu.length,
      worstPsnrDb: db(worst),
      within2Percent: Math.round((1000 * near) / Math.max(1, total)) / 10,
      maxDiff: max,
    };
    if (why) return fail(why, figures);
    return worst >= 40 && near / total >= 0.9
      ? pass(figures)
      : fail(`worst batch ${db(worst)} dB (bound 40), ${figures.within2Percent}% within ±2`, figures);
  });

  await r.check("batches resized 112x112: labels and frame indices read back", async () => {
    if (missing) return skip(missing);
    const opts = {
      ...base,
      batchSize: 4,
      clip: { numFrames: 8, width: 112, height: 112 },
      layout: "BTHWC",
    } as const;
    const cpu = await epochOf({ ...opts, decode: "cpu" });
    const gpu = await epochOf({ ...opts, decode: "nvdec", slots: 4 });
    const why = sameClips(gpu, cpu);
    let frames = 0, read = 0;
    const wrong: string[] = [];
    let worst = Infinity;
    for (const [i, b] of gpu.entries()) {
      if (cpu[i]?.data.length === b.data.length) worst = Math.min(worst, psnr(b.data, cpu[i].data));
      const [n, t, h, w] = b.shape;
      for (let c = 0; c < n; c++) {
        for (let k = 0; k < t; k++) {
          frames++;
          const got = readPattern(b.data, w, h, ((c * t + k) * h * w) * 3);
          const want = { label: b.labels[c], frameIndex: b.clips[c].frameIndex?.[k] };
          if (got && got.label === want.label && got.frameIndex === want.frameIndex) read++;
          else if (wrong.length < 5) {
            wrong.push(
              `batch ${i} clip ${c} frame ${k}: read ${JSON.stringify(got)}, want ${JSON.stringify(want)}`,
            );
          }
        }
      }
    }
    const figures = { batches: gpu.length, frames, readBack: read, psnrAgainstCpuBilinearDb: db(worst) };
    if (why) return fail(why, figures);
    return read === frames && frames > 0
      ? pass(figures)
      : fail(`${frames - read} of ${frames} frames read back wrong: ${wrong.join("; ")}`, figures);
  });
}
