/**
 * Failures the fuzzer has found that are open bugs tracked elsewhere: a failing case that matches one is
 * reported as known (with the issue) instead of failing the run, so that CI keeps catching new failures.
 * Remove an entry once its fix lands; its fixtures in tests/fixtures/fuzz/ then run as plain regression tests.
 * @module
 */
import type { FuzzCase } from "./cases.ts";

/** An open bug: what its failures look like, and where it is tracked. */
export interface KnownBug {
  issue: string;
  /** Matches a failure's detail (an untyped error's message and stack). */
  pattern: RegExp;
  /**
   * Cases of this shape that blow the memory cap or the deadline are put down to the bug too (such a failure
   * has no message to match).
   */
  shape?: (c: FuzzCase) => boolean;
}

export const KNOWN_BUGS: KnownBug[] = [];

/** The known bug a failure matches, if any. */
export function knownBug(
  detail: string,
  kind: string,
  fuzzCase: FuzzCase | undefined,
): KnownBug | undefined {
  return KNOWN_BUGS.find((b) =>
    b.pattern.test(detail) ||
    ((kind === "memory" || kind === "hang") && fuzzCase !== undefined && b.shape?.(fuzzCase) === true)
  );
}
