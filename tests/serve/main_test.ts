/**
 * The server process (`src/serve/main.ts`, what the Python client spawns): after its loader failed mid-epoch it
 * still exits at once on stdin's end (the trainer died) and on SIGTERM, removing its socket directory, without
 * needing its close deadline.
 */
import assert from "node:assert/strict";
import { encodeMessage, MAX_SERVER_MESSAGE, MessageDecoder } from "../../src/serve/protocol.ts";
import { hasFfmpegCliSync } from "../helpers/media.ts";
import { withTempDir } from "../helpers/temp_dir.ts";
import { deadline } from "../backend/helpers.ts";
import { readUntil } from "../helpers/serve.ts";
import { failingLoaderOptions } from "./fixtures/failing_loader.ts";

const MAIN = new URL("../../src/serve/main.ts", import.meta.url).pathname;

/** Messages from `conn` until one of type `type` (returned). */
async function until(conn: Deno.UnixConn, type: string): Promise<Record<string, unknown>> {
  const frames = new MessageDecoder(MAX_SERVER_MESSAGE);
  const buf = new Uint8Array(1 << 16);
  while (true) {
    const n = await conn.read(buf);
    assert.ok(n !== null, `the server hung up before a ${type} message`);
    for (const m of frames.push(buf.subarray(0, n)) as Record<string, unknown>[]) {
      if (m.type === type) return m;
      if (m.type !== "batch") continue;
      await conn.write(encodeMessage({ type: "release", slot: m.slot as number, seq: m.seq as number }));
    }
  }
}

for (const how of ["stdin's end", "SIGTERM"] as const) {
  Deno.test({
    name: `runServer exits on ${how} after its loader failed mid-epoch, leaving no socket directory`,
    ignore: !hasFfmpegCliSync(),
    fn: () =>
      withTempDir("sluice-main-", async (dir) => {
        const loader = await failingLoaderOptions(`${dir}/data`);
        const sockDir = `${dir}/sock`;
        Deno.mkdirSync(sockDir);
        const config = {
          socket: `${sockDir}/s.sock`,
          loader,
          exitOnStdinEof: true,
          removeDir: sockDir,
          logConnections: false,
        };
        const child = new Deno.Command(Deno.execPath(), {
          args: ["run", "-A", MAIN, "--config", JSON.stringify(config)],
          stdin: "piped",
          stdout: "piped",
          stderr: "piped",
        }).spawn();
        const out = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
        await readUntil(out, '"ready"', "the server");
        const conn = await Deno.connect({ transport: "unix", path: config.socket });
        await conn.write(encodeMessage({ type: "hello", protocol: 1, client: "main-test" }));
        await until(conn, "welcome");
        await conn.write(encodeMessage({ type: "epoch", epoch: 0 }));
        const error = await until(conn, "error");
        assert.equal(error.name, "MediaError");
        if (how === "SIGTERM") child.kill("SIGTERM");
        else await child.stdin.close();
        const status = await deadline(30_000, "the server's exit", () => child.status);
        conn.close();
        if (how === "SIGTERM") await child.stdin.close();
        await out.cancel();
        const stderr = new TextDecoder().decode(await new Response(child.stderr).arrayBuffer());
        assert.equal(status.code, 0, stderr);
        assert.doesNotMatch(stderr, /did not close|internal/);
        assert.throws(() => Deno.statSync(sockDir), Deno.errors.NotFound);
      }),
  });
}
