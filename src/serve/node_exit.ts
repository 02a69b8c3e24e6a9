/**
 * When a node server leaves: with its last rank, without ever racing a rank that is arriving. Ranks and the
 * server agree through one lock file beside the socket (`<socket>.lock`, `flock`): a rank takes it to connect or
 * to start a server (the Python client, `python/sluice/_node.py`) and keeps it until the server has welcomed it;
 * the server takes it to leave. So a rank arriving while the server leaves either was welcomed first (the
 * server then has a client and stays) or finds no socket and starts a new server once the old one let go.
 *
 * Leaving, under the lock: the socket file is removed (nothing can connect any more), then the pid file the
 * starting rank wrote (`<socket>.pid`, when it names this process) and the lock file itself, and the clients'
 * `sluice-node-…` directory when it is empty; a rank waiting on the old lock file sees it gone and starts over. Nothing of the server is
 * left in the directory (its batch memory is memfd, never in `/dev/shm`).
 * @module
 */

import type { BatchServer } from "./server.ts";

/** The lock file of the node server at `socket`. */
export function nodeLockPath(socket: string): string {
  return `${socket}.lock`;
}

/** The pid file a starting rank writes for the node server at `socket`. */
export function nodePidPath(socket: string): string {
  return `${socket}.pid`;
}

/**
 * Resolves once `server` has had no client for `lingerMs` (its last rank left) or `firstClientMs` (none came
 * after it started: the rank that started it died) and, holding the lock, has stopped taking clients and
 * removed its files (see the module docs); the caller then closes it and exits. Resolves early when `signal`
 * aborts (the server is told to stop).
 */
export async function untilLastRankLeaves(
  server: BatchServer,
  { lingerMs, firstClientMs }: { lingerMs: number; firstClientMs: number },
  signal: AbortSignal,
): Promise<void> {
  const lockPath = nodeLockPath(server.socket);
  while (!signal.aborted) {
    await Promise.race([server.idle(), aborted(signal)]);
    if (signal.aborted) return;
    // It waits while nobody is connected; a client arriving ends the wait (it stays for that one).
    const waited = server.stats().accepted === 0 ? firstClientMs : lingerMs;
    const idle = new AbortController();
    const both = AbortSignal.any([signal, idle.signal]);
    await Promise.race([sleep(waited, both), server.nextClient(), aborted(signal)]);
    idle.abort();
    if (signal.aborted || server.clients > 0) continue;
    let lock: Deno.FsFile;
    try {
      lock = await Deno.open(lockPath, { read: true, write: true, create: true, mode: 0o600 });
    } catch {
      return; // the directory went away: nobody can find this server, leave
    }
    try {
      await lock.lock(true);
      // A rank welcomed while this waited for the lock: stay.
      if (server.clients > 0) continue;
      server.unlisten();
      removeIf(nodePidPath(server.socket), (text) => text.trim() === String(Deno.pid));
      removeIf(lockPath, () => sameFile(lock, lockPath));
      const dir = server.socket.slice(0, server.socket.lastIndexOf("/"));
      try {
        // the clients' own directory for node servers (never one a user named), once empty
        if (dir.slice(dir.lastIndexOf("/") + 1).startsWith("sluice-node")) Deno.removeSync(dir);
      } catch { /* not empty (another job's server), or gone */ }
      return;
    } finally {
      lock.close(); // releases the lock
    }
  }
}

function removeIf(path: string, test: (text: string) => boolean): void {
  try {
    if (test(Deno.readTextFileSync(path))) Deno.removeSync(path);
  } catch { /* gone already */ }
}

function sameFile(f: Deno.FsFile, path: string): boolean {
  try {
    return f.statSync().ino === Deno.statSync(path).ino;
  } catch {
    return false;
  }
}

function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((r) => signal.addEventListener("abort", () => r(), { once: true }));
}

/** Resolves after `ms` (never for `Infinity`), or when `signal` aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((r) => {
    const t = ms === Infinity ? undefined : setTimeout(r, ms);
    signal.addEventListener("abort", () => (clearTimeout(t), r()), { once: true });
  });
}
