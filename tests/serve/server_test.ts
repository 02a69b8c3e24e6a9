import assert from "node:assert/strict";
import { videoClassificationLoader } from "../../src/loader/loader.ts";
import { lazyDataset } from "../helpers/synthetic.ts";
import { encodeMessage, MAX_SERVER_MESSAGE, MessageDecoder } from "../../src/serve/protocol.ts";
import { serveLoader } from "../../src/serve/server.ts";
import { DatasetError, ServeError } from "../../src/errors.ts";
import { hasFfmpegCliSync } from "../helpers/media.ts";
import { withTempDir } from "../helpers/temp_dir.ts";
import { deadline } from "../backend/helpers.ts";
import { failingLoaderOptions } from "./fixtures/failing_loader.ts";

const dataset = lazyDataset("sluice-serve-", {
  videos: 6,
  classes: 3,
  durationSec: 2,
  width: 96,
  height: 64,
});

const loaderOptions = async () => ({
  dataset: await dataset(),
  batchSize: 2,
  clip: { numFrames: 4, width: 32, height: 32 },
  sampler: { seed: 1 },
  concurrency: { decode: 1 },
  log: () => {},
});

// deno-lint-ignore no-explicit-any
type Msg = any;

/** A client speaking the protocol by hand. */
class Client {
  readonly conn: Deno.UnixConn;
  readonly #frames = new MessageDecoder(MAX_SERVER_MESSAGE);
  readonly #queue: Msg[] = [];
  constructor(conn: Deno.UnixConn) {
    this.conn = conn;
  }
  static async connect(path: string): Promise<Client> {
    return new Client(await Deno.connect({ transport: "unix", path }));
  }
  async send(msg: Msg): Promise<void> {
    const b = encodeMessage(msg);
    for (let at = 0; at < b.length;) at += await this.conn.write(b.subarray(at));
  }
  /** The next message, or null at end of stream. */
  async next(): Promise<Msg | null> {
    const buf = new Uint8Array(1 << 16);
    while (this.#queue.length === 0) {
      const n = await this.conn.read(buf);
      if (n === null) return null;
      this.#queue.push(...this.#frames.push(buf.subarray(0, n)));
    }
    return this.#queue.shift();
  }
  async hello(extra: Msg = {}): Promise<Msg> {
    await this.send({ type: "hello", protocol: 1, client: "test", ...extra });
    return await this.next();
  }
  close(): void {
    try {
      this.conn.close();
    } catch { /* closed */ }
  }
}

/** Reads `length` bytes at `offset` of a memfd through /proc, as another process would. */
function readMemfd(fd: number, offset: number, length: number): Uint8Array<ArrayBuffer> {
  using f = Deno.openSync(`/proc/${Deno.pid}/fd/${fd}`, { read: true });
  f.seekSync(offset, Deno.SeekMode.Start);
  const out = new Uint8Array(length);
  for (let at = 0; at < length;) at += f.readSync(out.subarray(at))!;
  return out;
}

async function sha(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  return [...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes))].map((b) =>
    b.toString(16).padStart(2, "0")
  ).join("");
}

/** SHA-256 of every batch of `epochs` epochs of a fresh loader (the oracle). */
async function referenceEpochs(epochs: number): Promise<string[][]> {
  await using loader = await videoClassificationLoader(await loaderOptions());
  const out: string[][] = [];
  for (let e = 0; e < epochs; e++) {
    const hashes: string[] = [];
    for await (using b of loader) hashes.push(await sha(b.data as Uint8Array<ArrayBuffer>));
    out.push(hashes);
  }
  return out;
}

function socketPath(): string {
  return `${Deno.makeTempDirSync({ prefix: "sluice-sock-" })}/s.sock`;
}

