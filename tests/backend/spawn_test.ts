import assert from "node:assert/strict";
import { BackendExitedError, FetchError, MediaError, PipelineFailure } from "../../src/errors.ts";
import type { BackendSource } from "../../src/backend/spawn.ts";
import { PipelineBuilder } from "../../src/pipeline/builder.ts";
import { VideoPackets } from "../../src/media/packets.ts";
import { bytes, sampleItems } from "./fixtures/items.ts";
import { sharedMedia } from "../helpers/media.ts";
import { alive, gone, normalize, spawnFixture } from "./helpers.ts";

const spawn = spawnFixture;

async function collect(source: AsyncIterable<unknown>): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const x of source) out.push(x);
  return out;
}

Deno.test("every item kind round-trips through a child, over several epochs of one process", async () => {
  const { source } = spawn("sample", { continuous: true });
  const pid = source.pid;
  try {
    const expected = sampleItems();
    for (let epoch = 0; epoch < 3; epoch++) {
      const got = await collect(source);
      assert.equal(got.length, expected.length);
      got.forEach((x, i) => {
        if (expected[i] instanceof VideoPackets) assert.ok(x instanceof VideoPackets, `item ${i} class`);
        assert.deepEqual(normalize(x), normalize(expected[i]), `epoch ${epoch} item ${i}`);
      });
      assert.equal(source.pid, pid);
    }
    const s = source.stats();
    assert.equal(s.epochs, 3);
    assert.equal(s.items, 3 * expected.length);
    assert.equal(s.failures, 0);
    assert.ok(s.peakBuffered <= 3);
  } finally {
    await source.close();
  }
  assert.ok(!alive(pid));
});

Deno.test({
  name: "real VideoPackets are byte-identical after the trip",
  ignore: sharedMedia("h264_nasa_bframes_aac.mp4") === null,
  async fn() {
    const path = sharedMedia("h264_nasa_bframes_aac.mp4")!;
    const { readPackets } = await import("../helpers/read_packets.ts");
    const oracle = readPackets(path).serialize();
    const { source } = spawn("realPackets", { path, times: 2 });
    try {
      const got = await collect(source);
      assert.equal(got.length, 3);
      for (const [i, x] of got.entries()) {
        const vp = i < 2 ? (x as { label: number; packets: VideoPackets }).packets : x as VideoPackets;
        if (i < 2) assert.equal((x as { label: number }).label, i);
        assert.ok(vp instanceof VideoPackets);
        assert.ok(vp.numPackets > 300);
        assert.deepEqual(vp.serialize(), oracle);
      }
    } finally {
      await source.close();
    }
  },
});

Deno.test("per-item failures in the child arrive as counted failures with their errors' classes, logged once each, not thrown", async () => {
  const { source, lines } = spawn("failing", { count: 40, failEvery: 5 });
  try {
    const got = await collect(source) as { i: number }[];
    assert.deepEqual(
      got.map((x) => x.i).sort((a, b) => a - b),
      [...Array(40).keys()].filter((i) => i % 5 !== 0),
    );
    assert.equal(source.failures, 8);
    assert.deepEqual(source.stats().failuresByStage, { check: 8 });
    const failureLines = lines.filter((l) => /stage "check" failed on \d+: (RangeError|MediaError)/.test(l));
    assert.equal(failureLines.length, 8, lines.join("\n"));
    assert.equal(new Set(failureLines).size, 8);
    // The child's own log lines are not forwarded a second time.
    assert.equal(lines.filter((l) => l.includes('stage "check" failed')).length, 8);
    // Each error is rebuilt with its class and fields: 5, 15, 25, 35 threw MediaErrors, 0, 10, 20, 30 RangeErrors.
    const errors = [...source.errors].sort((a, b) => Number(a.item) - Number(b.item));
    assert.deepEqual(
      errors.map((e) => [e.stage, e.item]),
      [0, 5, 10, 15, 20, 25, 30, 35].map((i) => ["check", `${i}`]),
    );
    for (const { item, error } of errors) {
      const i = Number(item);
      if ((i / 5) % 2 === 1) {
        assert.ok(error instanceof MediaError, `${item}: ${error}`);
        assert.equal(error.source, `/videos/${i}.mp4`);
        assert.equal(error.operation, "demux");
        assert.equal(error.code, -22);
        assert.equal(error.message, `/videos/${i}.mp4: demux failed: no keyframe`);
      } else {
        assert.ok(error instanceof RangeError, `${item}: ${error}`);
        assert.equal((error as Error).message, `item ${i} is a multiple of 5`);
      }
      assert.match(
        (error as Error).stack!,
        new RegExp(`at backend child ${source.pid} \\(.*echo_backend\\.ts#failing\\)`),
      );
    }
  } finally {
    await source.close();
  }
});

