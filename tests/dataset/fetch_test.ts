import assert from "node:assert/strict";
import { FETCH_DEFAULTS, fetchBytes, fetchOnClock, type FetchOptions } from "../../src/dataset/fetch.ts";
import { FetchError, InvalidArgumentError } from "../../src/errors.ts";
import { serveDir } from "../helpers/http_server.ts";
import { FakeClock } from "../helpers/fake_clock.ts";
import { deadline } from "../backend/helpers.ts";

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

/** Runs `fn`, which must reject; returns the error and the elapsed ms. A hang past `guardMs` fails the test. */
async function timedRejection(
  fn: () => Promise<unknown>,
  guardMs: number,
): Promise<{ e: unknown; ms: number }> {
  const t0 = performance.now();
  const hang = new Error(`no outcome within ${guardMs} ms (a hang)`);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const guard = new Promise<never>((_, reject) => timer = setTimeout(() => reject(hang), guardMs));
  try {
    await Promise.race([fn(), guard]);
  } catch (e) {
    if (e === hang) throw e;
    return { e, ms: performance.now() - t0 };
  } finally {
    clearTimeout(timer);
  }
  throw new Error("expected a rejection");
}

Deno.test("HTTP: a server that never answers is a connect timeout, retried, named in the FetchError", async () => {
  await withFile(async (dir) => {
    await using srv = serveDir(dir);
    const { e, ms } = await timedRejection(
      () => fetchBytes(`${srv.dropBase}silent/a.bin`, { connectTimeoutMs: 300, retries: 1, backoffMs: 10 }),
      10_000,
    );
    assert.ok(e instanceof FetchError, String(e));
    assert.equal(e.phase, "connect");
    assert.deepEqual(e.limit, { name: "connectTimeoutMs", ms: 300 });
    assert.equal(e.attempts, 2);
    assert.match(e.message, /silent\/a\.bin: fetch failed after 2 attempt\(s\): no response within 300 ms/);
    assert.equal(srv.hits.get("/silent/a.bin"), 2);
    assert.ok(ms >= 600, `${ms} ms`);
  });
});

Deno.test("HTTP: a body that stops mid-way (Content-Length promised more) is an idle timeout", async () => {
  await withFile(async (dir) => {
    await using srv = serveDir(dir);
    const { e } = await timedRejection(
      () => fetchBytes(`${srv.dropBase}hang/a.bin`, { idleTimeoutMs: 300, retries: 2, backoffMs: 10 }),
      10_000,
    );
    assert.ok(e instanceof FetchError, String(e));
    assert.equal(e.phase, "body");
    assert.equal(e.status, 200);
    assert.deepEqual(e.limit, { name: "idleTimeoutMs", ms: 300 });
    assert.equal(e.attempts, 3);
    assert.match(e.message, /hang\/a\.bin.*no byte for 300 ms \(body; idleTimeoutMs 300\)/);
  });
});

/** A fetch on `clock`, its outcome kept (`settled`: whether it has one yet). */
function onClock(clock: FakeClock, source: string, opts: FetchOptions) {
  const run = { settled: false, error: undefined as unknown };
  const done = fetchOnClock(clock, source, opts).then(
    () => assert.fail("the fetch succeeded"),
    (e) => run.error = e,
  ).finally(() => run.settled = true);
  return Object.assign(run, { done: () => deadline(10_000, "the fetch", () => done).then(() => run.error) });
}

/**
 * Waits (real time: the fetch's requests are real) until `clock` has a timer that `when` accepts, and returns
 * when it is due.
 */
async function timerDue(clock: FakeClock, when: (at: number) => boolean, what: string): Promise<number> {
  return await deadline(10_000, what, async () => {
    for (;;) {
      const at = clock.due.find(when);
      if (at !== undefined) return at;
      await new Promise((r) => setTimeout(r, 5));
    }
  });
}

Deno.test("HTTP: a stalled file costs exactly deadlineMs, however many retries are allowed", async () => {
  await withFile(async (dir) => {
    await using srv = serveDir(dir);
    const clock = new FakeClock();
    try {
      const fetch = onClock(clock, `${srv.dropBase}hang/a.bin`, {
        idleTimeoutMs: 400,
        deadlineMs: 1000,
        retries: 100,
        backoffMs: 10,
      });
      // Attempts 1 and 2: half the body, then no byte for 400 ms; then a backoff of 10 and 20 ms (± 25%).
      for (const backoff of [10, 20]) {
        await clock.runUntil(await timerDue(clock, (at) => at === clock.now() + 400, "the idle limit"));
        const at = await timerDue(
          clock,
          (at) => at > clock.now() && at <= clock.now() + 1.25 * backoff,
          "backoff",
        );
        assert.equal(fetch.settled, false);
        await clock.runUntil(at);
      }
      // Attempt 3 starts about 830 ms in: its idle limit would fire after the item's deadline, which wins.
      await timerDue(clock, (at) => at === clock.now() + 400, "the third attempt's idle limit");
      await clock.runUntil(999);
      assert.equal(fetch.settled, false, "nothing fires before the deadline");
      await clock.runUntil(1000);
      const e = await fetch.done();
      assert.ok(e instanceof FetchError, String(e));
      assert.equal(e.attempts, 3);
      assert.equal(e.phase, "body");
      assert.equal(e.limit?.name, "deadlineMs");
      assert.match(e.message, /the deadline of the item ran out \(body; deadlineMs \d+\)/);
      assert.equal(srv.hits.get("/hang/a.bin"), 3);
    } finally {
      clock.close();
    }
  });
});