Deno.test("a fixed loader: one client at a time, in-order epochs, the ring reused by the next client", async () => {
  const want = await referenceEpochs(2);
  await using loader = await videoClassificationLoader(await loaderOptions());
  const path = socketPath();
  const logs: string[] = [];
  await using server = await serveLoader(loader, { socket: path, slots: 2, log: (l) => logs.push(l) });
  assert.equal(Deno.statSync(path).mode! & 0o777, 0o600);

  const a = await Client.connect(path);
  const w = await a.hello();
  assert.equal(w.type, "welcome");
  assert.deepEqual([w.batchSize, w.batchesPerEpoch, w.clipsPerEpoch, w.nextEpoch, w.slots, w.pid], [
    2,
    3,
    6,
    0,
    2,
    Deno.pid,
  ]);
  // a second client while the first is connected: busy
  const b = await Client.connect(path);
  const busy = await b.hello();
  assert.equal(busy.type, "error");
  assert.equal(busy.code, "busy");
  assert.equal(busy.name, "ServeError");
  assert.equal(await b.next(), null);
  b.close();

  await a.send({ type: "epoch", epoch: 0 });
  const mem = await a.next();
  assert.equal(mem.type, "memory");
  assert.equal(mem.memory.kind, "host");
  assert.equal(
    Deno.readLinkSync(`/proc/self/fd/${mem.memory.fd}`),
    `/memfd:sluice-serve-${Deno.pid} (deleted)`,
  );
  const first = await a.next();
  assert.equal(first.type, "batch");
  assert.deepEqual(first.shape, [2, 4, 32, 32, 3]);
  const bytes = readMemfd(mem.memory.fd, first.slot * mem.slotBytes + first.offset, first.nbytes);
  assert.equal(await sha(bytes as Uint8Array<ArrayBuffer>), want[0][0]);
  a.close(); // gone mid-epoch, holding slots

  // the next client gets the loader (its next epoch, 1) and the same ring, all slots free again
  let c = await Client.connect(path);
  let welcome = await c.hello();
  while (welcome.type === "error" && welcome.code === "busy") { // the first session may still be closing
    c.close();
    await new Promise((r) => setTimeout(r, 50));
    c = await Client.connect(path);
    welcome = await c.hello();
  }
  assert.equal(welcome.nextEpoch, 1);
  await c.send({ type: "epoch", epoch: 3 });
  const jump = await c.next();
  assert.equal(jump.code, "epoch");
  assert.match(jump.message, /runs epoch 1 next and cannot jump to 3/);
  c.close();

  const d = await Client.connect(path);
  await d.hello();
  await d.send({ type: "epoch", epoch: 1 });
  const mem2 = await d.next();
  assert.equal(mem2.memory.fd, mem.memory.fd);
  const got: string[] = [];
  for (let m = await d.next(); m.type !== "epoch-end"; m = await d.next()) {
    assert.equal(m.type, "batch");
    got.push(
      await sha(readMemfd(mem2.memory.fd, m.slot * mem2.slotBytes, m.nbytes) as Uint8Array<ArrayBuffer>),
    );
    await d.send({ type: "release", slot: m.slot, seq: m.seq });
  }
  assert.deepEqual(got, want[1]);
  await d.send({ type: "stats" });
  const st = await d.next();
  assert.equal(st.type, "stats");
  assert.equal(st.stats.session.clips, 6);
  assert.equal(st.stats.session.ring.inUse, 0);
  // Its text: the session's line, then the loader's clip counts and stage table as `sluice load` prints them.
  const lines: string[] = st.text.split("\n");
  assert.match(
    lines[0],
    /^session test rank 0 of 1, epoch none: 3 batches \(3 sent\), 6 clips, [\d.]+ clips\/s, /,
  );
  const counts = st.stats.loader.clips.total;
  // Epoch 0's clips sent to the first client before it went (1 or 2 batches), and this client's 6.
  assert.ok(counts.planned === 12 && counts.delivered >= 8 && counts.delivered + counts.pending === 12);
  const notReached = counts.pending > 0 ? `, not reached ${counts.pending}` : "";
  assert.ok(
    lines.includes(
      `clips: planned 12, delivered ${counts.delivered}, failed 0${notReached}; padded frames 0, held frames 0`,
    ),
  );
  const stages: { name: string; tasksIn: number; itemsOut: number }[] = st.stats.loader.pipeline.stages;
  assert.ok(stages.length >= 5);
  for (const stage of stages) {
    const row = lines.find((l) => l.split(/\s+/)[0] === stage.name)?.split(/\s+/);
    assert.deepEqual(row?.slice(2, 4).map(Number), [stage.tasksIn, stage.itemsOut], stage.name);
  }
  assert.match(lines.at(-1)!, /^bottleneck: /);
  d.close();
  await server.close();
  assert.throws(() => Deno.statSync(path), Deno.errors.NotFound);
  assert.ok(logs.some((l) => l.includes("disconnected")));
});

