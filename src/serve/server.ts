/**
 * `serveLoader`: publishes a loader's batches to trainers in other processes (PyTorch through the `sluice`
 * Python package, or any client of docs/serve_protocol.md): batches go into a ring of shared-memory slots
 * (`slot_ring.ts`), descriptors go over a Unix domain socket (`protocol.ts`).
 *
 * - The server listens and accepts; each connection is one {@link Session} (`session.ts`: its messages and a
 *   client gone; `session_hello.ts`: its loader; `publisher.ts`: credits, streaming, zero copy). The server
 *   keeps accepting clients whatever happens to a session.
 * - A fixed loader (`serveLoader(loader, …)`) serves one client at a time; others get a `busy` error while it
 *   is connected. Its epochs run in order. A {@link LoaderFactory} instead builds one loader per session with
 *   the client's shard (`rank`, `worldSize`) and first epoch, so ranks of a job can share one server, and a
 *   client can jump to any epoch (the session rebuilds its loader there). Which loader and which ring a session
 *   gets: `session_host.ts`.
 * - GPU (`decode: "nvdec"`): slots are one device allocation exported by CUDA IPC (`cuda_slots.ts`).
 * @module
 */

import { InvalidArgumentError, ServeError } from "../errors.ts";
import type { LoaderStats, VideoClassificationLoader } from "../loader/loader.ts";
import { checkOption, tsVocabulary } from "../options.ts";
import { SERVER_TABLE } from "./options.ts";
import { Session } from "./session.ts";
import type { SessionStats } from "./session_stats.ts";
import { type LoaderFactory, SessionHost } from "./session_host.ts";
import type { NodeStats } from "./node_stats.ts";

/** Options of {@link serveLoader}. */
export interface ServeOptions {
  /** Path of the Unix domain socket to listen on (a stale socket file there is replaced). */
  socket: string;
  /** Batch slots per session: the batches a client may hold at once (1 to 1024, default 4). */
  slots?: number;
  /** Sessions at once with a {@link LoaderFactory} (default 16; a fixed loader serves one). */
  maxClients?: number;
  /** CUDA device of GPU slots for a fixed NVDEC loader (default 0; factory sessions use the client's). */
  device?: number;
  /** Milliseconds a new connection has to send `hello` (default 10000). */
  helloTimeoutMs?: number;
  /** Where connection and failure lines go (default `console.error`). */
  log?: (line: string) => void;
  /**
   * Log each client's connection and disconnection, and the error that ends its session (default true; false
   * for a client that raises that error itself: the Python client's own server).
   */
  logConnections?: boolean;
  /** A node server's counters, for `stats` replies (`node_hub.ts`). */
  node?: () => NodeStats;
  /**
   * Words an error for the clients before it is sent (default: as it is): a server started from a Python
   * client's keywords names the loader's options as Python writes them (`max_failures`).
   */
  reword?: (error: unknown) => unknown;
}

/** Counters of a server. */
export interface ServeStats {
  /** The socket path. */
  socket: string;
  /** One entry per connected client. */
  sessions: SessionStats[];
  /** Sessions accepted so far. */
  accepted: number;
}

const MAX_SOCKET_PATH = 107; // sun_path is 108 bytes with its NUL

/**
 * Publishes a loader's batches to trainers in other processes (the Python client, `sluice.Loader(socket=...)`,
 * or any client of docs/serve_protocol.md): each batch goes into a slot of a ring of shared memory, its
 * descriptor over the Unix socket, and the slot is reused once the client releases it.
 *
 * A fixed `loader` serves one client at a time (another gets a `busy` error while it is connected), its epochs
 * in order. A {@link LoaderFactory} instead builds one loader per client, with the client's shard (`rank`,
 * `worldSize`) and first epoch, so the ranks of a job can share one server and a client can start at any epoch.
 * With `decode: "nvdec"` the slots are one device allocation shared by CUDA IPC.
 * @param loader the loader to serve, or a factory of one loader per client
 * @param opts the socket to listen on, the slots per client and the rest of {@link ServeOptions}
 * @returns the server, once it listens
 * @throws {InvalidArgumentError} for `slots` out of range or a socket path that is empty or too long
 * @throws {ServeError} `address-in-use` when another server listens on the socket, or the path is not a socket
 * @example Serve a loader to a trainer in Python
 * ```ts
 * import { serveLoader, videoClassificationLoader } from "@sluice/sluice";
 *
 * const loader = await videoClassificationLoader({
 *   dataset: "data/train",
 *   batchSize: 8,
 *   clip: { numFrames: 16, width: 112, height: 112 },
 *   slots: 4, // batches go to the trainer in the loader's own shared slots: nothing is copied
 * });
 * await using server = await serveLoader(loader, { socket: "/tmp/sluice.sock", slots: 4 });
 * // python: for batch in sluice.Loader(socket="/tmp/sluice.sock"): ...
 * await server.nextClient();
 * await server.idle();
 * await loader.close();
 * ```
 */
export async function serveLoader(
  loader: VideoClassificationLoader | LoaderFactory,
  opts: ServeOptions,
): Promise<BatchServer> {
  const slots = opts.slots ?? SERVER_TABLE.slots.default;
  checkOption(SERVER_TABLE.slots, slots, tsVocabulary("serve: "), "slots");
  if (typeof opts.socket !== "string" || opts.socket.length === 0) {
    throw new InvalidArgumentError("serve: socket must be a path");
  }
  if (new TextEncoder().encode(opts.socket).length > MAX_SOCKET_PATH) {
    throw new InvalidArgumentError(
      `serve: socket path ${opts.socket} is longer than ${MAX_SOCKET_PATH} bytes (a Unix socket limit)`,
    );
  }
  await removeStaleSocket(opts.socket);
  const listener = Deno.listen({ transport: "unix", path: opts.socket });
  Deno.chmodSync(opts.socket, 0o600);
  return new BatchServer(listener, loader, { ...opts, slots }, Deno.lstatSync(opts.socket).ino);
}