Deno.test("HTTP: the default limits bound a stalled file (no options given)", async () => {
  // Worst case of a stall: every attempt waits out the connect or idle limit, plus the backoff between them,
  // and never more than the deadline: far below the ~121 s of a 30 s timeout with 3 retries.
  const perAttempt = Math.max(FETCH_DEFAULTS.connectTimeoutMs, FETCH_DEFAULTS.idleTimeoutMs);
  const backoff = FETCH_DEFAULTS.backoffMs * (2 ** FETCH_DEFAULTS.retries - 1) * 1.25;
  const worst = Math.min(FETCH_DEFAULTS.deadlineMs, (FETCH_DEFAULTS.retries + 1) * perAttempt + backoff);
  assert.ok(worst <= 30_000, `${worst} ms`);
  await withFile(async (dir) => {
    await using srv = serveDir(dir);
    const clock = new FakeClock();
    try {
      const fetch = onClock(clock, `${srv.dropBase}silent/a.bin`, { retries: 0 });
      await clock.runUntil(FETCH_DEFAULTS.connectTimeoutMs - 1);
      assert.equal(fetch.settled, false);
      await clock.runUntil(FETCH_DEFAULTS.connectTimeoutMs);
      const e = await fetch.done();
      assert.ok(e instanceof FetchError);
      assert.deepEqual(e.limit, { name: "connectTimeoutMs", ms: FETCH_DEFAULTS.connectTimeoutMs });
    } finally {
      clock.close();
    }
  });
});

Deno.test("HTTP: a server that stalls once then recovers is retried to success", async () => {
  await withFile(async (dir, bytes) => {
    await using srv = serveDir(dir);
    const got = await fetchBytes(`${srv.dropBase}stallfirst/1/a.bin`, {
      connectTimeoutMs: 300,
      backoffMs: 10,
    });
    assert.deepEqual(got, bytes);
    assert.equal(srv.hits.get("/stallfirst/1/a.bin"), 2);
  });
});

Deno.test("HTTP: a slow body that keeps arriving is not idle: it completes", async () => {
  await withFile(async (dir, bytes) => {
    const small = bytes.subarray(0, 8 * 1024);
    await Deno.writeFile(`${dir}/small.bin`, small);
    await using srv = serveDir(dir);
    // 8 chunks 50 ms apart: 400 ms in all, longer than the idle limit but never idle that long.
    const got = await fetchBytes(`${srv.dropBase}trickle/small.bin`, { idleTimeoutMs: 250 });
    assert.deepEqual(got, small);
  });
});

Deno.test("HTTP: the caller's signal wins over the retries and timers", async () => {
  await withFile(async (dir) => {
    await using srv = serveDir(dir);
    const clock = new FakeClock();
    try {
      const ac = new AbortController();
      const fetch = onClock(clock, `${srv.dropBase}silent/a.bin`, {
        signal: ac.signal,
        connectTimeoutMs: 5000,
      });
      await deadline(10_000, "the request", async () => {
        while (srv.hits.get("/silent/a.bin") !== 1) await new Promise((r) => setTimeout(r, 5));
      });
      assert.equal(clock.pending, 2, "its attempt and connect limits are set");
      ac.abort(new Error("epoch cancelled"));
      assert.match(String(await fetch.done()), /epoch cancelled/);
      assert.equal(clock.now(), 0, "no limit fired");
      assert.equal(clock.pending, 0, "the limits are cleared");
    } finally {
      clock.close();
    }
  });
});

Deno.test("fetch options are checked", async () => {
  for (
    const bad of [{ idleTimeoutMs: 0 }, { deadlineMs: -1 }, { retries: 1.5 }, { connectTimeoutMs: Infinity }]
  ) {
    await assert.rejects(
      () => fetchBytes("http://127.0.0.1:9/x", bad),
      InvalidArgumentError,
      JSON.stringify(bad),
    );
  }
});
