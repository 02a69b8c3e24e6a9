/**
 * The plots of a tuning run, as SVG: throughput per trial with the running best and the ceiling, and each stage's
 * contention curve (concurrency against per-item latency and throughput).
 *
 * Charts are Vega-Lite specs rendered by Vega's headless `View.toSVG()`: no DOM, no canvas, no native module and
 * no Deno permission. Vega is imported only when a plot is drawn, so the CLI starts as fast as before when it is
 * not tuning.
 * @module
 */

import type { Curve, SearchResult } from "./search.ts";

/** A Vega-Lite spec (a JSON object). */
export type ChartSpec = Record<string, unknown>;

const WIDTH = 560, HEIGHT = 300;
/** A ceiling this many times the best trial is named in the title instead of drawn (it would flatten the rest). */
const OFF_CHART = 3;
const PHASE_ORDER = ["start", "repeat", "curve", "descent", "ceiling", "failed"];

/** The trials chart: one point per trial (failed ones at 0), the running best as a step line, the ceiling. */
export function trialsChart(result: SearchResult): ChartSpec {
  const points = result.trials.map((t) => ({
    trial: t.id,
    samplesPerSec: t.metrics?.samplesPerSec ?? 0,
    phase: t.status === "ok" ? t.phase : "failed",
    what: t.note,
  }));
  let best = 0;
  const running = result.trials.flatMap((t) => {
    if (t.kind !== "measure" || t.status !== "ok") return [];
    best = Math.max(best, t.metrics!.samplesPerSec);
    return [{ trial: t.id, samplesPerSec: best }];
  });
  const x = { field: "trial", type: "quantitative", title: "trial", axis: { tickMinStep: 1 } };
  const y = { field: "samplesPerSec", type: "quantitative", title: "samples/s" };
  const layers: ChartSpec[] = [
    {
      data: { values: running },
      mark: { type: "line", interpolate: "step-after", color: "#2a7d2a", strokeWidth: 2 },
      encoding: { x, y },
    },
    {
      data: { values: points },
      mark: { type: "point", filled: true, size: 60 },
      encoding: {
        x,
        y,
        color: { field: "phase", type: "nominal", sort: PHASE_ORDER, title: "phase" },
        shape: { field: "phase", type: "nominal", sort: PHASE_ORDER },
        tooltip: [{ field: "trial" }, { field: "what" }, { field: "samplesPerSec", format: ",.1f" }],
      },
    },
  ];
  const top = Math.max(0, ...points.map((p) => p.samplesPerSec));
  const offChart = result.ceiling !== null && result.ceiling > OFF_CHART * top;
  if (result.ceiling !== null && !offChart) {
    const ceiling = [{
      trial: 0,
      samplesPerSec: result.ceiling,
      label: `ceiling ${Math.round(result.ceiling)}`,
    }];
    layers.push(
      {
        data: { values: ceiling },
        mark: { type: "rule", strokeDash: [6, 4], color: "#c03030" },
        encoding: { y },
      },
      {
        data: { values: ceiling },
        mark: { type: "text", align: "left", dx: 4, dy: -6, color: "#c03030" },
        encoding: { y, x: { value: 0 }, text: { field: "label" } },
      },
    );
  }
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title: offChart
      ? `Throughput per trial (line: best so far; ceiling ${Math.round(result.ceiling!)}, off the chart)`
      : "Throughput per trial (line: best so far; dashed: ceiling)",
    width: WIDTH,
    height: HEIGHT,
    layer: layers,
    resolve: { scale: { y: "shared" }, axis: { y: "shared" } },
  };
}

/** A stage's contention curve: per-item latency (left) and throughput (right) against concurrency. */
export function curveChart(curve: Curve): ChartSpec {
  const ok = curve.points.filter((p) => p.samplesPerSec !== null);
  const latency = ok.filter((p) => p.stageMeanMs !== null).map((p) => ({
    concurrency: p.concurrency,
    ms: p.stageMeanMs,
  }));
  const throughput = ok.flatMap((p) => [
    { concurrency: p.concurrency, series: "pipeline samples/s", value: p.samplesPerSec },
    ...(p.stageItemsPerSec === null ? [] : [{
      concurrency: p.concurrency,
      series: `${curve.stage} items/s`,
      value: p.stageItemsPerSec,
    }]),
  ]);
  const x = {
    field: "concurrency",
    type: "quantitative",
    title: `${curve.stage} concurrency`,
    scale: { type: "log", base: 2 },
    axis: { values: curve.points.map((p) => p.concurrency), format: "d" },
  };
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title: `Contention curve of ${curve.stage} (others fixed)`,
    hconcat: [
      {
        width: WIDTH / 2,
        height: HEIGHT,
        data: { values: latency },
        mark: { type: "line", point: true, color: "#c03030" },
        encoding: {
          x,
          y: {
            field: "ms",
            type: "quantitative",
            title: "per-item latency (ms, log scale)",
            scale: { type: "log" },
          },
          tooltip: [{ field: "concurrency" }, { field: "ms", format: ",.2f" }],
        },
      },
      {
        width: WIDTH / 2,
        height: HEIGHT,
        data: { values: throughput },
        mark: { type: "line", point: true },
        encoding: {
          x,
          y: { field: "value", type: "quantitative", title: "throughput (per second)" },
          color: { field: "series", type: "nominal", title: null, legend: { orient: "bottom" } },
          tooltip: [{ field: "series" }, { field: "concurrency" }, { field: "value", format: ",.1f" }],
        },
      },
    ],
  };
}

/** Renders a Vega-Lite spec to SVG text (imports Vega on first use). */
export async function renderSvg(spec: ChartSpec): Promise<string> {
  const [vega, vl] = await Promise.all([import("vega"), import("vega-lite")]);
  const compiled = vl.compile(spec as unknown as Parameters<typeof vl.compile>[0]).spec;
  const view = new vega.View(vega.parse(compiled), { renderer: "none" });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

/** The file name of a stage's curve plot. */
export function curveFile(curve: Curve): string {
  return `curve-${curve.stage.replace(/[^A-Za-z0-9_-]+/g, "_")}.svg`;
}

/** Writes `trials.svg` and one `curve-<stage>.svg` per curve into `dir`; returns the file names. */
export async function writePlots(dir: string, result: SearchResult): Promise<string[]> {
  const files: string[] = [];
  if (result.trials.length > 0) {
    await Deno.writeTextFile(`${dir}/trials.svg`, await renderSvg(trialsChart(result)));
    files.push("trials.svg");
  }
  for (const curve of result.curves) {
    if (curve.points.every((p) => p.samplesPerSec === null)) continue;
    await Deno.writeTextFile(`${dir}/${curveFile(curve)}`, await renderSvg(curveChart(curve)));
    files.push(curveFile(curve));
  }
  return files;
}
