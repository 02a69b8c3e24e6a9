/**
 * Progress of a long preparation job (transcode, pack): counts, bytes, throughput and an ETA, reported as
 * {@link ProgressSnapshot}s, plus their two renderings: one line for a terminal ({@link progressLine}) and the
 * final table ({@link summaryTable}). Non-terminal output is the snapshots themselves as JSON lines.
 * @module
 */

import { bytesText } from "../memory/available.ts";

export { bytesText };

/** One finished item, as far as progress is concerned. */
export interface ItemResult {
  status: "done" | "skipped" | "failed";
  bytesIn: number;
  bytesOut: number;
  /** Seconds of media written (for the "× realtime" speed), 0 when not media. */
  mediaSec?: number;
}

/** The state of a job at one moment. */
export interface ProgressSnapshot {
  /** "transcode", "pack", ... */
  job: string;
  /** Items the job has in all. */
  total: number;
  /** Items finished in any way (done + skipped + failed). */
  finished: number;
  /** Items worked on successfully. */
  done: number;
  /** Items found done by an earlier run. */
  skipped: number;
  /** Items that failed (listed, not fatal). */
  failed: number;
  /** Bytes read for the items done. */
  bytesIn: number;
  /** Bytes written for the items done. */
  bytesOut: number;
  /** Seconds since the job started. */
  elapsedSec: number;
  /** Items done (not skipped) per second. */
  itemsPerSec: number;
  /** Megabytes (10^6) read per second. */
  mbInPerSec: number;
  /** Megabytes (10^6) written per second. */
  mbOutPerSec: number;
  /** Seconds of media written per second of wall time. */
  realtime: number;
  /** Seconds left at the current pace, null before the first item is done. */
  etaSec: number | null;
}

/** Counts items as they finish and turns them into snapshots. */
export class ProgressTracker {
  readonly #job: string;
  readonly #total: number;
  readonly #t0 = performance.now();
  #done = 0;
  #skipped = 0;
  #failed = 0;
  #bytesIn = 0;
  #bytesOut = 0;
  #mediaSec = 0;

  constructor(job: string, total: number) {
    this.#job = job;
    this.#total = total;
  }

  /** Records one finished item. */
  add(r: ItemResult): void {
    if (r.status === "done") this.#done++;
    else if (r.status === "skipped") this.#skipped++;
    else this.#failed++;
    if (r.status === "done") {
      this.#bytesIn += r.bytesIn;
      this.#bytesOut += r.bytesOut;
      this.#mediaSec += r.mediaSec ?? 0;
    }
  }

  /** The state now. */
  snapshot(): ProgressSnapshot {
    const elapsed = (performance.now() - this.#t0) / 1000;
    const finished = this.#done + this.#skipped + this.#failed;
    const per = (x: number) => elapsed > 0 ? x / elapsed : 0;
    // Skipped items cost a probe, not an encode: the pace is that of the items actually worked on.
    const worked = this.#done + this.#failed;
    const left = this.#total - finished;
    return {
      job: this.#job,
      total: this.#total,
      finished,
      done: this.#done,
      skipped: this.#skipped,
      failed: this.#failed,
      bytesIn: this.#bytesIn,
      bytesOut: this.#bytesOut,
      elapsedSec: round(elapsed, 3),
      itemsPerSec: round(per(this.#done), 3),
      mbInPerSec: round(per(this.#bytesIn) / 1e6, 3),
      mbOutPerSec: round(per(this.#bytesOut) / 1e6, 3),
      realtime: round(per(this.#mediaSec), 2),
      etaSec: left === 0 ? 0 : worked === 0 ? null : round((elapsed / worked) * left, 1),
    };
  }
}

function round(x: number, digits: number): number {
  const k = 10 ** digits;
  return Math.round(x * k) / k;
}

/** `1:02:03` / `2:03` for seconds. */
export function clock(sec: number): string {
  const s = Math.max(0, Math.round(sec));
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
  const mm = h > 0 ? String(m).padStart(2, "0") : String(m);
  return `${h > 0 ? `${h}:` : ""}${mm}:${String(r).padStart(2, "0")}`;
}

/**
 * One terminal line of at most `columns` characters:
 * `transcode [######......] 12/40 30%  ETA 0:11  (1 failed)  2.5/s  41.2 MB/s in`. When it would not fit,
 * the figures at the end go first (MB/s, then items/s, then the failure count, then the ETA), then the bar
 * narrows: a line the terminal wraps cannot be redrawn in place.
 */
export function progressLine(s: ProgressSnapshot, columns = Infinity): string {
  const frac = s.total > 0 ? Math.min(1, s.finished / s.total) : 1;
  const extra = [s.skipped ? `${s.skipped} skipped` : "", s.failed ? `${s.failed} failed` : ""].filter(
    Boolean,
  );
  const fields = [
    `${s.finished}/${s.total} ${Math.round(frac * 100)}%`,
    s.etaSec === null ? "ETA --:--" : `ETA ${clock(s.etaSec)}`,
    ...(extra.length ? [`(${extra.join(", ")})`] : []),
    `${s.itemsPerSec.toFixed(1)}/s`,
    `${s.mbInPerSec.toFixed(1)} MB/s in`,
  ];
  const MIN_BAR = 10, MAX_BAR = 24;
  const frame = s.job.length + 4; // "job [" + "] "
  let n = fields.length;
  while (n > 1 && frame + MIN_BAR + fields.slice(0, n).join("  ").length > columns) n--;
  const tail = fields.slice(0, n).join("  ");
  const bar = Math.max(0, Math.min(MAX_BAR, columns - frame - tail.length));
  const fill = Math.round(frac * bar);
  const line = `${s.job} [${"#".repeat(fill)}${".".repeat(bar - fill)}] ${tail}`;
  return line.length <= columns ? line : line.slice(0, Math.max(0, columns));
}

/** The final table of a job: counts, bytes in and out, speed, and the failures with their reasons. */
export function summaryTable(s: ProgressSnapshot, failures: { path: string; error: string }[]): string {
  const ratio = s.bytesIn > 0 ? `${(s.bytesOut / s.bytesIn * 100).toFixed(1)}% of input` : "";
  const rows: [string, string][] = [
    ["items", `${s.total} (${s.done} done, ${s.skipped} already done, ${s.failed} failed)`],
    ["bytes in", bytesText(s.bytesIn)],
    ["bytes out", `${bytesText(s.bytesOut)}${ratio ? `  (${ratio})` : ""}`],
    ["time", clock(s.elapsedSec)],
    [
      "speed",
      `${s.itemsPerSec.toFixed(2)} items/s, ${s.mbInPerSec.toFixed(1)} MB/s in, ${
        s.mbOutPerSec.toFixed(1)
      } MB/s out` +
      (s.realtime > 0 ? `, ${s.realtime.toFixed(1)}x realtime` : ""),
    ],
  ];
  const w = Math.max(...rows.map(([k]) => k.length));
  const lines = rows.map(([k, v]) => `${k.padEnd(w)}  ${v}`);
  if (failures.length > 0) {
    lines.push(`failed (${failures.length}, skipped; the rest of the run went on):`);
    for (const f of failures) lines.push(`  ${f.path}: ${f.error}`);
  }
  return lines.join("\n");
}
