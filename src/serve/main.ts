/**
 * The batch server as a process: `deno run -A src/serve/main.ts --config '<json>'` (what the Python client
 * spawns; `sluice serve` runs the same {@link runServer}). The config is a {@link ServerConfig}; the server
 * builds one loader per client session from `loader` with the client's shard and epoch, prints one JSON line
 * `{"event":"ready",…}` to stdout once it listens, and runs until SIGTERM/SIGINT, or until its stdin reaches
 * end of file when `exitOnStdinEof` is set (the spawning trainer died: the server must not outlive it). Once
 * told to stop it exits within `closeTimeoutMs`, whatever its sessions are doing.
 * @module
 */

import { type LoaderOptions, videoClassificationLoader } from "../loader/loader.ts";
import { InvalidArgumentError, SluiceError } from "../errors.ts";
import { SERVE_PROTOCOL_VERSION } from "./protocol.ts";
import { type BatchServer, type LoaderFactory, serveLoader } from "./server.ts";

/** What {@link runServer} needs; JSON-compatible. */
export interface ServerConfig {
  /** Unix socket path. */
  socket: string;
  /** Batch slots per client (default 4). */
  slots?: number;
  /** Loader options (callbacks aside); `sampler.rank`/`worldSize` are the default shard. */
  loader: Omit<LoaderOptions, "onReport" | "log">;
  /** Exit when stdin reaches end of file (default false). */
  exitOnStdinEof?: boolean;
  /** Remove this directory (the socket's, made by the spawning client) on exit. */
  removeDir?: string;
  /** Log each client's connection (default true; a spawning client turns it off). */
  logConnections?: boolean;
  /**
   * Milliseconds closing may take once the server is told to stop (default 1500): past that, {@link runServer}
   * logs a line and returns without waiting for the sessions, so the process exits anyway.
   */
  closeTimeoutMs?: number;
}

/**
 * A factory building a loader per session from `options`, with the client's shard and first epoch, and `slots`
 * batch slots (the loader's own unless `options` sets them): its decode Workers write into the memory the
 * client maps, so no pixel is copied after decode (not with `ordered: false`: places are planned, so such a
 * loader's batches are copied into the session's slots).
 */
export function loaderFactory(
  options: ServerConfig["loader"],
  log?: (line: string) => void,
  slots = 4,
): LoaderFactory {
  return (req) =>
    videoClassificationLoader({
      ...(options.ordered === false ? {} : { slots }),
      ...options,
      sampler: {
        ...options.sampler,
        ...(req.rank !== undefined ? { rank: req.rank, worldSize: req.worldSize } : {}),
      },
      firstEpoch: req.firstEpoch,
      ...(log ? { log } : {}),
    });
}

/**
 * Serves until a signal (or stdin's end with `exitOnStdinEof`); calls `onReady` once listening. Resolves when
 * the server has closed, or when closing took longer than `closeTimeoutMs` (the process should then exit).
 */
export async function runServer(
  config: ServerConfig,
  onReady?: (server: BatchServer) => void,
): Promise<void> {
  if (typeof config !== "object" || config === null || typeof config.loader !== "object") {
    throw new InvalidArgumentError("serve: the config needs a socket and loader options");
  }
  const server = await serveLoader(loaderFactory(config.loader, undefined, config.slots), {
    socket: config.socket,
    slots: config.slots,
    logConnections: config.logConnections,
  });
  const stopped = Promise.withResolvers<void>();
  const stop = () => stopped.resolve();
  const signals: Deno.Signal[] = ["SIGTERM", "SIGINT"];
  for (const s of signals) Deno.addSignalListener(s, stop);
  if (config.exitOnStdinEof) void waitStdinEof().then(stop);
  onReady?.(server);
  try {
    await Promise.race([server.finished, stopped.promise]);
    const limit = config.closeTimeoutMs ?? 1500;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = await Promise.race([
      server.close().then(() => false),
      new Promise<boolean>((r) => timer = setTimeout(() => r(true), limit)),
    ]);
    clearTimeout(timer);
    if (late) console.error(`sluice serve: the server did not close within ${limit} ms; exiting without it`);
  } finally {
    for (const s of signals) Deno.removeSignalListener(s, stop);
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
  const i = Deno.args.indexOf("--config");
  let config: ServerConfig;
  try {
    if (i < 0 || Deno.args[i + 1] === undefined) throw new Error("usage: main.ts --config '<json>'");
    config = JSON.parse(Deno.args[i + 1]);
  } catch (e) {
    console.error(`sluice serve: ${e instanceof Error ? e.message : e}`);
    Deno.exit(2);
  }
  try {
    await runServer(config, (server) => {
      console.log(JSON.stringify({
        event: "ready",
        socket: server.socket,
        pid: Deno.pid,
        protocol: SERVE_PROTOCOL_VERSION,
      }));
    });
  } catch (e) {
    console.error(`sluice serve: ${e instanceof SluiceError ? e.message : e instanceof Error ? e.stack : e}`);
    Deno.exit(1);
  }
  Deno.exit(0);
}