Deno.test("a fixed loader resumes from a client's state before its first epoch; later states are refused, the session goes on", async () => {
  const [want] = await referenceEpochs(1);
  await using loader = await videoClassificationLoader(await loaderOptions());
  const path = socketPath();
  await using server = await serveLoader(loader, { socket: path, slots: 2, log: () => {} });
  const a = await Client.connect(path);
  await a.hello();
  await a.send({ type: "state", epoch: 0, batches: 1 });
  const { type, state } = await a.next();
  assert.equal(type, "state");
  assert.deepEqual([state.epoch, state.batches, state.seed, state.batching.batchSize], [0, 1, 1, 2]);
  await a.send({ type: "resume", state: { ...state, seed: 9 } }); // refused (non-fatal), nothing changes
  const other = await a.next();
  assert.deepEqual([other.type, other.code, other.fatal], ["error", "InvalidArgumentError", false]);
  assert.match(other.message, /seed: the state's 9, this loader's 1/);
  await a.send({ type: "resume", state });
  assert.deepEqual(await a.next(), { type: "resumed", epoch: 0, batches: 1 });
  await a.send({ type: "epoch", epoch: 0 });
  const mem = await a.next();
  const got: [number, string][] = [];
  let m: Msg, last: Msg;
  for (m = await a.next(); m.type === "batch"; m = await a.next()) {
    last = m.clips[0];
    got.push([m.index, await sha(readMemfd(mem.memory.fd, m.slot * mem.slotBytes, m.nbytes))]);
    await a.send({ type: "release", slot: m.slot, seq: m.seq });
  }
  assert.deepEqual(got, [[1, want[1]], [2, want[2]]], "the batches after the first, with their own index");
  assert.deepEqual([m.type, m.batches, m.clips, m.cancelled], ["epoch-end", 2, 4, false]);
  // the client's place: after the batch whose first clip is `after` (the last one)
  await a.send({ type: "state", after: { epoch: last.epoch, position: last.position } });
  const after = (await a.next()).state;
  assert.deepEqual([after.epoch, after.batches], [0, 3]);
  // a fixed loader whose epoch ran cannot resume: a non-fatal error, and the session goes on
  await a.send({ type: "resume", state });
  const refused = await a.next();
  assert.deepEqual([refused.type, refused.code, refused.fatal], ["error", "InvalidArgumentError", false]);
  assert.match(refused.message, /before the first epoch starts/);
  await a.send({ type: "stats" });
  assert.equal((await a.next()).type, "stats");
  await a.send({ type: "preview", epoch: 1, batches: 1, path: "/nonexistent/p.png", html: false });
  const preview = await a.next();
  assert.deepEqual([preview.code, preview.fatal], ["preview", true]);
  a.close();
  await server.close();
});

Deno.test("socket paths: a stale socket file is replaced, a live one is refused, long paths are refused", async () => {
  const path = socketPath();
  const stale = Deno.listen({ transport: "unix", path });
  stale.close(); // Deno removes nothing: the file stays, nobody listens
  const factory = async () => await videoClassificationLoader(await loaderOptions());
  await using server = await serveLoader(factory, { socket: path, log: () => {} });
  await assert.rejects(
    serveLoader(factory, { socket: path }),
    (e) => e instanceof ServeError && e.code === "address-in-use",
  );
  await assert.rejects(serveLoader(factory, { socket: "/tmp/" + "x".repeat(120) }), /longer than 107 bytes/);
  await assert.rejects(serveLoader(factory, { socket: path, slots: 0 }), /slots/);
  await server.close();
});

