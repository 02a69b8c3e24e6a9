/**
 * The cost of the clip transforms (issue 11): the loader's clips/s with stretch/uint8 (the baseline) and with
 * short-side + flip, random-resized-crop + flip + float32 normalisation, each with and without batch slots,
 * interleaved rounds in one run, as ratios to the baseline (112×112, 8 frames, batch 8, 4 clips per video).
 *
 * Run: `deno run -A bench/transforms.ts [DATASET] [ROUNDS]` (default: the demo dataset, 3 rounds)
 * @module
 */
import { ensureDemoDataset } from "../examples/demo.ts";
import { videoClassificationLoader } from "@sluice/sluice";
const dataset = Deno.args[0] ?? ensureDemoDataset();
const rounds = Number(Deno.args[1] ?? 3);
const float32Crop = {
  resize: "random-resized-crop",
  flipProbability: 0.5,
  dtype: "float32",
  mean: [0.485, 0.456, 0.406], // ImageNet's
  std: [0.229, 0.224, 0.225],
};
const variants: Record<string, Record<string, unknown>> = {
  "stretch uint8 (default)": {},
  "short-side + flip 0.5 uint8": { resize: "short-side", flipProbability: 0.5 },
  "random-resized-crop + flip float32 (ImageNet mean/std)": float32Crop,
  "uint8, batch slots": { slots: 4 },
  "random-resized-crop + flip float32, batch slots": { ...float32Crop, slots: 4 },
};
const out: Record<string, number[]> = {};
for (let r = 0; r < rounds; r++) {
  for (const [name, { slots, ...clip }] of Object.entries(variants)) {
    await using loader = await videoClassificationLoader({
      slots: slots as number | undefined,
      dataset,
      batchSize: 8,
      clip: { numFrames: 8, width: 112, height: 112, ...clip },
      sampler: { seed: 0, clipsPerVideo: 4 },
      log: () => {},
    });
    for await (using _b of loader) break; // warm-up: Workers started
    const t0 = performance.now();
    let n = 0;
    for (let e = 0; e < 3; e++) for await (using b of loader) n += b.labels.length;
    (out[name] ??= []).push(n / ((performance.now() - t0) / 1000));
  }
}
const med = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
const base = med(Object.values(out)[0]);
for (const [name, v] of Object.entries(out)) {
  console.log(
    `${name}: ${v.map((x) => x.toFixed(1)).join(" / ")} clips/s, median ${med(v).toFixed(1)} (${
      (med(v) / base).toFixed(3)
    }×)`,
  );
}
