/**
 * `report.md` of a tuning run: the best configuration and its gain over the start, the changes kept in order,
 * what did not help, the headroom to the ceiling, the bottleneck, the contention curves and the failed trials.
 * @module
 */

import {
  type Evaluated,
  meanOf,
  type Move,
  type SearchResult,
  spreadOf,
  type TrialRecord,
} from "./search.ts";
import { type ChoiceValue, type Config, paramLabel, type SearchSpace } from "./space.ts";
import { curveFile } from "./plots.ts";
import { fmtBytes } from "./runner.ts";

/** What the report says about the run besides the search result. */
export interface ReportContext {
  module: string;
  space: SearchSpace;
  budgetSec: number;
  warmupSec: number;
  measureSec: number;
  /** SVG files written next to the report. */
  plots: readonly string[];
  /** When the search started (ISO time). */
  startedAt: string;
}

/** A rate as `1,126` (or `12.5` below 100). */
export function fmtRate(x: number): string {
  return x.toLocaleString("en-US", { maximumFractionDigits: x < 100 ? 1 : 0, minimumFractionDigits: 0 });
}

/** A noise margin above this is worth a warning. */
const NOISY = 0.1;

function pct(x: number): string {
  return `${x >= 0 ? "+" : "−"}${Math.abs(x * 100).toFixed(Math.abs(x) < 0.1 ? 1 : 0)}%`;
}

function fmtValue(v: ChoiceValue): string {
  return typeof v === "string" ? v : String(v);
}

/** "demux concurrency 3 (from 8): 1,126 → 1,294 samples/s". */
export function moveText(space: SearchSpace, m: Move): string {
  const what = `${paramLabel(m.param, space[m.param])} ${fmtValue(m.to)} (from ${fmtValue(m.from)})`;
  if (m.after === null) return `${what}: failed (${m.failure ?? "no result"})`;
  return `${what}: ${fmtRate(m.before)} → ${fmtRate(m.after)} samples/s`;
}

/** The report's Markdown: a heading and summary line, then one section after another. */
export function reportMarkdown(r: SearchResult, ctx: ReportContext): string {
  const failed = r.trials.filter((t) => t.status === "failed");
  return [
    ...summarySection(r, ctx, failed.length),
    ...bestSection(r, ctx.space),
    ...keptSection(r, ctx.space),
    ...notHelpedSection(r, ctx.space),
    ...headroomSection(r),
    ...bottleneckSection(r),
    ...curvesSection(r, ctx),
    ...trialsSection(ctx, failed),
  ].join("\n");
}

/** The title and the line saying how long the search ran, on what, and why it stopped. */
function summarySection(r: SearchResult, ctx: ReportContext, failed: number): string[] {
  return [
    `# sluice tune: ${ctx.module}`,
    "",
    `${ctx.startedAt} · ${r.trials.length} trials (${failed} failed) in ${fmtMin(r.spentSec)} of a ` +
    `${
      fmtMin(ctx.budgetSec)
    } budget · each trial: ${ctx.warmupSec} s warm-up, ${ctx.measureSec} s measured · ` +
    `${navigator.hardwareConcurrency ?? "?"} cores · stopped: ${r.stopReason}.`,
    "",
  ];
}

