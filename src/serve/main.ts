/**
 * The batch server as a process: `deno run -A src/serve/main.ts --config '<json>'` (what the Python client
 * spawns; `sluice serve` runs the same {@link runServer}). The config is a {@link ServerConfig}; the server
 * builds one loader per client session from `loader` with the client's shard and epoch, prints one JSON line
 * `{"event":"ready",…}` to stdout once it listens (or `{"event":"error","name":…,"message":…}` when it cannot
 * start, e.g. an option the config misspells), and runs until SIGTERM/SIGINT, or until its stdin reaches
 * end of file when `exitOnStdinEof` is set (the spawning trainer died: the server must not outlive it). Once
 * told to stop it exits within {@link CLOSE_TIMEOUT_MS}, whatever its sessions are doing.
 * `main.ts --options` prints the Python keywords it accepts (`pythonOptionList`) as JSON.
 * @module
 */

import { openLoader } from "../loader/loader.ts";
import type { ResolvedLoaderOptions } from "../loader/loader_options.ts";
import { errorText, InvalidArgumentError, SluiceError } from "../errors.ts";
import { SERVE_PROTOCOL_VERSION } from "./protocol.ts";
import { parsePythonJson } from "../python_options.ts";
import { type BatchServer, serveLoader } from "./server.ts";
import type { LoaderFactory } from "./session_host.ts";
import { NodeHub } from "./node_hub.ts";
import { untilLastRankLeaves } from "./node_exit.ts";
import { type MetricsServer, metricsText, serveMetrics } from "./metrics.ts";
import {
  PYTHON_OPTIONS,
  pythonOptionList,
  resolveServerConfig,
  type ServedLoaderOptions,
  SERVER_TABLE,
  sessionOptions,
} from "./options.ts";
import { rewordOptionError, type Vocabulary } from "../options.ts";

/** What {@link runServer} needs; JSON-compatible. Kinds, ranges and defaults: `SERVER_OPTIONS`. */
export interface ServerConfig {
  /** Unix socket path. */
  socket: string;
  /** Batch slots per client. */
  slots?: number;
  /** Loader options (callbacks aside); `sampler.rank`/`worldSize` are the default shard. */
  loader?: ServedLoaderOptions;
  /**
   * Instead of `slots` and `loader`: the keywords a Python user passed to `sluice.Loader(...)`, as given
   * (snake_case, groups as dicts); errors name them as the user wrote them.
   */
  python?: Record<string, unknown>;
  /** With `python`: the Python client's own keywords, suggested for a misspelled one. */
  clientKeywords?: string[];
  /** Exit when stdin reaches end of file (default false). */
  exitOnStdinEof?: boolean;
  /** Remove this directory (the socket's, made by the spawning client) on exit. */
  removeDir?: string;
  /**
   * Log each client's connection and disconnection, and the error that ends its session (default true; a
   * spawning client, which raises that error itself, turns it off).
   */
  logConnections?: boolean;
  /**
   * One server for every rank of this machine (`node_hub.ts`): a decode pool of `cpuBudget` Workers shared by
   * every client's loader, clips of one file shared across ranks; the server leaves `lingerMs` after its last
   * client (`node_exit.ts`).
   */
  node?: boolean;
  /** With `node`: the node's decode Workers (default: the cores less one per local rank). */
  cpuBudget?: number;
  /** Serve Prometheus metrics at `HOST:PORT` (`metrics.ts`). */
  metrics?: string;
  /** With `node`: ms it waits, once its last client left, before it leaves (default 2000). */
  lingerMs?: number;
  /** With `node`: ms it waits for its first client before it leaves (default 60000; `Infinity`: no limit). */
  firstClientMs?: number;
}

/** What {@link runServer} tells its caller once it listens. */
export interface ServerReady {
  /** The batch server. */
  server: BatchServer;
  /** The metrics endpoint, when asked for. */
  metrics: MetricsServer | null;
}

/**
 * Milliseconds closing may take once the server is told to stop: past that, {@link runServer} logs a line and
 * returns without waiting for its sessions, so the process exits anyway (a spawning trainer waits 3 s).
 */
export const CLOSE_TIMEOUT_MS = 1500;

/**
 * A factory building a loader per session from `options` (resolved at the server's door), with the client's
 * shard, first epoch and CUDA device (`device`: an NVDEC loader decodes there and its slots live there: one
 * server per GPU under torchrun), and `slots` batch slots (the loader's own unless `options` sets them): its
 * decode Workers write into the memory the client maps, so no pixel is copied after decode (not with
 * `ordered: false`: places are planned, so such a loader's batches are copied into the session's slots). See
 * `sessionOptions`.
 */
export function loaderFactory(
  options: ResolvedLoaderOptions,
  log?: (line: string) => void,
  slots: number = SERVER_TABLE.slots.default,
): LoaderFactory {
  return (req) => openLoader(sessionOptions(options, req, slots, log));
}

