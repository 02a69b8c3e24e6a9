/**
 * Option values the framework does not type itself: durations (`10m`, `90s`, `1h30m`) and sizes (`12GiB`,
 * `512MiB`). Each is a `string` option parsed in `run`; a bad value is a {@link UsageError} of the framework's
 * one shape.
 * @module
 */

import { UsageError } from "./args.ts";
import { parseByteSize } from "../prep/pack.ts";

const DURATION_UNITS: Record<string, number> = { h: 3600, m: 60, s: 1, ms: 0.001 };

/** `10m`, `90s`, `1h30m`, `1.5h`, or plain seconds, as seconds (> 0). */
export function parseDuration(option: string, text: string): number {
  const t = text.trim().toLowerCase();
  let total = 0;
  if (/^\d+(\.\d+)?$/.test(t)) total = Number(t);
  else {
    const parts = [...t.matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g)];
    if (parts.length === 0 || parts.map((p) => p[0]).join("") !== t) total = NaN;
    else for (const p of parts) total += Number(p[1]) * DURATION_UNITS[p[2]];
  }
  if (!(total > 0) || !Number.isFinite(total)) {
    throw new UsageError(`--${option} must be a duration like 10m, 90s or 1h30m, got "${text}"`);
  }
  return total;
}

/** `12GiB`, `512MiB`, `2G` (binary), `500MB` (decimal), or plain bytes, as bytes (> 0); `parseByteSize`'s rules. */
export function parseSize(option: string, text: string): number {
  try {
    return parseByteSize(text);
  } catch {
    throw new UsageError(`--${option} must be a size like 12GiB or 512MiB, got "${text}"`);
  }
}