Deno.test("a pipeline that throws in the child throws that error in the parent, with its class and cause", async () => {
  const { source } = spawn("fatal", { after: 4 });
  const pid = source.pid;
  const got: unknown[] = [];
  await assert.rejects(
    async () => {
      for await (const x of source) got.push(x);
    },
    (e: unknown) => {
      // The child's pipeline wraps its source's error in a PipelineFailure; both arrive as they were.
      assert.ok(e instanceof PipelineFailure, `${e}`);
      assert.ok(e.cause instanceof Error && e.cause.message === "the source broke on purpose", `${e.cause}`);
      assert.match(e.stack!, new RegExp(`at backend child ${pid} `));
      return true;
    },
  );
  // Items the child's pipeline still held when its source threw are discarded by that pipeline.
  assert.deepEqual(got, [0, 1, 2, 3].slice(0, got.length));
  assert.ok(!alive(pid), "the child was reaped");
  await source.close();
});

Deno.test("an error a backend iterable throws arrives as itself: class, fields, cause", async () => {
  const { source } = spawn("throwsTyped", { after: 2 });
  const got: unknown[] = [];
  await assert.rejects(
    async () => {
      for await (const x of source) got.push(x);
    },
    (e: unknown) => {
      assert.ok(e instanceof FetchError, `${e}`);
      assert.equal(e.source, "https://example.com/a.mp4");
      assert.equal(e.status, 503);
      assert.equal(e.attempts, 4);
      assert.equal(e.phase, "status");
      assert.equal(e.message, "https://example.com/a.mp4: fetch failed after 4 attempt(s): HTTP 503");
      assert.ok(e.cause instanceof MediaError, `${e.cause}`);
      assert.equal(e.cause.source, "/videos/a.mp4");
      assert.equal(e.cause.code, -2);
      return true;
    },
  );
  assert.deepEqual(got, [0, 1]);
  assert.ok(source.failure.reason instanceof FetchError);
  await source.close();
});

Deno.test("a bad export fails with the child's error naming it", async () => {
  const { source } = spawn("notAFunction", {});
  await assert.rejects(() => collect(source), /no exported function "notAFunction"/);
  await source.close();
});

Deno.test("a built Pipeline (not a builder) is served too", async () => {
  const { source } = spawn("built", { count: 5 });
  try {
    assert.deepEqual(await collect(source), [0, 1, 2, 3, 4].map((i) => ({ i, sq: i * i })));
  } finally {
    await source.close();
  }
});

Deno.test("a child exiting non-zero gives BackendExitedError with its code and last stderr lines", async () => {
  const { source, lines } = spawn("exits", { code: 3 });
  await assert.rejects(() => collect(source), (e: unknown) => {
    assert.ok(e instanceof BackendExitedError);
    assert.equal(e.code, 3);
    assert.equal(e.signal, null);
    assert.ok(e.stderrTail.includes("about to exit on purpose"), e.stderrTail.join("|"));
    assert.match(e.message, /exited with code 3/);
    return true;
  });
  assert.ok(lines.some((l) => l.startsWith(`[backend ${source.pid}] about to exit on purpose`)));
  await source.close();
});

Deno.test("killing the child mid-stream gives BackendExitedError (signal) within 1 s", async () => {
  const { source, lines } = spawn("endless", { size: 512 });
  const it = source[Symbol.asyncIterator]();
  for (let i = 0; i < 10; i++) assert.deepEqual((await it.next()).value, bytes(512, i));
  Deno.kill(source.pid, "SIGKILL");
  const t0 = performance.now();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const guard = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error("no BackendExitedError within 1 s")), 1000);
  });
  try {
    await Promise.race([
      assert.rejects(async () => {
        for (;;) if ((await it.next()).done) break;
      }, (e: unknown) => e instanceof BackendExitedError && e.signal === "SIGKILL" && e.code === null),
      guard,
    ]);
  } finally {
    clearTimeout(timer);
  }
  console.log(`  BackendExitedError ${(performance.now() - t0).toFixed(1)} ms after SIGKILL`);
  assert.ok(lines.some((l) => l.endsWith("endless backend started")));
  assert.ok(lines.some((l) => l.endsWith("console.log goes to stderr, not into the frame stream")));
  await source.close();
});