/** The best configuration against the start: its parameters, its gain, its last trial, the noise margin. */
function bestSection(r: SearchResult, space: SearchSpace): string[] {
  const best = r.best;
  const out = ["## Best configuration", ""];
  if (best === null) {
    out.push("No trial succeeded; see the failed trials below.", "");
    return out;
  }
  out.push("| parameter | start | best |", "| --- | --- | --- |");
  for (const [name, p] of Object.entries(space)) {
    const a = r.start.config[name], b = best.config[name];
    out.push(
      `| ${paramLabel(name, p)} | ${fmtValue(a)} | ${a === b ? fmtValue(b) : `**${fmtValue(b)}**`} |`,
    );
  }
  out.push("");
  const start = r.start.samples.length > 0 ? meanOf(r.start) : null;
  const gain = start === null
    ? "the start configuration failed"
    : `${fmtRate(start)} at the start (${spread(r.start)}): **${(meanOf(best) / start).toFixed(2)}×** ` +
      `(${pct(meanOf(best) / start - 1)})`;
  out.push(`**${fmtRate(meanOf(best))} samples/s** (${spread(best)}) vs ${gain}.`);
  const m = best.metrics;
  if (m) {
    const parts = [
      `step time p50 ${m.stepP50Ms.toFixed(1)} ms, p90 ${m.stepP90Ms.toFixed(1)} ms`,
      `data wait ${(m.dataWaitFraction * 100).toFixed(0)}% of the loop's time`,
    ];
    if (m.cpuCores !== null) parts.push(`CPU ${m.cpuCores.toFixed(2)} cores`);
    if (m.peakRssBytes !== null) parts.push(`peak RSS ${fmtBytes(m.peakRssBytes)}`);
    out.push(`In its last trial: ${parts.join("; ")}.`);
  }
  out.push(
    "",
    `Differences under ${(r.threshold * 100).toFixed(1)}% count as noise (2.5 standard errors of the ` +
      "difference of two means, from the spread of repeated configurations; at least 1%).",
  );
  if (r.threshold > NOISY) {
    out.push(
      "",
      `**The measurements were noisy**: changes smaller than ${
        (r.threshold * 100).toFixed(0)
      }% could not be ` +
        "told from noise, so values within it were taken as equal (the smaller concurrency kept). On a busy or " +
        "shared machine, give trials longer windows (`--trial-seconds`) or more repeats (`--repeats`).",
    );
  }
  out.push("");
  return out;
}

/** The changes kept, in the order the search kept them. */
function keptSection(r: SearchResult, space: SearchSpace): string[] {
  const out = ["## Kept changes, in order", ""];
  if (r.kept.length === 0) out.push("None: the start configuration stayed the best.");
  for (const m of r.kept) {
    const note = m.after !== null && m.after < m.before * (1 + r.threshold)
      ? " (as fast within noise, fewer tasks)"
      : "";
    out.push(`- + ${moveText(space, m)}${note}`);
  }
  return out;
}

/** The changes rejected, grouped by parameter. */
function notHelpedSection(r: SearchResult, space: SearchSpace): string[] {
  const out = ["", "## What did not help", ""];
  if (r.rejected.length === 0) out.push("Nothing else was tried.");
  const byParam = new Map<string, Move[]>();
  for (const m of r.rejected) byParam.set(m.param, [...(byParam.get(m.param) ?? []), m]);
  for (const [param, moves] of byParam) {
    const items = moves.map((m) =>
      m.after === null
        ? `${fmtValue(m.to)} failed`
        : `${fmtValue(m.to)} (${fmtRate(m.after)}, ${pct(m.after / m.before - 1)} vs ${fmtValue(m.from)}${
          m.after > m.before ? ", within noise" : ""
        })`
    );
    out.push(`- ${paramLabel(param, space[param])}: ${items.join("; ")}`);
  }
  return out;
}

/** The ceiling (the loop on replayed batches) and how much of it the best configuration reaches. */
function headroomSection(r: SearchResult): string[] {
  const out = ["", "## Headroom", ""];
  if (r.ceiling === null) {
    out.push(
      r.ceilingFailure ? `The ceiling trial failed: ${r.ceilingFailure}` : "No ceiling trial was run.",
    );
    return out;
  }
  out.push(
    `Ceiling: **${fmtRate(r.ceiling)} samples/s**, the training loop on batches replayed from memory ` +
      "(`cacheLoader`): what it reaches when loading costs nothing.",
  );
  if (r.best !== null) {
    const share = meanOf(r.best) / r.ceiling;
    out.push(
      share >= 0.95
        ? `The best configuration reaches ${
          (share * 100).toFixed(0)
        }% of it: data loading is no longer the limit.`
        : share < 0.05
        ? `The best configuration reaches ${
          (share * 100).toFixed(1)
        }% of it: the loop does next to nothing ` +
          "without loading (a module with no `step` measures the loader flat out), so all of its time is loading."
        : `The best configuration reaches ${(share * 100).toFixed(0)}% of it: ${
          fmtRate(r.ceiling - meanOf(r.best))
        } samples/s (${pct(r.ceiling / meanOf(r.best) - 1)}) of headroom remain in data loading.`,
    );
  }
  return out;
}