Deno.test("a factory builds each client's shard and first epoch; a silent connection is dropped", async () => {
  const want = await referenceEpochs(3);
  const requests: unknown[] = [];
  const opts = await loaderOptions();
  await using server = await serveLoader(async (req) => {
    requests.push(req);
    return await videoClassificationLoader({
      ...opts,
      firstEpoch: req.firstEpoch,
      sampler: { ...opts.sampler, rank: req.rank ?? 0, worldSize: req.worldSize ?? 1 },
    });
  }, { socket: socketPath(), slots: 2, helloTimeoutMs: 200, log: () => {} });
  const silent = await Client.connect(server.socket);
  const c = await Client.connect(server.socket);
  assert.equal((await c.hello({ epoch: 2 })).nextEpoch, 2);
  await c.send({ type: "epoch", epoch: 2 });
  const got: string[] = [];
  let fd = -1, slotBytes = 0;
  for (let m = await c.next(); m.type !== "epoch-end"; m = await c.next()) {
    if (m.type === "memory") {
      fd = m.memory.fd;
      slotBytes = m.slotBytes;
      continue;
    }
    got.push(await sha(readMemfd(fd, m.slot * slotBytes, m.nbytes) as Uint8Array<ArrayBuffer>));
    await c.send({ type: "release", slot: m.slot, seq: m.seq });
  }
  assert.deepEqual(got, want[2]);
  c.close();
  const timeout = await silent.next();
  assert.equal(timeout.code, "timeout");
  assert.equal(timeout.name, "ServeError");
  silent.close();
  const r = await Client.connect(server.socket);
  const w = await r.hello({ rank: 1, worldSize: 2 });
  assert.deepEqual([w.rank, w.worldSize, w.clipsPerEpoch], [1, 2, 3]);
  r.close();
  assert.deepEqual(requests, [{ firstEpoch: 2 }, { firstEpoch: 0, rank: 1, worldSize: 2 }]);
  await server.close();
});

Deno.test("an error building a client's loader names its class: the sluice class as code, or internal", async () => {
  const failures = [new DatasetError("/data: no such directory"), new TypeError("a bug")];
  await using server = await serveLoader(() => Promise.reject(failures.shift()), {
    socket: socketPath(),
    log: () => {},
  });
  for (
    const [code, name, message] of [
      ["DatasetError", "DatasetError", "/data: no such directory"],
      ["internal", "TypeError", "a bug"],
    ]
  ) {
    const c = await Client.connect(server.socket);
    const m = await c.hello();
    assert.deepEqual(m, { type: "error", code, name, message, fatal: true });
    assert.equal(await c.next(), null, "the server hangs up after a fatal error");
    c.close();
  }
});

Deno.test("a client that reports what its code took (taken) gets at most welcome.ahead batches beyond it, whatever slots allows", async () => {
  // Issue 30 item 5: `slots` was also how far the server ran ahead of a slow trainer (its memory grew with it).
  const options = await loaderOptions();
  const sampler = { seed: 1, clipsPerVideo: 4 }; // 12 batches an epoch
  await using loader = await videoClassificationLoader({ ...options, sampler, slots: 8 });
  const path = socketPath();
  await using server = await serveLoader(loader, { socket: path, slots: 8, log: () => {} });
  const a = await Client.connect(path);
  try {
    const w = await a.hello();
    assert.equal(w.ahead, 2);
    assert.equal(w.batchesPerEpoch, 12);
    await a.send({ type: "taken", taken: 0 });
    await a.send({ type: "epoch", epoch: 0 });
    const batches: Msg[] = [];
    const upTo = async (n: number) => {
      while (batches.length < n) {
        const m = await a.next();
        if (m.type === "batch") batches.push(m);
      }
      await new Promise((r) => setTimeout(r, 400)); // and no more come
      assert.equal(server.stats().sessions[0].sent, n);
    };
    await upTo(2);
    await a.send({ type: "taken", taken: 1 }); // the code took batch 0 (and keeps it): one more may come
    await upTo(3);
    await a.send({ type: "release", slot: batches[1].slot, seq: batches[1].seq }); // batch 1 dropped untaken
    await upTo(4);
  } finally {
    a.close();
  }
});

