/**
 * Why a test is skipped: `Deno.test({ ignore })` prints only "ignored", so the helpers that decide a skip say
 * why once per process on stderr (a user's clone has no `../shared`; a machine may lack the ffmpeg CLI or a C
 * compiler).
 * @module
 */

const said = new Set<string>();

/** Prints `reason` once per process and returns true, so it reads as `ignore: missing && skipBecause("…")`. */
export function skipBecause(reason: string): true {
  if (!said.has(reason)) {
    said.add(reason);
    console.error(`tests skipped here: ${reason}`);
  }
  return true;
}
