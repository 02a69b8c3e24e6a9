import assert from "node:assert/strict";
import { fetchBytes } from "../../src/data/fetch.ts";
import { FetchError } from "../../src/errors.ts";
import { serveDir } from "./http_server.ts";

async function withFile<T>(fn: (dir: string, bytes: Uint8Array) => Promise<T>): Promise<T> {
  const dir = await Deno.makeTempDir({ prefix: "sluice-fetch-" });
  const bytes = new Uint8Array(100_000).map((_, i) => (i * 31 + 7) & 255);
  await Deno.writeFile(`${dir}/a.bin`, bytes);
  try {
    return await fn(dir, bytes);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("local files: whole, ranged, and a clear error for a missing file", async () => {
  await withFile(async (dir, bytes) => {
    assert.deepEqual(await fetchBytes(`${dir}/a.bin`), bytes);
    assert.deepEqual(await fetchBytes(`${dir}/a.bin`, { range: [10, 5000] }), bytes.slice(10, 5000));
    await assert.rejects(() => fetchBytes(`${dir}/missing.mp4`), (e: unknown) => {
      assert.ok(e instanceof FetchError);
      assert.match(e.message, /missing\.mp4.*no such file/);
      return true;
    });
  });
});

Deno.test("HTTP: same bytes as the file, range requests, retries on 503", async () => {
  await withFile(async (dir, bytes) => {
    await using srv = serveDir(dir);
    assert.deepEqual(await fetchBytes(`${srv.base}a.bin`), bytes);
    assert.deepEqual(await fetchBytes(`${srv.base}a.bin`, { range: [1000, 2000] }), bytes.slice(1000, 2000));
    assert.deepEqual(await fetchBytes(`${srv.base}flaky/2/a.bin`, { backoffMs: 5 }), bytes);
    assert.equal(srv.hits.get("/flaky/2/a.bin"), 3, "two 503s, then success");
  });
});

Deno.test("HTTP: a 404 fails at once, naming the URL and status", async () => {
  await withFile(async (dir) => {
    await using srv = serveDir(dir);
    await assert.rejects(() => fetchBytes(`${srv.base}nothere.mp4`, { backoffMs: 5 }), (e: unknown) => {
      assert.ok(e instanceof FetchError);
      assert.equal(e.status, 404);
      assert.equal(e.attempts, 1);
      assert.match(e.message, /nothere\.mp4.*HTTP 404/);
      return true;
    });
    assert.equal(srv.hits.get("/nothere.mp4"), 1);
  });
});

Deno.test("HTTP: persistent 5xx and dropped connections fail after the retries", async () => {
  await withFile(async (dir) => {
    await using srv = serveDir(dir);
    await assert.rejects(
      () => fetchBytes(`${srv.base}status/502`, { retries: 2, backoffMs: 5 }),
      (e: unknown) => {
        assert.ok(e instanceof FetchError);
        assert.equal(e.status, 502);
        assert.equal(e.attempts, 3);
        return true;
      },
    );
    assert.equal(srv.hits.get("/status/502"), 3);
    await assert.rejects(
      () => fetchBytes(`${srv.dropBase}a.bin`, { retries: 1, backoffMs: 5 }),
      (e: unknown) => {
        assert.ok(e instanceof FetchError);
        assert.equal(e.attempts, 2);
        assert.match(e.message, /a\.bin/);
        return true;
      },
    );
    assert.equal(srv.hits.get("/drop/a.bin"), 2);
  });
});

Deno.test("HTTP: a refused connection is retried and then reported", async () => {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  await assert.rejects(
    () => fetchBytes(`http://127.0.0.1:${port}/x.mp4`, { retries: 1, backoffMs: 5 }),
    (e: unknown) => e instanceof FetchError && e.attempts === 2 && e.status === 0,
  );
});
