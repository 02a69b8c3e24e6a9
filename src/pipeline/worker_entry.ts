/**
 * The script each `WorkerPool` Worker runs: imports the user's module (URL sent in the `init` message) and runs
 * its exported functions on `call` messages, one at a time, posting results back with their buffers transferred
 * (see `transfer.ts`). A worker that is about to die (`self.close()`, `Deno.exit()`, an uncaught exception or
 * unhandled rejection) says so first, so the pool can fail the running task with `WorkerCrashedError` (the
 * uncaught error as its `cause`) and replace the Worker, instead of waiting forever. Uncaught errors are handled
 * here rather than left to Deno, which would print them to stderr as "Uncaught (in worker …)" although the pool
 * reports them.
 * @module
 */

import { type SerializedError, serializeError } from "../error_wire.ts";
import { unwrapResult } from "./transfer.ts";

/** Messages the pool sends. */
export type ToWorker =
  | { type: "init"; url: string }
  | { type: "call"; id: number; name: string; args: unknown[] }
  /** The pool is closing: run the module's `release` export (if any), then say `released`. */
  | { type: "release" };

/** Messages a worker sends. */
export type FromWorker =
  | { type: "result"; id: number; value: unknown }
  /** The export threw: the error keeps its class, fields and cause chain (`deserializeError`). */
  | { type: "error"; id: number; error: SerializedError }
  /** The worker is about to die (or must be replaced): `error` is the uncaught error, if that is why. */
  | { type: "dying"; reason: string; error?: SerializedError }
  | { type: "released"; error?: string }
  /** The module has loaded (or failed to): calls run from now on (the pool counts the wait before as waiting). */
  | { type: "ready" };

/**
 * The Worker's global scope, typed by hand: a `/// <reference lib="deno.worker" />` directive would do it, but
 * JSR does not accept directives that change globals.
 */
interface WorkerScope {
  postMessage(message: unknown, transfer: Transferable[]): void;
  onmessage: ((e: MessageEvent<ToWorker>) => void) | null;
  close(): void;
  addEventListener(type: "error", listener: (e: ErrorEvent) => void): void;
  addEventListener(type: "unhandledrejection", listener: (e: PromiseRejectionEvent) => void): void;
}
const scope = globalThis as unknown as WorkerScope;

let url = "";
let mod: Promise<Record<string, unknown>> | undefined;
/** Calls started and not yet settled: an export may be awaiting between two native steps. */
const running = new Set<Promise<void>>();

function post(msg: FromWorker, transfer: Transferable[] = []): void {
  scope.postMessage(msg, transfer);
}

function patchExits(): void {
  const close = scope.close.bind(scope);
  scope.close = () => {
    post({ type: "dying", reason: "the worker called self.close()" });
    close();
  };
  const exit = Deno.exit;
  Object.defineProperty(Deno, "exit", {
    value: (code?: number) => {
      post({ type: "dying", reason: `the worker called Deno.exit(${code ?? ""})` });
      return exit(code);
    },
  });
}

async function call(id: number, name: string, args: unknown[]): Promise<void> {
  try {
    const m = await mod!;
    const fn = m[name];
    if (typeof fn !== "function") throw new TypeError(`${url} has no exported function "${name}"`);
    const { value, transfer } = unwrapResult(await fn(...args));
    post({ type: "result", id, value }, transfer);
  } catch (e) {
    post({ type: "error", id, error: serializeError(e) });
  }
}

/**
 * Frees per-thread native caches (decoders, scalers) through the module's optional `release` export, once the
 * calls still running have settled: a call awaiting between two native steps would otherwise go on after the
 * release, with its decoder destroyed under it, and into the Worker's termination, still writing into memory
 * its owner frees once the pool has closed (an NVDEC loader broken out of early crashed so).
 */
async function release(): Promise<void> {
  await Promise.allSettled([...running]);
  try {
    const m = await mod!;
    if (typeof m.release === "function") await m.release();
    post({ type: "released" });
  } catch (e) {
    post({ type: "released", error: e instanceof Error ? e.message : String(e) });
  }
}

/** An uncaught error or unhandled rejection: report it as the Worker's death; the pool terminates it. */
function catchUncaught(): void {
  const dying = (what: string, e: unknown) => {
    const err = serializeError(e);
    post({ type: "dying", reason: `${what} ${err.name}: ${err.message}`, error: err });
  };
  scope.addEventListener("error", (e) => {
    e.preventDefault();
    dying("uncaught", e.error ?? e.message);
  });
  scope.addEventListener("unhandledrejection", (e) => {
    e.preventDefault();
    dying("unhandled rejection", e.reason);
  });
}

patchExits();
catchUncaught();
scope.onmessage = (e: MessageEvent<ToWorker>) => {
  const msg = e.data;
  if (msg.type === "init") {
    url = msg.url;
    mod = import(msg.url);
    mod.then(() => post({ type: "ready" }), () => post({ type: "ready" })); // a failed import is reported per call
    return;
  }
  if (msg.type === "release") return void release();
  const p = call(msg.id, msg.name, msg.args);
  running.add(p);
  void p.finally(() => running.delete(p));
};
