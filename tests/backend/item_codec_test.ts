import assert from "node:assert/strict";
import { ProtocolError } from "../../src/errors.ts";
import { decodeItem, encodeItem, ItemTag } from "../../src/backend/item_codec.ts";
import { VideoPackets } from "../../src/media/packets.ts";
import { bytes, sampleItems, syntheticPackets } from "./fixtures/items.ts";

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((a, p) => a + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

const roundTrip = (x: unknown) => decodeItem(concat(encodeItem(x)));

Deno.test("every sample item survives encode → decode", () => {
  for (const item of sampleItems()) {
    const back = roundTrip(item);
    if (item instanceof VideoPackets) {
      assert.ok(back instanceof VideoPackets);
      assert.deepEqual(back.serialize(), item.serialize());
    } else {
      assert.deepEqual(normalize(back), normalize(item));
    }
  }
});

/** VideoPackets compared by their serialization, everything else structurally. */
function normalize(x: unknown): unknown {
  if (x instanceof VideoPackets) return { vp: x.serialize() };
  if (Array.isArray(x)) return x.map(normalize);
  if (x !== null && typeof x === "object" && !ArrayBuffer.isView(x)) {
    return Object.fromEntries(Object.entries(x).map(([k, v]) => [k, normalize(v)]));
  }
  return x;
}

Deno.test("Uint8Array and VideoPackets go raw, typed arrays in JSON go as blobs, not base64", () => {
  const raw = bytes(1000, 1);
  const parts = encodeItem(raw);
  assert.equal(parts[0][0], ItemTag.BYTES);
  assert.equal(parts[1], raw); // no copy
  const vp = syntheticPackets(1);
  const vparts = encodeItem(vp);
  assert.equal(vparts[0][0], ItemTag.VIDEO_PACKETS);
  assert.deepEqual(vparts[1], vp.serialize());
  const json = concat(encodeItem({ a: raw, b: Float64Array.of(0.5) }));
  assert.equal(json[0], ItemTag.JSON);
  // The payload is the JSON header + text + the raw blobs: 1000 + 8 bytes of blob, a short JSON text.
  assert.ok(json.length < 1000 + 8 + 150, `payload of ${json.length} bytes looks like base64`);
  const back = decodeItem(json) as { a: Uint8Array; b: Float64Array };
  assert.ok(back.b instanceof Float64Array);
  assert.equal(back.b[0], 0.5);
  assert.deepEqual(back.a, raw);
});

Deno.test("typed array views keep only their own bytes", () => {
  const base = bytes(64, 3);
  const view = new Uint16Array(base.buffer, 8, 4);
  const back = roundTrip({ v: view }) as { v: Uint16Array };
  assert.deepEqual([...back.v], [...view]);
});

Deno.test("values that are not JSON-compatible are rejected at encode time", () => {
  assert.throws(() => encodeItem({ n: 1n }), /not JSON-compatible/);
  assert.throws(() => encodeItem(() => 1), /not JSON-compatible/);
  assert.throws(() => encodeItem({ "\u0000sluice": 1 }), /may not be/);
});

Deno.test("malformed payloads are ProtocolErrors with offsets inside the payload", () => {
  const good = concat(encodeItem({ a: bytes(10, 1), b: [1, 2] }));
  const cases: Uint8Array[] = [
    new Uint8Array(0),
    Uint8Array.of(99),
    good.subarray(0, 8),
    good.subarray(0, good.length - 1),
    concat([good, Uint8Array.of(0)]),
    concat([Uint8Array.of(ItemTag.VIDEO_PACKETS), bytes(20, 2)]),
  ];
  const badJson = good.slice();
  badJson[12 + 4] = 0xff; // first byte of the JSON text
  cases.push(badJson);
  for (const c of cases) {
    assert.throws(() => decodeItem(c, 1000), (e: unknown) => {
      assert.ok(e instanceof ProtocolError, String(e));
      assert.ok(e.offset >= 1000 && e.offset <= 1000 + c.length, `offset ${e.offset}`);
      return true;
    });
  }
  const forged = new TextEncoder().encode('{"x":{"\\u0000sluice":["Uint8Array",3]}}');
  const head = new Uint8Array(12);
  new DataView(head.buffer).setUint8(0, ItemTag.JSON);
  new DataView(head.buffer).setUint32(4, forged.length, true);
  assert.throws(() => decodeItem(concat([head, forged])), /blob index 3 out of range/);
});
