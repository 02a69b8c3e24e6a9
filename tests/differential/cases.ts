/**
 * Replay cases of the differential harness: every configuration that ever mismatched, kept in
 * tests/differential/cases/ as `<name>.json` and replayed by replay_test.ts (it must give no mismatch):
 *
 * ```
 * { "what": "the bug it caught", "found": "differential seed S config I",
 *   "open"?: "where the fix of a bug not fixed here is tracked",
 *   "config": { ...config.ts's DiffConfig: rows (shared files by name, made files by their spec), options },
 *   "mismatches": [ ...what differed when it was found ] }
 * ```
 * A case marked `open` replays a known open bug (known.ts): it passes while the mismatch stays, and fails once
 * it is gone, so that the mark (and the known.ts entry) is removed when the fix lands.
 *
 * `deno run -A tests/differential/cases.ts <repro.json> <name> "<what it caught>" [open]` turns a repro the
 * harness saved (run.ts `--save`) into a case.
 * @module
 */
import type { DiffConfig } from "./config.ts";
import type { Mismatch } from "./harness.ts";
import { SHARED_MEDIA_DIR } from "../helpers/media.ts";

/** The directory of the cases. */
export const CASE_DIR: string = decodeURIComponent(new URL("./cases/", import.meta.url).pathname);

/** A replay case's contents. */
export interface ReplayCase {
  what: string;
  found: string;
  open?: string;
  config: DiffConfig;
  mismatches: Mismatch[];
}

/** Every case: its name and contents, sorted by name. */
export function listCases(): { name: string; replay: ReplayCase }[] {
  return [...Deno.readDirSync(CASE_DIR)]
    .filter((e) => e.name.endsWith(".json"))
    .map((e) => e.name)
    .sort()
    .map((n) => ({
      name: n.replace(/\.json$/, ""),
      replay: JSON.parse(Deno.readTextFileSync(`${CASE_DIR}${n}`)),
    }));
}

/** The shared files a case needs that are missing here (the case is then skipped), by name. */
export function missingShared(c: ReplayCase): string[] {
  return c.config.rows.flatMap((r) => {
    if (!("shared" in r.source)) return [];
    try {
      Deno.statSync(`${SHARED_MEDIA_DIR}${r.source.shared}`);
      return [];
    } catch {
      return [r.source.shared];
    }
  });
}

if (import.meta.main) {
  const [saved, name, what, open] = Deno.args;
  const repro = JSON.parse(await Deno.readTextFile(saved));
  const c: ReplayCase = {
    what,
    found: repro.found,
    ...(open !== undefined ? { open } : repro.known !== undefined ? { open: repro.known } : {}),
    config: repro.config,
    mismatches: repro.mismatches.slice(0, 8),
  };
  await Deno.writeTextFile(`${CASE_DIR}${name}.json`, JSON.stringify(c, null, 2) + "\n");
  console.log(`wrote ${CASE_DIR}${name}.json`);
}