Deno.test("break in the consumer terminates the child (no process left)", async () => {
  const { source } = spawn("endless", { size: 100 });
  const pid = source.pid;
  let n = 0;
  for await (const _ of source) if (++n === 50) break;
  assert.ok(!alive(pid), `child ${pid} still exists after break`);
  assert.equal(source.stats().state, "exited");
});

Deno.test("aborting the signal terminates the child and rejects the pending next()", async () => {
  const ac = new AbortController();
  const { source } = spawn("endless", { size: 100 }, { signal: ac.signal });
  const it = source[Symbol.asyncIterator]();
  await it.next();
  ac.abort(new Error("enough"));
  await assert.rejects(async () => {
    for (;;) await it.next();
  }, /enough/);
  await source.close();
  assert.ok(!alive(source.pid));
});

Deno.test("a parent that dies without closing leaves no child behind", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--quiet", "-A", new URL("./fixtures/parent_throws.ts", import.meta.url).href],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.success, false);
  assert.match(new TextDecoder().decode(out.stderr), /the parent fails without closing its backend/);
  const pids = new TextDecoder().decode(out.stdout).trim().split("\n").map(Number);
  assert.equal(pids.length, 2);
  for (const pid of pids) assert.ok(await gone(pid), `child ${pid} outlived its parent`);
});

Deno.test("memory stays bounded when the consumer stalls", async () => {
  const bufferSize = 3;
  const { source } = spawn("counted", { count: 1000, size: 1 << 20 }, { bufferSize, statsIntervalMs: 20 });
  const it = source[Symbol.asyncIterator]() as AsyncIterator<Uint8Array>;
  try {
    await it.next();
    // Stall: take nothing for a while, then look at both sides.
    await new Promise((r) => setTimeout(r, 1000));
    const s = source.stats();
    const childStats = s.child!.pipeline as { stages: { name: string; itemsOut: number }[] };
    const produced = childStats.stages.find((x) => x.name === "source")!.itemsOut;
    // 1 consumed + bufferSize in the parent + the child's own pipeline queues (sink of 3, one in hand).
    assert.ok(
      produced <= 1 + bufferSize + 5,
      `the child produced ${produced} items while the consumer stalled`,
    );
    assert.ok(s.child!.sent <= 1 + bufferSize, `the child sent ${s.child!.sent}`);
    assert.ok(s.buffered <= bufferSize);
    assert.ok(
      s.peakBufferedBytes <= bufferSize * ((1 << 20) + 64),
      `parent held ${s.peakBufferedBytes} bytes`,
    );
    // Then it flows again, still bounded.
    for (let i = 1; i < 100; i++) assert.equal((await it.next()).value[0], i & 255);
    assert.ok(source.stats().peakBufferedBytes <= bufferSize * ((1 << 20) + 64));
  } finally {
    await source.close();
  }
});

Deno.test("a BackendSource feeds a frontend pipeline as a continuous source, one child for all epochs", async () => {
  const { source } = spawn("counted", { count: 25, size: 16, continuous: true });
  const pid = source.pid;
  const pipeline = new PipelineBuilder()
    .addSource(source as BackendSource, { continuous: true })
    .pipe((b: unknown) => (b as Uint8Array)[0])
    .build();
  try {
    for (let epoch = 0; epoch < 2; epoch++) {
      const got = await collect(pipeline);
      assert.equal(got.length, 25);
      assert.equal(source.pid, pid);
    }
    assert.equal(source.stats().epochs, 2);
    assert.ok(alive(pid));
  } finally {
    await pipeline.stop();
    await source.close();
  }
  assert.ok(!alive(pid));
});

Deno.test("the child runs with glibc's mmap threshold pinned at 32 KiB unless the caller's env sets it", async () => {
  const read = async (env?: Record<string, string>) => {
    const { source } = spawn("envValue", { name: "MALLOC_MMAP_THRESHOLD_" }, env ? { env } : {});
    try {
      const items: unknown[] = [];
      for await (const x of source) items.push(x);
      return items;
    } finally {
      await source.close();
    }
  };
  assert.deepEqual(await read(), [{ value: String(32 * 1024) }]);
  assert.deepEqual(await read({ MALLOC_MMAP_THRESHOLD_: "262144" }), [{ value: "262144" }]);
});
