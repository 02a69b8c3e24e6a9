/**
 * The one idiom for the Promise forms of sluice's synchronous FFI work (`decodeVideo`, `demuxVideo`, `probe`,
 * `decodeVideoNvdec`, ...): the work runs now, on the calling thread, and its result or error settles a Promise.
 * @module
 */

/** Runs `work` now and returns a Promise of its result, rejected (never thrown) when it throws. */
export function settle<T>(work: () => T): Promise<T> {
  try {
    return Promise.resolve(work());
  } catch (e) {
    return Promise.reject(e);
  }
}
