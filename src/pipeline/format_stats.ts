/**
 * `formatStats`: renders {@link PipelineStats} as an aligned text table, one row per stage, then a line per
 * stalled stage, the auto-concurrency controller's last decision, and the likely bottleneck (see `bottleneck.ts`).
 * @module
 */

import type { PipelineStats, StageStats } from "./stats.ts";

const COLUMNS: [string, (s: StageStats) => string][] = [
  ["stage", (s) => s.name],
  ["conc", (s) => `${s.concurrency}${s.auto ? "*" : ""}`],
  ["in", (s) => String(s.tasksIn)],
  ["out", (s) => String(s.itemsOut)],
  ["drop", (s) => String(s.dropped)],
  ["fail", (s) => String(s.failed)],
  ["run", (s) => String(s.inFlight)],
  ["p50 ms", (s) => ms(s.p50Ms)],
  ["p90 ms", (s) => ms(s.p90Ms)],
  ["p99 ms", (s) => ms(s.p99Ms)],
  ["util", (s) => pct(s.utilization)],
  ["queue", (s) => s.input === null ? "-" : `${s.input.length}/${s.input.capacity}`],
  ["q full", (s) => s.input === null ? "-" : pct(s.input.fullFraction)],
  ["q mean", (s) => s.input === null ? "-" : s.input.meanOccupancy.toFixed(1)],
  ["put-wait s", (s) => (s.blockedPutMs / 1000).toFixed(2)],
  ["starved s", (s) => (s.starvedMs / 1000).toFixed(2)],
  ["items/s", (s) => s.itemsPerSec.toFixed(1)],
];

/** Columns given up, in this order, to fit a narrow terminal; the others (stage, out, fail, util...) stay. */
const DROP_ORDER = [
  "q mean",
  "p99 ms",
  "drop",
  "run",
  "put-wait s",
  "p90 ms",
  "starved s",
  "in",
  "queue",
  "conc",
  "p50 ms",
];

/** Options of {@link formatStats}. */
export interface FormatStatsOptions {
  /** Fit the table's rows into this many columns by leaving out its least telling columns (default: all). */
  width?: number;
}

/**
 * An aligned table of the stats, then a line per stalled stage, the auto-concurrency controller's last decision
 * (when a stage is under it; `*` marks such stages' concurrency), and a line naming the likely bottleneck.
 * @param stats a pipeline's stats (a loader's: `loader.stats().pipeline`)
 * @param opts the width to fit the table into
 * @returns the text, lines joined by `\n`
 * @example Where a loader's time went
 * ```ts
 * import { formatStats, videoClassificationLoader } from "@sluice/sluice";
 *
 * await using loader = await videoClassificationLoader({
 *   dataset: "data/train",
 *   batchSize: 8,
 *   clip: { numFrames: 16, width: 112, height: 112 },
 * });
 * for await (using _batch of loader) {
 *   // a training step
 * }
 * console.log(formatStats(loader.stats().pipeline, { width: 100 }));
 * ```
 */
export function formatStats(stats: PipelineStats, opts: FormatStatsOptions = {}): string {
  let columns = COLUMNS;
  const cells = [columns.map(([h]) => h), ...stats.stages.map((s) => columns.map(([, f]) => f(s)))];
  let widths = columns.map((_, c) => Math.max(...cells.map((r) => r[c].length)));
  for (const name of DROP_ORDER) {
    if (opts.width === undefined || widths.reduce((a, w) => a + w + 2, -2) <= opts.width) break;
    const c = columns.findIndex(([h]) => h === name);
    columns = columns.filter((_, i) => i !== c);
    widths = widths.filter((_, i) => i !== c);
    for (const r of cells) r.splice(c, 1);
  }
  const lines = cells.map((r) =>
    r.map((cell, c) => c === 0 ? cell.padEnd(widths[c]) : cell.padStart(widths[c])).join("  ").trimEnd()
  );
  lines.splice(1, 0, widths.map((w) => "-".repeat(w)).join("  "));
  const secs = (stats.elapsedMs / 1000).toFixed(1);
  lines.push(`${stats.consumed} items consumed in ${secs} s over ${stats.epochs} epoch(s)`);
  const fit = (line: string) =>
    opts.width === undefined || line.length <= opts.width ? line : line.slice(0, opts.width - 1) + "…";
  for (const s of stats.stages) {
    if (s.stalledMs <= 0) continue;
    const running = s.kind === "source" ? "waiting on its iterator" : `${s.inFlight} task(s) running`;
    lines.push(fit(`STALLED: ${s.name}: no progress for ${(s.stalledMs / 1000).toFixed(1)} s (${running})`));
  }
  const c = stats.controller;
  if (c.stages.length > 0) {
    const last = c.log.at(-1);
    const what = last === undefined
      ? ""
      : `: last ${last.action} ${last.stage} ${last.from} → ${last.to}: ${last.reason}`;
    lines.push(fit(`* auto concurrency (${c.state})${what}`));
  }
  lines.push(bottleneckLine(stats));
  return lines.join("\n");
}

function bottleneckLine(stats: PipelineStats): string {
  if (stats.bottleneck === null) return "bottleneck: none stands out";
  const s = stats.stages.find((x) => x.name === stats.bottleneck)!;
  const busy = pct(s.utilization);
  if (s.kind === "consumer") {
    const full = pct(s.input!.fullFraction);
    return `bottleneck: the consumer (busy ${busy} between items, the sink full ${full} of the time)`;
  }
  if (s.kind === "source") return `bottleneck: ${s.name} (the source, busy ${busy} producing items)`;
  return `bottleneck: ${s.name} (busy ${busy}, input queue full ${pct(s.input?.fullFraction ?? 0)} of the ` +
    `time; raise its concurrency or speed it up)`;
}

function ms(x: number): string {
  return x >= 100 ? x.toFixed(0) : x >= 1 ? x.toFixed(2) : x.toFixed(3);
}

function pct(x: number): string {
  return `${Math.round(x * 100)}%`;
}