Deno.test("zero copy: a loader with slots publishes its own memfd slots; bytes equal the copying loader's, nothing copied, a stalled client holds the slots", async () => {
  const want = await referenceEpochs(2);
  await using loader = await videoClassificationLoader({ ...await loaderOptions(), slots: 2 });
  const path = socketPath();
  await using server = await serveLoader(loader, { socket: path, slots: 2, log: () => {} });
  const a = await Client.connect(path);
  try {
    assert.equal((await a.hello()).type, "welcome");
    let mem: Msg = null; // sent once: the same ring serves every epoch
    for (let epoch = 0; epoch < 2; epoch++) {
      await a.send({ type: "epoch", epoch });
      const got: string[] = [];
      let held: Msg[] = [];
      for (let m = await a.next(); m.type !== "epoch-end"; m = await a.next()) {
        if (m.type === "memory") {
          mem = m;
          continue;
        }
        assert.equal(m.type, "batch");
        // the loader's batch memory, not a session ring the server copies into
        assert.equal(
          Deno.readLinkSync(`/proc/self/fd/${mem.memory.fd}`),
          `/memfd:sluice-batches-${Deno.pid} (deleted)`,
        );
        held.push(m);
        if (epoch === 0 && m.seq === 1) {
          // the client holds both slots: the server waits for credit, the loader makes no third batch
          await new Promise((r) => setTimeout(r, 300));
          const s = server.stats().sessions[0];
          assert.equal(s.ring!.inUse, 2);
          assert.equal(s.batches, 2);
        }
        // read what the client would see, then release oldest first
        got.push(await sha(readMemfd(mem.memory.fd, m.slot * mem.slotBytes + m.offset, m.nbytes)));
        if (held.length === 2) {
          const r = held.shift();
          await a.send({ type: "release", slot: r.slot, seq: r.seq });
        }
      }
      for (const r of held) await a.send({ type: "release", slot: r.slot, seq: r.seq });
      held = [];
      assert.deepEqual(got, want[epoch]);
    }
    assert.equal(server.stats().sessions[0].copiedBytes, 0);
  } finally {
    a.close();
  }
});

Deno.test({
  name: "a session whose loader failed mid-epoch reports the error, hangs up and closes (it awaited itself)",
  ignore: !hasFfmpegCliSync(),
  fn: async () => {
    await withTempDir("sluice-serve-fail-", async (dir) => {
      const opts = await failingLoaderOptions(dir);
      const logs: string[] = [];
      const server = await serveLoader(
        (req) => videoClassificationLoader({ ...opts, firstEpoch: req.firstEpoch, log: () => {} }),
        { socket: socketPath(), log: (l) => logs.push(l) },
      );
      const c = await Client.connect(server.socket);
      try {
        assert.equal((await c.hello()).type, "welcome");
        await c.send({ type: "epoch", epoch: 0 });
        let m = await c.next();
        while (m.type !== "error") {
          if (m.type === "batch") await c.send({ type: "release", slot: m.slot, seq: m.seq });
          m = await c.next();
        }
        assert.deepEqual([m.code, m.name, m.fatal], ["MediaError", "MediaError", true]);
        assert.match(m.message, /cut\.mp4/);
        assert.equal(await deadline(30_000, "the server hanging up", () => c.next()), null);
        await deadline(30_000, "server.close()", () => server.close());
        assert.deepEqual(server.stats().sessions, []);
        assert.ok(logs.some((l) => l.includes("MediaError")) && !logs.some((l) => l.includes("internal")));
      } finally {
        c.close();
        await server.close();
      }
    });
  },
});
