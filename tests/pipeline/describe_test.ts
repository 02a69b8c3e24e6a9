import assert from "node:assert/strict";
import { describeItem } from "../../src/pipeline/describe.ts";
import { failureLine } from "../../src/pipeline/stage.ts";

Deno.test("describeItem: scalars, buffers, and objects by a field that identifies them", () => {
  assert.equal(describeItem("x.mp4"), '"x.mp4"');
  assert.equal(describeItem(7), "7");
  assert.equal(describeItem(null), "null");
  assert.equal(describeItem(new Uint8Array(12)), "Uint8Array(12 bytes)");
  assert.equal(describeItem({ id: 3, data: new Uint8Array(9) }), "id=3");
  assert.equal(describeItem({ data: new Uint8Array(9) }), "Object");
  const long = "/data/" + "d".repeat(120) + "/v.mp4";
  assert.equal(describeItem({ path: long }), long, "a path is never cut short");
});

Deno.test("describeItem: a loader's items by the file and window inside them, not 'Object' or 'Array(4)'", () => {
  const meta = (n: number) => ({ path: `/data/v${n}.mp4`, start: n / 3, end: n / 3 + 0.32, epoch: 0 });
  // what the replace stage fails on: a clip (its meta) or a failed clip (its failure)
  assert.equal(describeItem({ meta: meta(1), data: new Uint8Array(4) }), "/data/v1.mp4 [0.333, 0.653)");
  assert.equal(describeItem({ failed: { ...meta(2), stage: "demux" } }), "/data/v2.mp4 [0.667, 0.987)");
  // what the collate stage fails on: a batch's slots, each a clip (or none and its failures)
  const slots = [1, 2, 3, 4].map((n) => ({ clip: { meta: meta(n) }, failures: [] }));
  assert.equal(
    describeItem(slots),
    "[/data/v1.mp4 [0.333, 0.653), /data/v2.mp4 [0.667, 0.987), /data/v3.mp4 [1, 1.32), …] (4 items)",
  );
  assert.equal(describeItem([]), "[] (0 items)");
  assert.equal(describeItem([5]), "[5] (1 item)");
  assert.equal(
    failureLine("collate", describeItem(slots.slice(0, 1)), new Error("boom")),
    'sluice pipeline: stage "collate" failed on [/data/v1.mp4 [0.333, 0.653)] (1 item): Error: boom',
  );
});
