/**
 * Fault tests of the subprocess backend, each bounded by its own deadline: a child killed (SIGKILL) or stopped
 * (SIGSTOP) mid-stream, a hostile child whose frames break the protocol's rules, a consumer that stalls (which
 * must not look like a stalled child), and 10% broken inputs plus misbehaving HTTP servers through a backend
 * and a decode stage. Every test checks that no process is left behind.
 */
import assert from "node:assert/strict";
import { BackendExitedError, BackendStalledError, PipelineFailure, ProtocolError } from "../../src/errors.ts";
import { FrameType } from "../../src/backend/protocol.ts";
import { PipelineBuilder } from "../../src/pipeline/builder.ts";
import { generateClip, hasFfmpegCliSync } from "../helpers/media.ts";
import { serveDir } from "../helpers/http_server.ts";
import { alive, deadline, FIXTURE, spawnFixture } from "./helpers.ts";
import { FakeClock } from "../helpers/fake_clock.ts";

const spawn = spawnFixture;

Deno.test("SIGKILL of the child: a pipeline built with source.failure throws BackendExitedError itself", async () => {
  const { source } = spawn("endless", { size: 64 });
  const pid = source.pid;
  const pipeline = new PipelineBuilder()
    .addSource(source, { name: "backend", continuous: true })
    .pipe((b: unknown) => (b as Uint8Array).length)
    .build({ signal: source.failure });
  let seen = 0;
  try {
    await deadline(10_000, "SIGKILL", async () => {
      await assert.rejects(async () => {
        for await (const _ of pipeline) if (++seen === 20) Deno.kill(pid, "SIGKILL");
      }, (e: unknown) => {
        assert.ok(e instanceof BackendExitedError, `got ${e}`);
        assert.ok(!(e instanceof PipelineFailure));
        assert.equal(e.signal, "SIGKILL");
        return true;
      });
    });
    assert.ok(source.failure.aborted);
    assert.ok(source.failure.reason instanceof BackendExitedError);
  } finally {
    await pipeline.stop();
    await source.close();
  }
  assert.ok(seen >= 20);
  assert.ok(!alive(pid));
});

Deno.test("without source.failure the same death is a PipelineFailure whose cause is BackendExitedError", async () => {
  const { source } = spawn("endless", { size: 64 });
  const pipeline = new PipelineBuilder().addSource(source, { continuous: true }).build();
  try {
    await deadline(10_000, "SIGKILL", async () => {
      let n = 0;
      await assert.rejects(async () => {
        for await (const _ of pipeline) if (++n === 5) Deno.kill(source.pid, "SIGKILL");
      }, (e: unknown) => e instanceof PipelineFailure && e.cause instanceof BackendExitedError);
    });
  } finally {
    await pipeline.stop();
    await source.close();
  }
  assert.ok(!alive(source.pid));
});

/**
 * Stops `pid` (SIGSTOP) and waits until the kernel says it is stopped and the frames it wrote before are read
 * (real time passes, virtual time does not: whatever the parent reads now was heard at the same virtual time).
 */
async function stopChild(pid: number): Promise<void> {
  Deno.kill(pid, "SIGSTOP");
  while (!/^\d+ \(.*\) [tT]/.test(Deno.readTextFileSync(`/proc/${pid}/stat`))) {
    await new Promise((r) => setTimeout(r, 5));
  }
  await new Promise((r) => setTimeout(r, 200)); // the pipe drains
}

Deno.test("SIGSTOP of the child: a warning at stallWarningMs, BackendStalledError at stallTimeoutMs, no orphan", async () => {
  const clock = new FakeClock();
  const { source, lines } = spawn("endless", { size: 64 }, {
    heartbeatIntervalMs: 50,
    stallWarningMs: 400,
    stallTimeoutMs: 1500,
    clock,
  });
  const pid = source.pid;
  const it = source[Symbol.asyncIterator]();
  const warnings = () => lines.filter((l) => l.includes("warning: no frame"));
  try {
    for (let i = 0; i < 5; i++) await it.next();
    await stopChild(pid);
    await clock.runUntil(399); // silent since virtual time 0; the watch looks every 50 ms
    assert.deepEqual(warnings(), []);
    assert.equal(source.stats().stalled, false);
    await clock.runUntil(400);
    assert.equal(warnings().length, 1, lines.join("\n"));
    assert.match(warnings()[0], /for 0\.4 s: the child is stopped .*killed after 1\.5 s of silence/);
    assert.equal(source.stats().stalled, true);
    assert.equal(source.stats().stalls, 1);
    const failed = deadline(10_000, "SIGSTOP", () =>
      assert.rejects(async () => {
        for (;;) if ((await it.next()).done) break;
      }, (e: unknown) => {
        assert.ok(e instanceof BackendStalledError, `got ${e}`);
        assert.equal(e.silentMs, 1500);
        assert.match(e.message, /not even a heartbeat, for 1\.5 s \(stallTimeoutMs 1500\): killed/);
        return true;
      }));
    await clock.runUntil(1499);
    assert.ok(alive(pid), "killed before stallTimeoutMs");
    await clock.runUntil(1500);
    await failed;
    assert.equal(warnings().length, 1);
  } finally {
    clock.close();
    await source.close();
  }
  assert.ok(!alive(pid), `stopped child ${pid} left behind`);
});

