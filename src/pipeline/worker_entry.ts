/**
 * The script each `WorkerPool` Worker runs: imports the user's module (URL sent in the `init` message) and runs
 * its exported functions on `call` messages, one at a time, posting results back with their buffers transferred
 * (see `transfer.ts`). A worker that is about to die (`self.close()`, `Deno.exit()`) says so first, so the pool
 * can fail the running task with `WorkerCrashedError` instead of waiting forever.
 * @module
 */

import { type SerializedError, serializeError } from "../errors.ts";
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
  | { type: "dying"; reason: string }
  | { type: "released"; error?: string };

/**
 * The Worker's global scope, typed by hand: a `/// <reference lib="deno.worker" />` directive would do it, but
 * JSR does not accept directives that change globals.
 */
interface WorkerScope {
  postMessage(message: unknown, transfer: Transferable[]): void;
  onmessage: ((e: MessageEvent<ToWorker>) => void) | null;
  close(): void;
}
const scope = globalThis as unknown as WorkerScope;

let url = "";
let mod: Promise<Record<string, unknown>> | undefined;

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

/** Frees per-thread native caches (decoders, scalers) through the module's optional `release` export. */
async function release(): Promise<void> {
  try {
    const m = await mod!;
    if (typeof m.release === "function") await m.release();
    post({ type: "released" });
  } catch (e) {
    post({ type: "released", error: e instanceof Error ? e.message : String(e) });
  }
}

patchExits();
scope.onmessage = (e: MessageEvent<ToWorker>) => {
  const msg = e.data;
  if (msg.type === "init") {
    url = msg.url;
    mod = import(msg.url);
    mod.catch(() => {}); // reported per call
    return;
  }
  if (msg.type === "release") return void release();
  void call(msg.id, msg.name, msg.args);
};
