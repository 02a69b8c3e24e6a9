/**
 * `sluice serve DATASET --socket PATH`: serves the loader's batches to trainers in other processes (the Python
 * client: `sluice.Loader(socket=PATH)`) through shared-memory slots and a Unix socket (docs/serve_protocol.md).
 * Each client gets its own loader with its shard (rank, world size) and epoch. Runs until Ctrl-C or SIGTERM.
 * @module
 */

import { defineCommand } from "../args.ts";
import { runServer, type ServerConfig } from "../../serve/main.ts";
import { print } from "../tty.ts";
import { SERVER_OPTIONS } from "../../serve/options.ts";
import {
  asUsageError,
  FLAG_WORDS,
  flagsOf,
  LOADER_FLAGS,
  loaderOptionsOf,
  optionsOfFlags,
} from "./loader_options.ts";

/** The `serve` command. */
export const serveCommand = defineCommand({
  name: "serve",
  summary: "serve loader batches to trainers (PyTorch: sluice.Loader(socket=...)) over shared memory",
  description:
    "Listens on a Unix socket. Each client (a trainer, a rank of one) gets its own loader built from " +
    "these options with the client's rank, world size and epoch, and receives batches through a ring of " +
    "--slots shared-memory slots that it views without copying. A client that goes away frees its slots; the " +
    "server keeps serving. Stop it with Ctrl-C or SIGTERM. With --node, one server feeds every rank of the " +
    "machine: one decode pool of --cpu-budget Workers, the clips of a file that ranks share demuxed once " +
    "(each rank still gets exactly its own batches), and the server leaves with its last client. --metrics " +
    "HOST:PORT serves Prometheus metrics at /metrics.",
  positionals: [{
    name: "DATASET",
    help: "a directory with one folder per class, a .csv or .jsonl manifest, or an http(s) URL of one",
  }],
  options: { ...flagsOf(SERVER_OPTIONS), ...LOADER_FLAGS },
  examples: [
    "serve data/train --socket /tmp/sluice.sock --batch-size 8 --frames 16 --width 112 --height 112",
    "serve train.csv --socket /tmp/sluice.sock --batch-size 8 --frames 8 --width 128 --height 128 --slots 6",
    "serve data/train --socket /tmp/sluice.sock --node --cpu-budget 12 --metrics 127.0.0.1:9400 --batch-size 8 " +
    "--frames 16 --width 112 --height 112",
  ],
  async run({ values, positionals }) {
    await runServer(
      {
        ...optionsOfFlags(SERVER_OPTIONS, values),
        // started by hand: it waits for its first client however long, then leaves with its last
        firstClientMs: Infinity,
        loader: loaderOptionsOf(positionals[0], values),
      } as ServerConfig,
      ({ server, metrics }) =>
        print(
          Deno.stderr,
          `sluice serve: listening on ${server.socket}` +
            (metrics === null ? "" : `, metrics at http://${metrics.hostname}:${metrics.port}/metrics`) +
            (values.node ? " (a node server: it leaves with its last client)" : " (Ctrl-C stops)"),
        ),
      FLAG_WORDS,
    ).catch((e) => {
      throw asUsageError(e);
    });
    return 0;
  },
});
