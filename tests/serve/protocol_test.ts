import assert from "node:assert/strict";
import { encodeMessage, MessageDecoder, parseClientMessage } from "../../src/serve/protocol.ts";
import { ServeError } from "../../src/errors.ts";

Deno.test("frames split and joined across reads decode to the messages sent", () => {
  const msgs = [
    { type: "hello", protocol: 1, client: "é" },
    { type: "epoch", epoch: 3 },
    { type: "release", slot: 1, seq: 9 },
  ] as const;
  const stream = new Uint8Array(msgs.flatMap((m) => [...encodeMessage(m)]));
  for (const step of [1, 2, 5, stream.length]) {
    const d = new MessageDecoder(1024);
    const got: unknown[] = [];
    for (let i = 0; i < stream.length; i += step) got.push(...d.push(stream.subarray(i, i + step)));
    assert.deepEqual(got, msgs);
    assert.equal(d.pending, 0);
  }
});

Deno.test("oversized frames and frames that are not UTF-8 JSON are refused", () => {
  const big = new Uint8Array([0, 0, 1, 0]); // 65536
  assert.throws(
    () => new MessageDecoder(1024).push(big),
    (e) => e instanceof ServeError && e.code === "bad-frame",
  );
  const bad = new Uint8Array([2, 0, 0, 0, 0xc3, 0x28]);
  assert.throws(() => new MessageDecoder(1024).push(bad), /not UTF-8 JSON/);
  const notJson = new Uint8Array([1, 0, 0, 0, 0x7b]);
  assert.throws(() => new MessageDecoder(1024).push(notJson), /not UTF-8 JSON/);
});

Deno.test("client messages: every field is checked, with the field named", () => {
  assert.deepEqual(
    parseClientMessage({ type: "hello", protocol: 1, client: "c", rank: 1, worldSize: 2, x: 1 }),
    {
      type: "hello",
      protocol: 1,
      client: "c",
      rank: 1,
      worldSize: 2,
    },
  );
  assert.deepEqual(parseClientMessage({ type: "state", after: { epoch: 2, position: 7, x: 1 } }), {
    type: "state",
    after: { epoch: 2, position: 7 },
  });
  assert.deepEqual(parseClientMessage({ type: "state", epoch: 2, batches: 3 }), {
    type: "state",
    epoch: 2,
    batches: 3,
  });
  assert.deepEqual(parseClientMessage({ type: "stats", taken: 4 }), { type: "stats", taken: 4 });
  assert.deepEqual(parseClientMessage({ type: "stats" }), { type: "stats" }); // an older client's
  assert.deepEqual(parseClientMessage({ type: "taken", taken: 3 }), { type: "taken", taken: 3 });
  assert.deepEqual(parseClientMessage({ type: "resume", state: { epoch: 1 } }), {
    type: "resume",
    state: { epoch: 1 },
  });
  const bad: [unknown, RegExp][] = [
    [null, /JSON object/],
    [[1], /JSON object/],
    [{ type: "nope" }, /unknown message type/],
    [{ type: "hello", protocol: -1, client: "c" }, /"protocol"/],
    [{ type: "hello", protocol: 1, client: 5 }, /"client"/],
    [{ type: "hello", protocol: 1, client: "x".repeat(201) }, /"client"/],
    [{ type: "hello", protocol: 1, client: "c", rank: 2, worldSize: 2 }, /"rank"/],
    [{ type: "hello", protocol: 1, client: "c", rank: 0 }, /come together/],
    [{ type: "hello", protocol: 1, client: "c", device: 1.5 }, /"device"/],
    [{ type: "epoch", epoch: "1" }, /"epoch"/],
    [{ type: "release", slot: 0 }, /"seq"/],
    [{ type: "release", slot: 2 ** 60, seq: 0 }, /"slot"/],
    [{ type: "state" }, /"epoch"/],
    [{ type: "state", epoch: 1 }, /"batches"/],
    [{ type: "state", after: 3 }, /"after"/],
    [{ type: "state", after: { epoch: 0 } }, /"position"/],
    [{ type: "stats", taken: -1 }, /"taken"/],
    [{ type: "taken" }, /"taken"/],
    [{ type: "taken", taken: 1.5 }, /"taken"/],
    [{ type: "resume" }, /"state"/],
    [{ type: "resume", state: [1] }, /"state"/],
    [{ type: "preview", epoch: 0, batches: 1, path: "rel.png", html: false }, /absolute/],
    [{ type: "preview", epoch: 0, batches: 0, path: "/a.png", html: false }, /"batches"/],
    [{ type: "preview", epoch: 0, batches: 1, path: "/a.png" }, /"html"/],
  ];
  for (const [v, re] of bad) {
    assert.throws(
      () => parseClientMessage(v),
      (e) => e instanceof ServeError && e.code === "bad-message" && re.test(e.message),
      JSON.stringify(v),
    );
  }
});