/** The pipeline's verdict in the best configuration's last trial, with its stages' figures. */
function bottleneckSection(r: SearchResult): string[] {
  const out = ["", "## Bottleneck", ""];
  const bm = r.best?.metrics;
  if (!bm) {
    out.push("Unknown (no successful trial).");
    return out;
  }
  const verdict = bm.bottleneck === null ? "no stage stands out" : `**${bm.bottleneck}**`;
  const wait = bm.dataWaitFraction;
  out.push(
    `The pipeline's verdict in the best configuration's last trial: ${verdict}. The loop waited for data ` +
      `${(wait * 100).toFixed(0)}% of its time${
        wait < 0.05 ? " (the training step itself is the limit)" : ""
      }.`,
    "",
  );
  if (bm.stages.length > 0) {
    out.push("| stage | concurrency | items/s | ms/item | busy |", "| --- | ---: | ---: | ---: | ---: |");
    for (const s of bm.stages) {
      out.push(
        `| ${s.name} | ${s.concurrency} | ${fmtRate(s.itemsPerSec)} | ${s.meanMs?.toFixed(2) ?? "–"} | ` +
          `${s.busy === null ? "–" : `${(s.busy * 100).toFixed(0)}%`} |`,
      );
    }
  }
  return out;
}

/** Each stage's contention curve: a table per stage, and its plot when one was drawn. */
function curvesSection(r: SearchResult, ctx: ReportContext): string[] {
  const { space } = ctx;
  const out: string[] = [];
  if (r.curves.length > 0) out.push("", "## Contention curves", "");
  for (const c of r.curves) {
    const others = Object.entries(c.fixed).filter(([k]) => k !== c.param).map(([k, v]) =>
      `${paramLabel(k, space[k])} ${fmtValue(v)}`
    );
    out.push(`### ${c.stage}`, "", `Others fixed: ${others.join(", ") || "none"}.`, "");
    out.push(
      "| concurrency | samples/s | ms/item | stage items/s | busy |",
      "| ---: | ---: | ---: | ---: | ---: |",
    );
    for (const p of c.points) {
      out.push(
        `| ${p.concurrency} | ${p.samplesPerSec === null ? "failed" : fmtRate(p.samplesPerSec)} | ` +
          `${p.stageMeanMs?.toFixed(2) ?? "–"} | ${
            p.stageItemsPerSec === null ? "–" : fmtRate(p.stageItemsPerSec)
          } | ` +
          `${p.stageBusy === null ? "–" : `${(p.stageBusy * 100).toFixed(0)}%`} |`,
      );
    }
    if (ctx.plots.includes(curveFile(c))) out.push("", `![contention curve of ${c.stage}](${curveFile(c)})`);
    out.push("");
  }
  return out;
}

/** Where every trial is kept, the throughput plot, and the failed trials with their reasons. */
function trialsSection(ctx: ReportContext, failed: readonly TrialRecord[]): string[] {
  const out = ["## Trials", ""];
  if (ctx.plots.includes("trials.svg")) out.push("![throughput per trial](trials.svg)", "");
  out.push("Every trial with its configuration and metrics: `trials.jsonl`; their output: `logs/`.", "");
  if (failed.length > 0) {
    out.push("Failed trials:", "", "| trial | what | reason |", "| ---: | --- | --- |");
    for (const t of failed) out.push(`| ${t.id} | ${t.note} | ${oneLine(t.reason ?? "")} |`);
    out.push("");
  }
  return out;
}

/** "±2.1%, 2 measurements". */
function spread(e: Evaluated): string {
  const n = e.samples.length;
  return n < 2 ? "1 measurement" : `±${(spreadOf(e) * 50).toFixed(1)}%, ${n} measurements`;
}

function fmtMin(sec: number): string {
  const m = Math.floor(sec / 60), s = Math.round(sec % 60);
  return m === 0 ? `${s} s` : `${m} min ${String(s).padStart(2, "0")} s`;
}

function oneLine(s: string): string {
  return s.replace(/\s*\n\s*/g, " ").replace(/\|/g, "\\|").slice(0, 300);
}

/** A configuration as `demux concurrency 3, backend subprocess`. */
export function configText(space: SearchSpace, config: Config): string {
  return Object.entries(space).map(([k, p]) => `${paramLabel(k, p)} ${fmtValue(config[k])}`).join(", ");
}
