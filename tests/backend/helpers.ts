/**
 * Shared by the backend tests: start a fixture backend (tests/backend/fixtures/echo_backend.ts) with its log
 * lines collected, tell whether a process is still there, bound a test step by a deadline, and compare items
 * that went through the item codec.
 * @module
 */
import { type BackendSource, spawnBackend, type SpawnBackendOptions } from "../../src/backend/spawn.ts";
import { VideoPackets } from "../../src/media/packets.ts";

/** The fixture backends' module. */
export const FIXTURE: URL = new URL("./fixtures/echo_backend.ts", import.meta.url);

/** Starts export `exportName` of the fixture module in a child; its log lines (stderr, failures) go to `lines`. */
export function spawnFixture(
  exportName: string,
  args: unknown,
  opts: Partial<SpawnBackendOptions> = {},
): { source: BackendSource; lines: string[] } {
  const lines: string[] = [];
  const source = spawnBackend({
    module: FIXTURE,
    export: exportName,
    args,
    log: (l) => lines.push(l),
    ...opts,
  });
  return { source, lines };
}

/** Whether process `pid` exists and has not exited (a zombie, exited but not yet reaped, counts as gone). */
export function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(Deno.readTextFileSync(`/proc/${pid}/stat`));
  } catch {
    return false;
  }
}

/** Waits (bounded, as a hang guard) until `pid` is gone; returns whether it went. */
export async function gone(pid: number, guardMs = 5000): Promise<boolean> {
  for (let waited = 0; waited < guardMs; waited += 20) {
    if (!alive(pid)) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return !alive(pid);
}

/** Runs `fn`, failing with a message naming `what` if it takes longer than `ms` (the hang guard of a test). */
export async function deadline<T>(ms: number, what: string, fn: () => Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const guard = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no outcome within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([fn(), guard]);
  } finally {
    clearTimeout(timer);
  }
}

/** `x` for a structural comparison: each `VideoPackets` in it as its serialization, everything else as it is. */
export function normalize(x: unknown): unknown {
  if (x instanceof VideoPackets) return { vp: x.serialize() };
  if (Array.isArray(x)) return x.map(normalize);
  if (x !== null && typeof x === "object" && !ArrayBuffer.isView(x)) {
    return Object.fromEntries(Object.entries(x).map(([k, v]) => [k, normalize(v)]));
  }
  return x;
}
