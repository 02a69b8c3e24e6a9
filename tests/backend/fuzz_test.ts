/**
 * Fuzzes the frame reader, the control payload schemas and the item codec with random mutations and truncations of real streams (captured
 * from a backend child), fed at random chunk boundaries: every case must end in frames or a ProtocolError with
 * an offset inside the stream — never another exception, an out-of-bounds read, or a hang.
 */
import assert from "node:assert/strict";
import { ProtocolError } from "../../src/errors.ts";
import { MessageReader } from "../../src/backend/message_reader.ts";
import { decodeItem } from "../../src/backend/item_codec.ts";
import {
  controlPayload,
  creditPayload,
  encodeFrame,
  FrameType,
  HEADER_SIZE,
  jsonBytes,
} from "../../src/backend/protocol.ts";

const CHILD = new URL("../../src/backend/child.ts", import.meta.url).href;
const FIXTURE = new URL("./fixtures/echo_backend.ts", import.meta.url).href;

/** Runs the child directly for one epoch of `exportName` and returns the raw bytes of its stdout. */
async function captureStream(exportName: string, args: unknown): Promise<Uint8Array> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--quiet", "--allow-read", "--allow-env", CHILD],
    stdin: "piped",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const w = child.stdin.getWriter();
  await w.write(
    encodeFrame(
      FrameType.INIT,
      jsonBytes({ module: FIXTURE, export: exportName, args, statsIntervalMs: 5, heartbeatIntervalMs: 5 }),
      0,
    ),
  );
  await w.write(encodeFrame(FrameType.CREDIT, creditPayload(100_000), 1));
  await w.write(encodeFrame(FrameType.NEXT_EPOCH, new Uint8Array(0), 2));
  const chunks: Uint8Array[] = [];
  const reader = new MessageReader();
  let ended = false;
  for await (const c of child.stdout) {
    chunks.push(c);
    if (reader.push(c).some((f) => f.type === FrameType.END)) {
      ended = true;
      break;
    }
  }
  assert.ok(ended, "the child's stream has an END frame");
  await w.close();
  await child.status;
  const out = new Uint8Array(chunks.reduce((a, c) => a + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

let rng = 0x12345678;
function rand(n: number): number {
  rng ^= rng << 13;
  rng ^= rng >>> 17;
  rng ^= rng << 5;
  return (rng >>> 0) % n;
}

function mutate(s: Uint8Array): { bytes: Uint8Array; what: string } {
  const k = rand(7);
  const i = rand(s.length);
  if (k === 0) {
    const b = s.slice();
    b[i] ^= 1 << rand(8);
    return { bytes: b, what: `bit flip at ${i}` };
  }
  if (k === 1) {
    const b = s.slice();
    for (let j = 0, n = 1 + rand(8); j < n; j++) b[rand(b.length)] = rand(256);
    return { bytes: b, what: "random bytes" };
  }
  if (k === 2) return { bytes: s.slice(0, i), what: `truncated at ${i}` };
  if (k === 3) {
    const n = 1 + rand(40);
    return {
      bytes: new Uint8Array([...s.subarray(0, i), ...s.subarray(i + n)]),
      what: `deleted ${n} at ${i}`,
    };
  }
  if (k === 4) {
    const ins = Array.from({ length: 1 + rand(30) }, () => rand(256));
    return {
      bytes: new Uint8Array([...s.subarray(0, i), ...ins, ...s.subarray(i)]),
      what: `inserted at ${i}`,
    };
  }
  if (k === 5) {
    const j = rand(s.length);
    const [a, b] = i < j ? [i, j] : [j, i];
    return {
      bytes: new Uint8Array([...s.subarray(0, b), ...s.subarray(a, b), ...s.subarray(b)]),
      what: "dup",
    };
  }
  // Rewrite a payload byte inside an ITEM frame without touching headers: only the item codec can notice.
  const b = s.slice();
  b[Math.min(s.length - 1, HEADER_SIZE + i % Math.max(1, s.length - HEADER_SIZE))] ^= 0xff;
  return { bytes: b, what: "payload byte" };
}

/** Reads a whole (possibly damaged) stream in random chunks; returns frames read or the ProtocolError. */
function readAll(stream: Uint8Array): { frames: number; error: ProtocolError | undefined } {
  const r = new MessageReader({ source: "fuzz" });
  let frames = 0;
  try {
    for (let i = 0; i < stream.length;) {
      const n = 1 + rand(5000);
      for (const f of r.push(stream.subarray(i, i + n))) {
        frames++;
        if (f.type === FrameType.ITEM) decodeItem(f.payload, f.offset + HEADER_SIZE);
        else controlPayload(f.type, f.payload, f.offset + HEADER_SIZE, "fuzz");
      }
      i += n;
    }
    r.end();
    return { frames, error: undefined };
  } catch (e) {
    if (!(e instanceof ProtocolError)) throw e;
    return { frames, error: e };
  }
}

Deno.test("fuzz: mutated and truncated real backend streams give frames or a ProtocolError, nothing else", async () => {
  const streams = [
    await captureStream("sample", {}),
    await captureStream("failing", { count: 30, failEvery: 4 }),
  ];
  for (const s of streams) {
    const clean = readAll(s);
    assert.equal(clean.error, undefined);
    assert.ok(clean.frames > 5);
  }
  let cases = 0;
  let detected = 0;
  for (const s of streams) {
    for (let n = 0; n < 2500; n++) {
      const m = mutate(s);
      const r = readAll(m.bytes);
      cases++;
      if (r.error === undefined) continue;
      detected++;
      assert.ok(
        r.error.offset >= 0 && r.error.offset <= m.bytes.length,
        `${m.what}: offset ${r.error.offset}`,
      );
    }
    // Every proper truncation is detected: the stream is a sequence of whole frames.
    for (let cut = 1; cut < s.length; cut += 1 + rand(64)) {
      const r = readAll(s.subarray(0, cut));
      const boundary = r.error === undefined;
      if (boundary) assert.equal(readAll(s.subarray(cut)).error?.message.match(/sequence/)?.length, 1);
    }
  }
  assert.equal(cases, 5000);
  assert.ok(detected > cases / 2, `only ${detected} of ${cases} damaged streams were detected`);
});
