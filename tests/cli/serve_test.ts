/** `sluice serve`: listens, welcomes a client with the loader the options describe, stops on SIGTERM. */
import assert from "node:assert/strict";
import { makeSyntheticDataset } from "../../src/prep/synthetic.ts";
import { readUntil, sayHello } from "../helpers/serve.ts";

const MAIN = new URL("../../src/cli/main.ts", import.meta.url).pathname;

Deno.test("sluice serve: a client gets the loader of the options; SIGTERM stops it and removes the socket", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sluice-cli-serve-" });
  try {
    makeSyntheticDataset(`${dir}/data`, { videos: 4, classes: 2, durationSec: 1, width: 64, height: 48 });
    const socket = `${dir}/s.sock`;
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        MAIN,
        "serve",
        `${dir}/data`,
        "--socket",
        socket,
        "--batch-size",
        "3",
        "--frames",
        "2",
        "--width",
        "16",
        "--height",
        "16",
        "--slots",
        "2",
      ],
      stdout: "null",
      stderr: "piped",
    }).spawn();
    const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
    await readUntil(reader, "listening on", "sluice serve");
    const { conn, first: w } = await sayHello(socket, { client: "cli-test", rank: 1, worldSize: 2 });
    assert.deepEqual([w.type, w.batchSize, w.slots, w.rank, w.worldSize, w.clipsPerEpoch], [
      "welcome",
      3,
      2,
      1,
      2,
      2,
    ]);
    conn.close();
    child.kill("SIGTERM");
    const status = await child.status;
    assert.equal(status.code, 0);
    assert.throws(() => Deno.statSync(socket), Deno.errors.NotFound);
    await reader.cancel();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("sluice serve: --socket is required", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MAIN, "serve", "x"],
    stderr: "piped",
  })
    .output();
  assert.equal(out.code, 2);
  assert.match(new TextDecoder().decode(out.stderr), /--socket/);
});

Deno.test("sluice serve --node: waits for its first client, serves metrics, leaves with its last client", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sluice-cli-serve-node-" });
  try {
    makeSyntheticDataset(`${dir}/data`, { videos: 4, classes: 2, durationSec: 1, width: 64, height: 48 });
    const socket = `${dir}/n.sock`;
    const args = ["--batch-size", "2", "--frames", "2", "--width", "16", "--height", "16"];
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", MAIN, "serve", `${dir}/data`, "--socket", socket, "--node", "--cpu-budget", "1"]
        .concat(["--metrics", "127.0.0.1:0", ...args]),
      stdout: "null",
      stderr: "piped",
    }).spawn();
    const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
    const err = await readUntil(reader, "listening on", "sluice serve --node");
    const url = err.match(/metrics at (http:\/\/\S+\/metrics)/)?.[1];
    assert.ok(url, err);
    // started by hand, it does not leave before its first client, however long that takes
    await new Promise((r) => setTimeout(r, 2500));
    const { conn, first } = await sayHello(socket, { client: "cli-test", rank: 0, worldSize: 1 });
    assert.equal(first.type, "welcome");
    const text = await (await fetch(url)).text();
    assert.match(text, /^sluice_node_cpu_budget 1$/m);
    assert.match(text, /^sluice_clients 1$/m);
    conn.close();
    const status = await child.status; // it leaves with its last client
    assert.equal(status.code, 0);
    assert.throws(() => Deno.statSync(socket), Deno.errors.NotFound);
    assert.throws(() => Deno.statSync(`${socket}.lock`), Deno.errors.NotFound);
    await reader.cancel();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
