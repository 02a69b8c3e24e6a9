/**
 * Shared by the tests that start a batch server in a child process (`sluice serve`, `src/serve/main.ts`): wait
 * for the line that says it is up, and say hello to it as a client.
 * @module
 */
import assert from "node:assert/strict";
import {
  encodeMessage,
  type HelloMessage,
  MAX_SERVER_MESSAGE,
  MessageDecoder,
} from "../../src/serve/protocol.ts";

/**
 * Reads `reader` until what it read contains `marker` (`"listening on"` on `sluice serve`'s stderr, `'"ready"'`
 * on main.ts's stdout); fails naming `what` when the stream ends first.
 * @returns the text read
 */
export async function readUntil(
  reader: ReadableStreamDefaultReader<string>,
  marker: string,
  what: string,
): Promise<string> {
  let text = "";
  while (!text.includes(marker)) {
    const r = await reader.read();
    assert.ok(!r.done, `${what} exited before it said ${marker}: ${text}`);
    text += r.value;
  }
  return text;
}

/** A client connection to a server, after its hello. */
export interface Hello {
  conn: Deno.UnixConn;
  /** Cuts the server's messages (keep using it: it may hold messages after the first). */
  decoder: MessageDecoder;
  /** The server's first answer (`welcome`, or the `error` that refuses the client). */
  first: Record<string, unknown>;
}

/** Connects to the server at `socket` and says hello with `fields` (protocol 1 unless given). */
export async function sayHello(
  socket: string,
  fields: Omit<HelloMessage, "type" | "protocol"> & { protocol?: number },
): Promise<Hello> {
  const conn = await Deno.connect({ transport: "unix", path: socket });
  await conn.write(encodeMessage({ type: "hello", protocol: 1, ...fields }));
  const decoder = new MessageDecoder(MAX_SERVER_MESSAGE);
  const buf = new Uint8Array(1 << 16);
  let msgs: unknown[] = [];
  while (msgs.length === 0) {
    const n = await conn.read(buf);
    assert.ok(n !== null, "the server closed the connection before answering hello");
    msgs = decoder.push(buf.subarray(0, n));
  }
  return { conn, decoder, first: msgs[0] as Record<string, unknown> };
}
