import assert from "node:assert/strict";
import { collectTransferables, releaseBuffers } from "../../src/pipeline/transfer.ts";

Deno.test("releaseBuffers: detaches every buffer found in a value, once, and counts its bytes", () => {
  const shared = new ArrayBuffer(100);
  const value = {
    data: new Uint8Array(1000),
    pts: new Float64Array(8),
    parts: [new Uint8Array(shared, 0, 10), new Uint8Array(shared, 10, 10)],
    sab: new Uint8Array(new SharedArrayBuffer(16)),
    name: "clip",
  };
  assert.equal(releaseBuffers(value), 1000 + 64 + 100);
  assert.equal(value.data.length, 0);
  assert.equal(value.pts.length, 0);
  assert.equal(shared.detached, true);
  assert.equal(value.sab.length, 16, "shared memory is not ours to free");
  assert.equal(releaseBuffers(value), 0, "already released");
  assert.deepEqual(collectTransferables(value), []);
});
