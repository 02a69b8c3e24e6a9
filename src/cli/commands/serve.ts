/**
 * `sluice serve DATASET --socket PATH`: serves the loader's batches to trainers in other processes (the Python
 * client: `sluice.Loader(socket=PATH)`) through shared-memory slots and a Unix socket (docs/serve_protocol.md).
 * Each client gets its own loader with its shard (rank, world size) and epoch. Runs until Ctrl-C or SIGTERM.
 * @module
 */

import { defineCommand } from "../args.ts";
import { runServer } from "../../serve/main.ts";
import { print } from "../tty.ts";
import { LOADER_OPTIONS, loaderOptionsOf } from "./loader_options.ts";

/** The `serve` command. */
export const serveCommand = defineCommand({
  name: "serve",
  summary: "serve loader batches to trainers (PyTorch: sluice.Loader(socket=...)) over shared memory",
  description:
    "Listens on a Unix socket. Each client (a trainer, a rank of one) gets its own loader built from " +
    "these options with the client's rank, world size and epoch, and receives batches through a ring of " +
    "--slots shared-memory slots that it views without copying. A client that goes away frees its slots; the " +
    "server keeps serving. Stop it with Ctrl-C or SIGTERM.",
  positionals: [{
    name: "DATASET",
    help: "a directory with one folder per class, a .csv or .jsonl manifest, or an http(s) URL of one",
  }],
  options: {
    socket: { type: "string", required: true, help: "path of the Unix socket to listen on" },
    slots: {
      type: "integer",
      default: 4,
      min: 1,
      max: 1024,
      help: "batch slots per client (batches in flight)",
    },
    ...LOADER_OPTIONS,
  },
  examples: [
    "serve data/train --socket /tmp/sluice.sock --batch-size 8 --frames 16",
    "serve train.csv --socket /tmp/sluice.sock --backend subprocess --slots 6",
  ],
  async run({ values, positionals }) {
    await runServer(
      { socket: values.socket, slots: values.slots, loader: loaderOptionsOf(positionals[0], values) },
      (server) => print(Deno.stderr, `sluice serve: listening on ${server.socket} (Ctrl-C stops)`),
    );
    return 0;
  },
});