Deno.test("a child stopped and continued: warned, then 'responding again', and the stream goes on", async () => {
  const clock = new FakeClock();
  const { source, lines } = spawn("endless", { size: 64 }, {
    heartbeatIntervalMs: 50,
    stallWarningMs: 300,
    stallTimeoutMs: 20_000,
    clock,
  });
  const it = source[Symbol.asyncIterator]();
  try {
    await deadline(15_000, "SIGSTOP/SIGCONT", async () => {
      for (let i = 0; i < 5; i++) await it.next();
      await stopChild(source.pid);
      await clock.runUntil(300);
      assert.equal(source.stats().stalled, true, lines.join("\n"));
      Deno.kill(source.pid, "SIGCONT");
      for (let i = 0; i < 50; i++) assert.equal((await it.next()).done, false);
    });
    assert.ok(lines.some((l) => l.includes("responding again")));
    assert.equal(source.stats().stalled, false);
    assert.equal(source.stats().stalls, 1);
  } finally {
    clock.close();
    await source.close();
  }
  assert.ok(!alive(source.pid));
});

Deno.test("a child slow to start (stopped before its first frame for longer than stallTimeoutMs) is not killed", async () => {
  // Deno starting on a loaded machine can take longer than a short stallTimeoutMs: until the child's first frame,
  // the start-up grace (10 s) applies to the kill as to the warning. SIGSTOP before any frame stands in for a
  // slow start.
  const clock = new FakeClock();
  const { source, lines } = spawn("counted", { count: 20, size: 16 }, {
    heartbeatIntervalMs: 50,
    stallWarningMs: 300,
    stallTimeoutMs: 600,
    clock,
  });
  Deno.kill(source.pid, "SIGSTOP");
  try {
    await clock.runUntil(9_999); // far past stallTimeoutMs, before the child said anything
    assert.equal(source.stats().stalls, 0, lines.join("\n"));
    assert.ok(alive(source.pid));
    Deno.kill(source.pid, "SIGCONT");
    let n = 0;
    await deadline(10_000, "slow start", async () => {
      for await (const _ of source) n++;
    });
    assert.equal(n, 20, lines.join("\n"));
  } finally {
    clock.close();
    await source.close();
  }
});

Deno.test("a consumer that stalls is not a stalled child: heartbeats keep it alive", async () => {
  const { source, lines } = spawn("counted", { count: 100, size: 16 }, {
    heartbeatIntervalMs: 50,
    stallWarningMs: 300,
    stallTimeoutMs: 600,
    bufferSize: 2,
  });
  const it = source[Symbol.asyncIterator]();
  try {
    await deadline(10_000, "consumer stall", async () => {
      await it.next();
      await new Promise((r) => setTimeout(r, 1500)); // 2.5 × stallTimeoutMs without taking an item
      assert.equal(source.stats().stalls, 0, lines.join("\n"));
      assert.ok(source.stats().silentMs < 300);
      let n = 1;
      for (;;) {
        const r = await it.next();
        if (r.done) break;
        n++;
      }
      assert.equal(n, 100);
    });
  } finally {
    await source.close();
  }
});

Deno.test("a slow but live child (an item every 400 ms) is never warned about", async () => {
  const { source, lines } = spawn("slow", { count: 4, intervalMs: 400 }, {
    heartbeatIntervalMs: 50,
    stallWarningMs: 300,
  });
  try {
    const got = await deadline(10_000, "slow child", async () => {
      const out: unknown[] = [];
      for await (const x of source) out.push(x);
      return out;
    });
    assert.deepEqual(got, [0, 1, 2, 3]);
    assert.equal(source.stats().stalls, 0, lines.join("\n"));
  } finally {
    await source.close();
  }
});

