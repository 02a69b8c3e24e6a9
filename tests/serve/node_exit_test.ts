/**
 * A node server (`src/serve/main.ts` with `node: true`) leaves with its last client, and only while it holds the
 * lock its clients take to connect or start one: a rank holding the lock (connecting, or starting a server)
 * keeps it from leaving under that rank's feet. Leaving, it removes its socket, pid and lock files. With no
 * client ever, it leaves after `firstClientMs` (the rank that started it died before connecting).
 */
import assert from "node:assert/strict";
import { sayHello } from "../helpers/serve.ts";
import { makeSyntheticDataset } from "../../src/prep/synthetic.ts";
import { hasFfmpegCliSync } from "../helpers/media.ts";
import { withTempDir } from "../helpers/temp_dir.ts";

const MAIN = new URL("../../src/serve/main.ts", import.meta.url).pathname;

function start(config: Record<string, unknown>): Deno.ChildProcess {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MAIN, "--config", JSON.stringify(config)],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

/** The child's first stdout line (its ready or error event). */
async function firstLine(child: Deno.ChildProcess): Promise<Record<string, unknown>> {
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) break;
    text += value;
  }
  reader.releaseLock();
  return JSON.parse(text.split("\n")[0]);
}

async function exited(child: Deno.ChildProcess, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const r = await Promise.race([
    child.status.then(() => true),
    new Promise<boolean>((res) => timer = setTimeout(() => res(false), ms)),
  ]);
  clearTimeout(timer);
  return r;
}

Deno.test({
  name: "node server: leaves with its last client once it holds the clients' lock, removing its files",
  ignore: !hasFfmpegCliSync(),
  async fn() {
    await withTempDir("sluice-node-exit-", async (root) => {
      const data = `${root}/data`, dir = `${root}/sluice-node-t`;
      makeSyntheticDataset(data, { videos: 2, classes: 2, durationSec: 1, width: 64, height: 48 });
      Deno.mkdirSync(dir);
      const socket = `${dir}/s.sock`;
      const child = start({
        socket,
        node: true,
        lingerMs: 100,
        loader: { dataset: data, batchSize: 2, clip: { numFrames: 2, width: 16, height: 16 } },
      });
      try {
        assert.equal((await firstLine(child)).event, "ready");
        Deno.writeTextFileSync(`${socket}.pid`, String(child.pid));
        const { conn, first } = await sayHello(socket, { client: "t", rank: 0, worldSize: 1 });
        assert.equal(first.type, "welcome");
        // a rank holds the lock (it is connecting, or starting a server) while the last client leaves
        using lock = await Deno.open(`${socket}.lock`, { read: true, write: true, create: true });
        await lock.lock(true);
        conn.close();
        assert.equal(await exited(child, 1500), false, "it left while a rank held the lock");
        assert.ok(Deno.statSync(socket).isSocket);
        await lock.unlock();
        assert.equal(await exited(child, 10_000), true, "it did not leave with its last client");
        assert.deepEqual([...Deno.readDirSync(root)].map((e) => e.name).sort(), ["data"]);
      } finally {
        try {
          child.kill("SIGKILL");
        } catch { /* exited */ }
        await child.status;
        await child.stderr.cancel();
      }
    });
  },
});

Deno.test({
  name: "node server: with no client ever it leaves after firstClientMs",
  ignore: !hasFfmpegCliSync(),
  async fn() {
    await withTempDir("sluice-node-exit-", async (root) => {
      const data = `${root}/data`;
      makeSyntheticDataset(data, { videos: 2, classes: 2, durationSec: 1, width: 64, height: 48 });
      const socket = `${root}/n.sock`;
      const child = start({
        socket,
        node: true,
        firstClientMs: 300,
        loader: { dataset: data, batchSize: 2, clip: { numFrames: 2, width: 16, height: 16 } },
      });
      try {
        assert.equal((await firstLine(child)).event, "ready");
        assert.equal(await exited(child, 15_000), true);
        assert.equal((await child.status).code, 0);
        assert.deepEqual([...Deno.readDirSync(root)].map((e) => e.name), ["data"]);
      } finally {
        try {
          child.kill("SIGKILL");
        } catch { /* exited */ }
        await child.status;
        await child.stderr.cancel();
      }
    });
  },
});
