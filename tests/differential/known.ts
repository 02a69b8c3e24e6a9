/**
 * Mismatches of the differential harness that are open bugs tracked elsewhere: a configuration whose only
 * mismatches match one is reported as a known hit (with the issue, and saved as a repro) instead of failing the
 * run, so that CI keeps catching new mismatches. Remove an entry once its fix lands; its replay case in
 * cases/ then fails until its `open` mark is removed too.
 * @module
 */
import type { Mismatch } from "./harness.ts";

/** An open bug: which mismatches are its, and where it is tracked. */
export interface KnownBug {
  issue: string;
  matches: (m: Mismatch) => boolean;
}

export const KNOWN_BUGS: KnownBug[] = [];

/** The known bug a mismatch is, if any. */
export function knownBug(m: Mismatch): KnownBug | undefined {
  return KNOWN_BUGS.find((b) => b.matches(m));
}