/**
 * Serves until a signal (or stdin's end with `exitOnStdinEof`, or a node server's last client leaving); calls
 * `onReady` once listening. Resolves when the server has closed, or when closing took longer than
 * {@link CLOSE_TIMEOUT_MS} (the process should then exit). The config is resolved once, here
 * (`resolveServerConfig`).
 * @param words how errors name the options, the config's and the loaders' at run time alike (default: as the
 *   config spells them; `sluice serve`: its flags)
 * @throws {InvalidArgumentError} before listening, for a config that is not valid or a metrics address it cannot
 *   listen on
 */
export async function runServer(
  given: ServerConfig,
  onReady?: (ready: ServerReady) => void,
  words?: Vocabulary,
): Promise<void> {
  let config;
  try {
    config = resolveServerConfig(given);
  } catch (e) {
    throw words === undefined ? e : rewordOptionError(e, words, PYTHON_OPTIONS);
  }
  const w = words ?? config.words;
  const hub = config.node
    ? await NodeHub.open(config.loader, { cpuBudget: config.cpuBudget, slots: config.slots })
    : null;
  let server: BatchServer, metrics: MetricsServer | null = null;
  try {
    server = await serveLoader(hub?.factory ?? loaderFactory(config.loader, undefined, config.slots), {
      socket: config.socket,
      slots: config.slots,
      logConnections: config.logConnections,
      // the loaders' errors about their options, named for the clients as the config names them
      reword: (e) => rewordOptionError(e, w, PYTHON_OPTIONS),
      // a node server's clients are every rank of the machine, and each of their loaders
      ...(hub === null ? {} : { node: () => hub.stats(), maxClients: 256 }),
    });
    if (config.metrics) {
      const at = config.metrics;
      try {
        metrics = serveMetrics(at, () => metricsText(server, hub?.stats()));
      } catch (e) {
        await server.close();
        throw new InvalidArgumentError(
          `serve: cannot serve metrics at ${at.hostname}:${at.port}: ${errorText(e)} (pick another address)`,
        );
      }
    }
  } catch (e) {
    await hub?.close();
    throw e;
  }
  const stopped = Promise.withResolvers<void>();
  const stop = () => stopped.resolve();
  const signals: Deno.Signal[] = ["SIGTERM", "SIGINT"];
  for (const s of signals) Deno.addSignalListener(s, stop);
  if (config.exitOnStdinEof) void waitStdinEof().then(stop);
  const leaving = new AbortController();
  if (config.node) void untilLastRankLeaves(server, config, leaving.signal).then(stop);
  onReady?.({ server, metrics });
  try {
    await Promise.race([server.finished, stopped.promise]);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = await Promise.race([
      server.close().then(() => false),
      new Promise<boolean>((r) => timer = setTimeout(() => r(true), CLOSE_TIMEOUT_MS)),
    ]);
    clearTimeout(timer);
    if (late) {
      console.error(
        `sluice serve: the server did not close within ${CLOSE_TIMEOUT_MS} ms; exiting without it`,
      );
    }
  } finally {
    leaving.abort();
    for (const s of signals) Deno.removeSignalListener(s, stop);
    await metrics?.close();
    await hub?.close();
    if (config.removeDir) {
      try {
        Deno.removeSync(config.removeDir, { recursive: true });
      } catch { /* gone */ }
    }
  }
}

async function waitStdinEof(): Promise<void> {
  const buf = new Uint8Array(256);
  try {
    while ((await Deno.stdin.read(buf)) !== null) { /* ignore input */ }
  } catch { /* closed */ }
}

if (import.meta.main) {
  if (Deno.args.includes("--options")) {
    // The keywords sluice.Loader passes through, for the Python client's docs and tests.
    console.log(JSON.stringify(pythonOptionList()));
    Deno.exit(0);
  }
  const i = Deno.args.indexOf("--config");
  let config: ServerConfig;
  try {
    if (i < 0 || Deno.args[i + 1] === undefined) throw new Error("usage: main.ts --config '<json>'");
    config = parsePythonJson(Deno.args[i + 1]) as ServerConfig; // a Python client's floats stay floats
  } catch (e) {
    console.error(`sluice serve: ${e instanceof Error ? e.message : e}`);
    Deno.exit(2);
  }
  try {
    await runServer(config, ({ server, metrics }) => {
      console.log(JSON.stringify({
        event: "ready",
        socket: server.socket,
        pid: Deno.pid,
        protocol: SERVE_PROTOCOL_VERSION,
        ...(metrics === null ? {} : { metrics: `${metrics.hostname}:${metrics.port}` }),
      }));
    });
  } catch (e) {
    // The spawning client reads stdout until "ready": it raises a sluice error by its class name.
    if (e instanceof SluiceError) {
      console.log(JSON.stringify({ event: "error", name: e.name, message: e.message }));
    } else console.error(`sluice serve: ${e instanceof Error ? e.stack : e}`);
    Deno.exit(1);
  }
  Deno.exit(0);
}
