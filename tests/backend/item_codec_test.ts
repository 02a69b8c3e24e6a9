import assert from "node:assert/strict";
import { ProtocolError } from "../../src/errors.ts";
import { decodeItem, encodeItem, ItemTag } from "../../src/backend/item_codec.ts";
import { VideoPackets } from "../../src/media/packets.ts";
import { bytes, sampleItems, syntheticPackets } from "./fixtures/items.ts";
import { normalize } from "./helpers.ts";

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

/** The decoded packet table of a demuxed clip as it crosses the pipe: a plain object of typed arrays. */
function clipLike(seed: number) {
  const vp = syntheticPackets(seed);
  return {
    meta: { path: "clip.mp4", label: seed },
    packets: { ...vp, source: "clip.mp4", data: bytes(301, seed), extradata: bytes(13, seed) },
  };
}

Deno.test("JSON blobs start at multiples of 8 bytes of the payload, with zero padding before them", () => {
  const item = { a: bytes(3, 1), b: Float64Array.of(1.5, -2), c: BigInt64Array.of(-(2n ** 63n), 7n) };
  const payload = concat(encodeItem(item));
  const v = new DataView(payload.buffer);
  const jsonLen = v.getUint32(4, true), count = v.getUint32(8, true);
  assert.equal(count, 3);
  // Hand-computed layout: header 12 + 4·3, the JSON text, then each blob at the next multiple of 8.
  let at = 12 + 4 * count + jsonLen;
  for (const [i, size] of [[0, 3], [1, 16], [2, 16]]) {
    assert.equal(v.getUint32(12 + 4 * i, true), size);
    const start = Math.ceil(at / 8) * 8;
    assert.deepEqual([...payload.subarray(at, start)], new Array(start - at).fill(0));
    at = start + size;
  }
  assert.equal(at, payload.length);
  assert.deepEqual([...payload.subarray(payload.length - 16, payload.length - 8)], [
    0,
    0,
    0,
    0,
    0,
    0,
    0,
    0x80,
  ]);
});

Deno.test("decoded typed arrays are views of the one payload buffer, not copies", () => {
  const item = clipLike(3);
  const payload = concat(encodeItem(item));
  const back = decodeItem(payload) as ReturnType<typeof clipLike>;
  for (const k of ["pts", "dts", "duration", "flags", "offsets", "sizes", "data", "extradata"] as const) {
    assert.equal(back.packets[k].buffer, payload.buffer, k);
    assert.deepEqual(back.packets[k], item.packets[k], k);
  }
});

Deno.test("a payload that is not 8-aligned in its buffer still decodes (aligned copies)", () => {
  const item = clipLike(4);
  const encoded = concat(encodeItem(item));
  const shifted = new Uint8Array(encoded.length + 3);
  shifted.set(encoded, 3);
  const back = decodeItem(shifted.subarray(3)) as ReturnType<typeof clipLike>;
  assert.notEqual(back.packets.pts.buffer, shifted.buffer);
  assert.deepEqual(back.packets.pts, item.packets.pts);
  assert.deepEqual(back.packets.sizes, item.packets.sizes);
  assert.deepEqual(back.packets.data, item.packets.data);
});

Deno.test("non-zero or missing padding before a blob is a ProtocolError", () => {
  const payload = concat(encodeItem({ a: bytes(3, 1), b: Float64Array.of(1.5) }));
  const v = new DataView(payload.buffer);
  const firstBlobEnd = 12 + 8 + v.getUint32(4, true) + 3;
  assert.ok(firstBlobEnd % 8 !== 0, "the test needs padding after blob 0");
  const damaged = payload.slice();
  damaged[firstBlobEnd] = 1;
  assert.throws(() => decodeItem(damaged, 100), (e: unknown) => {
    assert.ok(e instanceof ProtocolError && /padding/.test(e.message), String(e));
    assert.equal(e.offset, 100 + firstBlobEnd);
    return true;
  });
  const unpadded = concat([
    payload.subarray(0, firstBlobEnd),
    payload.subarray(Math.ceil(firstBlobEnd / 8) * 8),
  ]);
  assert.throws(() => decodeItem(unpadded), ProtocolError);
});

Deno.test("decoded views survive transfer to a Worker: one buffer moves, the Worker reads every field", async () => {
  const item = clipLike(5);
  const back = decodeItem(concat(encodeItem(item))) as ReturnType<typeof clipLike>;
  const transfer = [
    ...new Set(Object.values(back.packets).flatMap((x) => ArrayBuffer.isView(x) ? [x.buffer] : [])),
  ];
  assert.equal(transfer.length, 1);
  const src = `self.onmessage = (e) => { const p = e.data.packets; self.postMessage({
    n: p.sizes.length, pts: [...p.pts].map(String), sizes: [...p.sizes], data: [...p.data], extra: [...p.extradata],
    shared: p.pts.buffer === p.data.buffer }); self.close(); };`;
  const worker = new Worker(URL.createObjectURL(new Blob([src], { type: "text/javascript" })), {
    type: "module",
  });
  const reply = new Promise<Record<string, unknown>>((resolve) => worker.onmessage = (e) => resolve(e.data));
  worker.postMessage(back, transfer as ArrayBuffer[]);
  const r = await reply;
  worker.terminate();
  assert.equal(back.packets.data.length, 0, "moved, not copied: the sender's views are detached");
  assert.equal(r.n, item.packets.sizes.length);
  assert.deepEqual(r.pts, [...item.packets.pts].map(String));
  assert.deepEqual(r.sizes, [...item.packets.sizes]);
  assert.deepEqual(r.data, [...item.packets.data]);
  assert.deepEqual(r.extra, [...item.packets.extradata]);
  assert.equal(r.shared, true);
});

Deno.test("nesting deeper than MAX_JSON_DEPTH: refused at encode time, a ProtocolError (not a stack overflow) at decode", async () => {
  const { InvalidArgumentError } = await import("../../src/errors.ts");
  const { MAX_JSON_DEPTH, controlPayload, FrameType } = await import("../../src/backend/protocol.ts");
  const nest = (depth: number): unknown => {
    let v: unknown = 1;
    for (let i = 0; i < depth; i++) v = [v];
    return v;
  };
  assert.deepEqual(roundTrip(nest(MAX_JSON_DEPTH)), nest(MAX_JSON_DEPTH));
  assert.throws(() => encodeItem(nest(MAX_JSON_DEPTH + 1)), InvalidArgumentError);
  // A hostile sender: JSON text nested a million levels deep.
  const json = new TextEncoder().encode("[".repeat(1e6) + "]".repeat(1e6));
  const payload = new Uint8Array(12 + json.length);
  const v = new DataView(payload.buffer);
  v.setUint8(0, ItemTag.JSON);
  v.setUint32(4, json.length, true);
  payload.set(json, 12);
  assert.throws(
    () => decodeItem(payload),
    (e: unknown) => e instanceof ProtocolError && /deeper/.test(e.message),
  );
  const stats = new TextEncoder().encode(
    `{"pipeline":${'{"a":'.repeat(1e5)}1${"}".repeat(1e5)},"epoch":0,"sent":0,"credits":0}`,
  );
  assert.throws(
    () => controlPayload(FrameType.STATS, stats, 0, "test"),
    (e: unknown) => e instanceof ProtocolError && /nests deeper than 256/.test(e.message),
  );
});
