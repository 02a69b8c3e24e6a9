/** The preparation jobs' terminal line: fitted to any width, the figures that matter kept longest. */
import assert from "node:assert/strict";
import { progressLine, type ProgressSnapshot } from "../../src/prep/progress.ts";

const snap: ProgressSnapshot = {
  job: "transcode",
  total: 12_000,
  finished: 4_321,
  done: 4_000,
  skipped: 300,
  failed: 21,
  bytesIn: 1e12,
  bytesOut: 1e11,
  elapsedSec: 3600,
  itemsPerSec: 123.4,
  mbInPerSec: 456.7,
  mbOutPerSec: 45.6,
  realtime: 300,
  etaSec: 3725,
};

Deno.test("progressLine: never wider than the terminal; figures drop from the end, then the bar narrows", () => {
  const full = progressLine(snap);
  assert.equal(
    full,
    "transcode [#########...............] 4321/12000 36%  ETA 1:02:05  (300 skipped, 21 failed)  123.4/s  " +
      "456.7 MB/s in",
  );
  for (let columns = 1; columns <= 200; columns++) {
    const line = progressLine(snap, columns);
    assert.ok(line.length <= columns, `${columns} columns: ${line.length} (${line})`);
  }
  // 79 columns (an 80-column terminal, its last one kept free): the rates go, the count, ETA and failures stay.
  assert.match(
    progressLine(snap, 79),
    /^transcode \[[#.]{10,24}\] 4321\/12000 36% {2}ETA 1:02:05 {2}\(300 skipped, 21 failed\)$/,
  );
  assert.match(progressLine(snap, 40), /^transcode \[[#.]+\] 4321\/12000 36%$/);
  assert.equal(
    progressLine({ ...snap, skipped: 0, failed: 0, etaSec: null }, 200).includes("ETA --:--"),
    true,
  );
});