/** Frames a hostile child sends after READY, and what the parent must say about them. */
const READY = { type: FrameType.READY, json: { pid: 1 } };
const HOSTILE: [string, { type: number; json?: unknown; bytes?: number[]; item?: unknown }[], RegExp][] = [
  ["an ITEM before READY", [{ type: FrameType.ITEM, item: 1 }], /ITEM frame before READY/],
  [
    "more ITEMs than credits",
    [READY, ...Array(4).fill({ type: FrameType.ITEM, item: 1 })],
    /without a credit/,
  ],
  ["END with the wrong count", [READY, { type: FrameType.ITEM, item: 1 }, {
    type: FrameType.END,
    json: { epoch: 1, items: 5, failures: 0 },
  }], /END of epoch 1 with 5 items, expected epoch 1 with 1/],
  [
    "END of a later epoch",
    [READY, { type: FrameType.END, json: { epoch: 2, items: 0, failures: 0 } }],
    /END of epoch 2/,
  ],
  ["ITEM_ERROR with a non-numeric count", [READY, {
    type: FrameType.ITEM_ERROR,
    json: { stage: "x", count: "many", errors: [] },
  }], /field "count"/],
  ["ITEM_ERROR with errors that are not serialized errors", [READY, {
    type: FrameType.ITEM_ERROR,
    json: { stage: "x", count: 1, errors: [{ item: "1", error: { name: "MediaError" } }] },
  }], /field "errors"/],
  ["ITEM_ERROR with the old (version 3) messages field", [READY, {
    type: FrameType.ITEM_ERROR,
    json: { stage: "x", count: 1, messages: ["a line"] },
  }], /unknown field "messages"/],
  ["FATAL with a nested error of the wrong shape", [READY, {
    type: FrameType.FATAL,
    json: { error: { name: "Error", message: "m", cause: { $error: { name: 1, message: "m" } } } },
  }], /field "error"/],
  ["FATAL with an error field that is not JSON data", [READY, {
    type: FrameType.FATAL,
    json: { error: { name: "MediaError", message: "m", stack: 7 } },
  }], /field "error"/],
  ["STATS with an unknown field", [READY, {
    type: FrameType.STATS,
    json: { pipeline: null, epoch: 0, sent: 0, credits: 0, evil: 1 },
  }], /unknown field "evil"/],
  ["LOG that is not an object", [READY, { type: FrameType.LOG, json: ["x"] }], /not a JSON object/],
  ["a HEARTBEAT with a payload", [READY, { type: FrameType.HEARTBEAT, bytes: [1, 2] }], /must be empty/],
  ["a second READY", [READY, READY], /second READY/],
  ["an item that does not decode", [READY, { type: FrameType.ITEM, bytes: [9, 9] }], /unknown ITEM tag 9/],
];

for (const [what, frames, message] of HOSTILE) {
  Deno.test(`a hostile child: ${what} is a ProtocolError, and the child is killed`, async () => {
    const { source } = spawn("hostile", { frames }, { heartbeatIntervalMs: 60_000, bufferSize: 3 });
    try {
      await deadline(10_000, what, async () => {
        // Nothing is consumed (no credit goes back) until the parent has judged the stream.
        await new Promise((resolve) => source.failure.addEventListener("abort", resolve));
        await assert.rejects(async () => {
          for await (const _ of source) { /* the forged items, if any */ }
        }, (e: unknown) => {
          assert.ok(e instanceof ProtocolError, `got ${e}`);
          assert.match(e.message, message);
          return true;
        });
      });
      assert.ok(source.failure.reason instanceof ProtocolError);
    } finally {
      await source.close();
    }
    assert.ok(!alive(source.pid));
  });
}

Deno.test("the child checks the parent's frames too: a bad control stream stops it with a message", async () => {
  const { encodeFrame, creditPayload, jsonBytes } = await import("../../src/backend/protocol.ts");
  const child = new URL("../../src/backend/child.ts", import.meta.url).href;
  const init = jsonBytes({
    module: FIXTURE.href,
    export: "endless",
    args: { size: 1 },
    statsIntervalMs: 100,
  });
  const cases: [string, Uint8Array[], RegExp][] = [
    [
      "CREDIT before INIT",
      [encodeFrame(FrameType.CREDIT, creditPayload(1), 0)],
      /INIT must be the first frame/,
    ],
    [
      "INIT without heartbeatIntervalMs",
      [encodeFrame(FrameType.INIT, init, 0)],
      /field "heartbeatIntervalMs"/,
    ],
    ["a zero CREDIT", [
      encodeFrame(
        FrameType.INIT,
        jsonBytes({ ...JSON.parse(new TextDecoder().decode(init)), heartbeatIntervalMs: 50 }),
        0,
      ),
      encodeFrame(FrameType.CREDIT, creditPayload(0), 1),
    ], /grants 0 credits/],
  ];
  for (const [what, frames, message] of cases) {
    const out = await deadline(10_000, what, async () => {
      const p = new Deno.Command(Deno.execPath(), {
        args: ["run", "--quiet", "--allow-read", "--allow-env", child],
        stdin: "piped",
        stdout: "null",
        stderr: "piped",
      }).spawn();
      const w = p.stdin.getWriter();
      for (const f of frames) await w.write(f);
      const result = await p.output();
      return { code: result.code, stderr: new TextDecoder().decode(result.stderr) };
    });
    assert.equal(out.code, 0, what);
    assert.match(out.stderr, message, what);
  }
});

