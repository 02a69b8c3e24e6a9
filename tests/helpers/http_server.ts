/**
 * A real HTTP server on 127.0.0.1 (port chosen by the OS) for data tests: serves files from a directory with
 * `Range` support, and has misbehaving routes: `/flaky/N/...` answers 503 the first N times per path,
 * `/status/CODE` answers CODE, `/slow/MS/...` answers a whole-file request (no `Range`) only after MS ms (a
 * throttled link; ranged reads, such as indexing's, come at once); and a second, raw TCP server (`dropBase`) whose first path segment picks how it
 * misbehaves with the file named by the rest:
 * - `/drop/F` (or just `/F`): announces F's full length, sends half of it, closes (a Content-Length lie);
 * - `/hang/F`: announces the full length, sends half, then holds the connection open, sending nothing;
 * - `/silent/F`: reads the request and never answers;
 * - `/trickle/F`: sends F one 1 KiB chunk every 50 ms (slow, never idle for long);
 * - `/stallfirst/N/F`: silent for the first N requests of that path, then serves F properly.
 * @module
 */

/** A running test server. */
export interface TestServer extends AsyncDisposable {
  /** `http://127.0.0.1:PORT/` */
  base: string;
  /** The raw TCP server of misbehaving routes (`${dropBase}drop/a.bin`, ...; see the module docs). */
  dropBase: string;
  /** Requests seen per path (the raw server counts its paths as `/drop/<path>`, `/hang/<path>`, ...). */
  hits: Map<string, number>;
}

/** Serves `dir`; see the module docs. */
export function serveDir(dir: string): TestServer {
  const hits = new Map<string, number>();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const path = decodeURIComponent(new URL(req.url).pathname);
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const status = path.match(/^\/status\/(\d+)/);
    if (status) return new Response("nope", { status: Number(status[1]) });
    const flaky = path.match(/^\/flaky\/(\d+)(\/.*)$/);
    if (flaky && hits.get(path)! <= Number(flaky[1])) return new Response("busy", { status: 503 });
    const slow = path.match(/^\/slow\/(\d+)(\/.*)$/);
    if (slow && !req.headers.has("range")) await new Promise((r) => setTimeout(r, Number(slow[1])));
    const file = flaky ? flaky[2] : slow ? slow[2] : path;
    let bytes: Uint8Array;
    try {
      bytes = await Deno.readFile(`${dir}${file}`);
    } catch {
      return new Response("not found", { status: 404 });
    }
    const range = req.headers.get("range")?.match(/^bytes=(\d+)-(\d*)$/);
    if (range) {
      const start = Number(range[1]);
      const end = range[2] === "" ? bytes.length - 1 : Math.min(Number(range[2]), bytes.length - 1);
      return new Response(bytes.slice(start, end + 1), {
        status: 206,
        headers: { "content-range": `bytes ${start}-${end}/${bytes.length}` },
      });
    }
    return new Response(bytes as Uint8Array<ArrayBuffer>);
  });
  const addr = server.addr as Deno.NetAddr;
  const dropper = serveDropping(dir, hits);
  return {
    base: `http://127.0.0.1:${addr.port}/`,
    dropBase: dropper.base,
    hits,
    async [Symbol.asyncDispose]() {
      await server.shutdown();
      await dropper.close();
    },
  };
}

function serveDropping(dir: string, hits: Map<string, number>): { base: string; close(): Promise<void> } {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns = new Set<Promise<void>>();
  const accepting = (async () => {
    try {
      for await (const conn of listener) {
        const p = handleDrop(conn, dir, hits).finally(() => conns.delete(p));
        conns.add(p);
      }
    } catch {
      // listener closed
    }
  })();
  return {
    base: `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}/`,
    async close() {
      listener.close();
      await accepting;
      await Promise.all(conns);
    },
  };
}

async function handleDrop(conn: Deno.Conn, dir: string, hits: Map<string, number>): Promise<void> {
  const waitForClient = async () => {
    const buf = new Uint8Array(1024);
    while ((await conn.read(buf)) !== null) { /* until the client goes away */ }
  };
  try {
    const buf = new Uint8Array(8192);
    let head = "";
    while (!head.includes("\r\n\r\n")) {
      const n = await conn.read(buf);
      if (n === null) return;
      head += new TextDecoder().decode(buf.subarray(0, n));
    }
    let path = decodeURIComponent(head.split(" ")[1] ?? "/");
    // A path without a mode is a drop (counted as /drop/<path>).
    if (!/^\/(drop|hang|silent|trickle|stallfirst\/\d+)\//.test(path)) path = `/drop${path}`;
    const hit = (hits.get(path) ?? 0) + 1;
    hits.set(path, hit);
    const m = path.match(/^\/(drop|hang|silent|trickle|stallfirst\/(\d+))(\/.*)$/)!;
    const [mode, file] = [m[1].replace(/\/.*/, ""), m[3]];
    if (mode === "silent" || (mode === "stallfirst" && hit <= Number(m[2]))) return await waitForClient();
    const bytes = await Deno.readFile(`${dir}${file}`);
    const header = `HTTP/1.1 200 OK\r\ncontent-length: ${bytes.length}\r\nconnection: close\r\n\r\n`;
    await conn.write(new TextEncoder().encode(header));
    if (mode === "stallfirst") await writeAll(conn, bytes);
    else if (mode === "trickle") {
      for (let at = 0; at < bytes.length; at += 1024) {
        await writeAll(conn, bytes.subarray(at, at + 1024));
        await new Promise((r) => setTimeout(r, 50));
      }
    } else {
      await writeAll(conn, bytes.subarray(0, bytes.length >> 1));
      if (mode === "hang") await waitForClient();
    }
  } catch {
    // the client went away first: fine
  } finally {
    conn.close();
  }
}

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  for (let at = 0; at < bytes.length;) at += await conn.write(bytes.subarray(at));
}