/** A socket file nobody listens on is removed; one in use is an error. */
async function removeStaleSocket(path: string): Promise<void> {
  let info: Deno.FileInfo;
  try {
    info = Deno.lstatSync(path);
  } catch {
    return;
  }
  if (!info.isSocket) {
    throw new ServeError("address-in-use", `serve: ${path} exists and is not a socket`);
  }
  try {
    const c = await Deno.connect({ transport: "unix", path });
    c.close();
  } catch {
    Deno.removeSync(path);
    return;
  }
  throw new ServeError("address-in-use", `serve: another server is listening on ${path}`);
}

/**
 * A listening batch server (made by {@link serveLoader}); `close()` (or `await using`) stops it.
 * @example Serve until the first client has come and gone, and report
 * ```ts
 * import { serveLoader, videoClassificationLoader } from "@sluice/sluice";
 *
 * await using loader = await videoClassificationLoader({
 *   dataset: "data/train",
 *   batchSize: 8,
 *   clip: { numFrames: 16, width: 112, height: 112 },
 * });
 * await using server = await serveLoader(loader, { socket: "/tmp/sluice.sock" });
 * await server.nextClient();
 * console.log(server.stats().sessions.map((s) => `${s.client}: ${s.batches} batches`));
 * await server.idle();
 * ```
 */
export class BatchServer implements AsyncDisposable {
  /** The socket path. */
  readonly socket: string;
  /** Settles when the server has closed. */
  readonly finished: Promise<void>;
  readonly #listener: Deno.Listener<Deno.UnixConn, Deno.UnixAddr>;
  readonly #host: SessionHost;
  readonly #opts: ServeOptions & { slots: number };
  readonly #log: (line: string) => void;
  readonly #sessions = new Set<Session>();
  /** The socket file's inode: only that file is removed (another server may have the path by then). */
  readonly #inode: number | null;
  #idle = Promise.withResolvers<void>();
  #arrived = Promise.withResolvers<void>();
  #accepted = 0;
  #listening = true;
  #closing: Promise<void> | undefined;

  /** Use {@link serveLoader}. */
  constructor(
    listener: Deno.Listener<Deno.UnixConn, Deno.UnixAddr>,
    source: VideoClassificationLoader | LoaderFactory,
    opts: ServeOptions & { slots: number },
    inode: number | null = null,
  ) {
    this.socket = opts.socket;
    this.#inode = inode;
    this.#listener = listener;
    this.#host = new SessionHost(source, opts.slots, opts.device ?? 0);
    this.#opts = opts;
    this.#log = opts.log ?? ((l) => console.error(l));
    this.finished = this.#acceptLoop();
  }

  /** Clients connected now (sessions not yet ended). */
  get clients(): number {
    return this.#sessions.size;
  }

  /** Settles when no client is connected (at once when none is). */
  idle(): Promise<void> {
    return this.#sessions.size === 0 ? Promise.resolve() : this.#idle.promise;
  }

  /** Settles when the next client connects. */
  nextClient(): Promise<void> {
    return this.#arrived.promise;
  }

  /** Each connected client's counters and its loader's stats (null before its `hello`): what metrics show. */
  sessionReports(): { session: SessionStats; loader: LoaderStats | null }[] {
    return [...this.#sessions].map((s) => ({ session: s.stats(), loader: s.loaderStats() }));
  }

  /**
   * Stops taking clients: the socket file is removed (when it is still this server's) and the listener closed;
   * sessions go on. Idempotent.
   */
  unlisten(): void {
    if (!this.#listening) return;
    this.#listening = false;
    try {
      if (this.#inode === null || Deno.lstatSync(this.socket).ino === this.#inode) {
        Deno.removeSync(this.socket);
      }
    } catch { /* gone already */ }
    try {
      this.#listener.close();
    } catch { /* already closed */ }
  }

  /**
   * Current counters.
   * @returns the socket, one entry per connected client, and the clients accepted so far
   */
  stats(): ServeStats {
    return {
      socket: this.socket,
      sessions: [...this.#sessions].map((s) => s.stats()),
      accepted: this.#accepted,
    };
  }

  /** Stops listening, ends every session, frees slots and removes the socket file. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.unlisten();
      await Promise.all([...this.#sessions].map((s) => s.close()));
      await this.finished;
      this.#host.close();
    })();
    return this.#closing;
  }

  /** Same as {@link close}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  async #acceptLoop(): Promise<void> {
    while (true) {
      let conn: Deno.UnixConn;
      try {
        conn = await this.#listener.accept();
      } catch {
        break; // closed
      }
      this.#accepted++;
      const limit = this.#host.factory ? this.#opts.maxClients ?? 16 : Infinity;
      const session = new Session(conn, this.#host, { ...this.#opts, log: this.#log });
      if (this.#sessions.size >= limit) {
        void session.refuse("busy", `the server already serves ${limit} clients`);
        continue;
      }
      this.#sessions.add(session);
      this.#arrived.resolve();
      this.#arrived = Promise.withResolvers<void>();
      session.done.finally(() => {
        this.#sessions.delete(session);
        if (this.#sessions.size > 0) return;
        this.#idle.resolve();
        this.#idle = Promise.withResolvers<void>();
      });
    }
  }
}
