/**
 * Failures the fuzzer has found that are open bugs tracked elsewhere: a failing case whose detail matches one
 * is reported as known (with the issue) instead of failing the run, so that CI keeps catching new failures.
 * Remove an entry once its fix lands; its fixtures in tests/fixtures/fuzz/ then run as regression tests.
 * @module
 */

/** An open bug: what its failures look like, and where it is tracked. */
export interface KnownBug {
  pattern: RegExp;
  issue: string;
}

export const KNOWN_BUGS: KnownBug[] = [
  {
    // decodeVideo with frameRate sizes its output from the window or the packets' timestamps, not the stream.
    pattern: /^RangeError: (Array buffer allocation failed|Invalid typed array length)[\s\S]*FrameSink/,
    issue: "issue 16 'Unbounded output' (src/media/decode.ts, clips-media)",
  },
];

/** The known bug a failure's detail matches, if any. */
export function knownBug(detail: string): KnownBug | undefined {
  return KNOWN_BUGS.find((b) => b.pattern.test(detail));
}
