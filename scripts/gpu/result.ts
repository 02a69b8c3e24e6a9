/**
 * One phase's results, written as it goes: each check appends one JSON line to `$GPU_RESULT` the moment it ends
 * (and a `running` line when it starts), so a phase killed at its time limit keeps every check before the one it
 * hung in, and the report names that one. `scripts/gpu/report.py` turns the lines into the report (docs/gpu.md,
 * "The report").
 * @module
 */

/** A check's verdict: `skip` when it could not run here (the reason says why), never to hide a failure. */
export type Status = "pass" | "fail" | "skip";

/** What a check returns. */
export interface Outcome {
  status: Status;
  /** Why (required for fail and skip; for pass, what was seen, optionally). */
  reason?: string;
  /** Measured values, by name (numbers in the units their names say: `Ms`, `Db`, `PerSecond`...). */
  figures?: Record<string, unknown>;
}

/** A passing outcome. */
export const pass = (figures: Record<string, unknown> = {}, reason?: string): Outcome => ({
  status: "pass",
  figures,
  ...(reason ? { reason } : {}),
});
/** A failing outcome. */
export const fail = (reason: string, figures: Record<string, unknown> = {}): Outcome => ({
  status: "fail",
  reason,
  figures,
});
/** A check that could not run here. */
export const skip = (reason: string, figures: Record<string, unknown> = {}): Outcome => ({
  status: "skip",
  reason,
  figures,
});
/** `pass` when `ok`, else `fail` with `reason`. */
export const verdict = (ok: boolean, reason: string, figures: Record<string, unknown>): Outcome =>
  ok ? pass(figures) : fail(reason, figures);

/** A table for the report (e.g. the decoder caps, frames/s by decoder count). */
export interface Table {
  title: string;
  columns: string[];
  rows: (string | number | boolean | null)[][];
}

/** The result file of one phase. */
export class PhaseResult {
  readonly #path: string;

  /** @param path the JSON-lines file (`$GPU_RESULT`); without one, lines go to stdout */
  constructor(path = Deno.env.get("GPU_RESULT") ?? "") {
    this.#path = path;
  }

  #write(line: unknown): void {
    const text = JSON.stringify(line, (_k, v) => typeof v === "bigint" ? Number(v) : v) + "\n";
    if (this.#path) Deno.writeTextFileSync(this.#path, text, { append: true });
    else console.log(text.trimEnd());
  }

  /**
   * Runs one check and records its outcome with its duration. An exception is a `fail` naming the error's class
   * and message; the phase goes on with its next check.
   */
  async check(name: string, fn: () => Outcome | Promise<Outcome>): Promise<Outcome> {
    this.#write({ running: name });
    const t0 = performance.now();
    let out: Outcome;
    try {
      out = await fn();
    } catch (e) {
      const err = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
      out = fail(err.split("\n").slice(0, 6).join(" / "));
    }
    this.#write({ check: name, ...out, seconds: round((performance.now() - t0) / 1000, 2) });
    console.error(`gpu: ${name}: ${out.status}${out.reason ? ` (${out.reason})` : ""}`);
    return out;
  }

  /** Records facts of the phase (shown under it in the report). */
  info(key: string, value: unknown): void {
    this.#write({ info: { [key]: value } });
  }

  /** Records a table (shown under the phase in the report). */
  table(t: Table): void {
    this.#write({ table: t });
  }
}

/** `x` rounded to `digits` decimals. */
export function round(x: number, digits = 1): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/** Median of `xs` (NaN when empty). */
export function median(xs: number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** PSNR in dB of two equal-length byte arrays (Infinity when equal). */
export function psnr(a: Uint8Array, b: Uint8Array): number {
  if (a.length !== b.length) throw new Error(`PSNR of ${a.length} and ${b.length} bytes`);
  let se = 0;
  for (let i = 0; i < a.length; i++) {
    const d = a[i] - b[i];
    se += d * d;
  }
  return se === 0 ? Infinity : 10 * Math.log10((255 * 255) / (se / a.length));
}

/** A JSON-friendly dB figure (Infinity → "inf"). */
export function db(x: number): number | string {
  return Number.isFinite(x) ? round(x, 2) : "inf";
}
