/**
 * Every replay case of tests/differential/cases/ (cases.ts): the configuration that once mismatched runs through
 * the loader again and every clip it delivers is compared with the oracle: no mismatch (or, for a case marked
 * `open`, the known bug still there). Needs the ffmpeg CLI and PyAV (the oracles); a case over shared files is
 * skipped, saying why, where ../shared/media lacks them.
 */
import assert from "node:assert/strict";
import { hasFfmpegCliSync } from "../helpers/media.ts";
import { hasPyav } from "../helpers/audio_oracle.ts";
import { skipBecause } from "../helpers/skip.ts";
import { listCases, missingShared } from "./cases.ts";
import { runConfig } from "./harness.ts";

const READY = hasFfmpegCliSync() && hasPyav();
if (!READY) {
  skipBecause("the differential replay cases need the ffmpeg CLI and PyAV (/usr/bin/python3 with av)");
}

for (const { name, replay } of listCases()) {
  const missing = missingShared(replay);
  if (missing.length > 0) {
    skipBecause(`differential case ${name} needs ${missing.join(", ")} from ../shared/media`);
  }
  Deno.test({
    name: `differential replay ${name}: ${replay.what.slice(0, 100)}`,
    ignore: !READY || missing.length > 0,
    async fn() {
      const r = await runConfig(replay.config);
      const lines = r.mismatches.map((m) => `${m.kind}: ${m.detail.split("\n")[0]}`);
      if (replay.open !== undefined) {
        assert.ok(
          r.mismatches.length > 0,
          `${name} no longer mismatches: its bug (${replay.open}) is fixed; remove its "open" mark and the ` +
            `known.ts entry`,
        );
        console.log(`  still open (${replay.open}): ${lines[0]}`);
        return;
      }
      assert.ok(r.clips > 0, `${name}: no clip was delivered`);
      assert.deepEqual(lines, [], `${name} (${replay.found})`);
    },
  });
}