Deno.test({
  name:
    "10% broken inputs and misbehaving HTTP through a backend and a decode stage: in = delivered + failed, each named",
  ignore: !hasFfmpegCliSync(),
  async fn() {
    const { decodeVideo } = await import("../../src/media/decode.ts");
    const { VideoPackets } = await import("../../src/media/packets.ts");
    const dir = await Deno.makeTempDir({ prefix: "sluice-faults-" });
    await using srv = serveDir(dir);
    try {
      const clip = await Deno.readFile(await generateClip({ width: 64, height: 48, durationSec: 0.4 }));
      const good: string[] = [];
      const broken: string[] = [];
      for (let i = 0; i < 36; i++) {
        await Deno.writeFile(`${dir}/good_${i}.mp4`, clip);
        good.push(`${dir}/good_${i}.mp4`);
      }
      // A valid file under a wrong extension is delivered: FFmpeg goes by the content.
      await Deno.writeFile(`${dir}/misnamed.mkv`, clip);
      good.push(`${dir}/misnamed.mkv`);
      const bad: [string, Uint8Array][] = [
        ["truncated.mp4", clip.subarray(0, clip.length >> 2)],
        ["garbage.mp4", Uint8Array.from({ length: 5000 }, (_, i) => (i * 7919) & 255)],
        ["zero.mp4", new Uint8Array(0)],
        ["text_named.mp4", new TextEncoder().encode("not a video at all\n".repeat(100))],
      ];
      for (const [name, bytes] of bad) {
        await Deno.writeFile(`${dir}/${name}`, bytes);
        broken.push(`${dir}/${name}`);
      }
      broken.push(`${dir}/missing.mp4`);
      // Over HTTP: served, failing then recovering, never answering, lying about its length and hanging, 404.
      good.push(`${srv.base}good_0.mp4`, `${srv.base}flaky/1/good_1.mp4`);
      broken.push(
        `${srv.dropBase}silent/good_2.mp4`,
        `${srv.dropBase}hang/good_3.mp4`,
        `${srv.base}nothere.mp4`,
      );
      const items = [...good, ...broken].sort(() => Math.random() - 0.5);
      const { source, lines } = spawn("mediaFront", {
        items,
        fetch: { connectTimeoutMs: 300, idleTimeoutMs: 300, deadlineMs: 1500, retries: 2, backoffMs: 10 },
        concurrency: 4,
      }, { permissions: ["--allow-read", "--allow-env", "--allow-ffi", "--allow-net"] });
      const pid = source.pid;
      const decodeFailures: string[] = [];
      const pipeline = new PipelineBuilder()
        .addSource(source, { name: "backend" })
        .pipe(async function decode(x: unknown) {
          const { path, packets } = x as { path: string; packets: unknown };
          const frames = await decodeVideo(VideoPackets.fromStructured(packets as never), {
            width: 16,
            height: 16,
          });
          return { path, frames: frames.shape[0] };
        }, { maxFailures: 1000 })
        .build({ signal: source.failure, log: (m) => decodeFailures.push(m) });
      try {
        const delivered = await deadline(60_000, "broken inputs", async () => {
          const out: { path: string; frames: number }[] = [];
          for await (const x of pipeline) out.push(x as { path: string; frames: number });
          return out;
        });
        const s = source.stats();
        assert.equal(delivered.length + s.failures + decodeFailures.length, items.length, lines.join("\n"));
        assert.deepEqual(delivered.map((d) => d.path).sort(), [...good].sort());
        for (const d of delivered) assert.equal(d.frames, 10, d.path);
        for (const b of broken) {
          const name = b.replace(/^.*\//, "");
          assert.ok(
            lines.some((l) => l.includes(name)),
            `the loss of ${name} is not named:\n${lines.join("\n")}`,
          );
        }
        assert.deepEqual(Object.keys(s.failuresByStage).sort(), ["demux", "fetch"]);
        assert.ok(lines.some((l) => /silent\/good_2\.mp4.*connectTimeoutMs/.test(l)), lines.join("\n"));
        assert.ok(lines.some((l) => /hang\/good_3\.mp4.*idleTimeoutMs/.test(l)), lines.join("\n"));
      } finally {
        await pipeline.stop();
        await source.close();
      }
      assert.ok(!alive(pid));
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
