/**
 * `WorkerSlot`: one Worker of a `WorkerPool` through its life. It starts the Worker on the pool's module
 * (`init`), knows when the module has loaded (`ready`: a call's wait for a Worker ends there), runs one call at a
 * time (the calls pinned to it before any from the pool's queue), and at the end retires it: the module's
 * `release` export runs, then the Worker is terminated. What the Worker answers (a call's result, its death) goes
 * to the pool that owns the slot, which settles the call, replaces a dead Worker and picks the next call.
 * @module
 */

import type { SerializedError } from "../error_wire.ts";
import type { FromWorker, ToWorker } from "./worker_entry.ts";

/** A call of a module's export, queued in the pool or given to one Worker. */
export interface Call {
  id: number;
  name: string;
  args: unknown[];
  transfer: Transferable[];
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
  /** Ends the call's wait in the pool's `waits` (idempotent), when made for a stage. */
  waited?: () => void;
}

/** A Worker's answer to a call: the export's result, or the error it threw. */
export type CallAnswer = Extract<FromWorker, { type: "result" | "error" }>;

/** What a {@link WorkerSlot} tells the pool that owns it. */
export interface SlotOwner {
  /** The Worker answered a call. */
  answered(slot: WorkerSlot, msg: CallAnswer): void;
  /** The Worker died (or must be replaced): `error` is the uncaught error, if that is why. */
  crashed(slot: WorkerSlot, reason: string, error?: SerializedError): void;
}

const ENTRY = new URL("./worker_entry.ts", import.meta.url);

/** One Worker of a pool, the call it runs and the calls pinned to it. */
export class WorkerSlot {
  /** The Worker has loaded its module (said `ready`): a call it is given runs at once. */
  ready = false;
  readonly worker: Worker;
  /** The Worker's number in its pool (in its name, `sluice-pool-<index>`, and in errors). */
  readonly index: number;
  current: Call | undefined = undefined;
  /** Calls for this Worker only (the pool's `callEach`), run before the shared queue. */
  readonly pinned: Call[] = [];

  /** Starts a Worker on the module at `moduleUrl`; it tells `owner` what it answers. */
  constructor(index: number, moduleUrl: string, owner: SlotOwner) {
    this.worker = new Worker(ENTRY, { type: "module", name: `sluice-pool-${index}` });
    this.index = index;
    this.worker.onmessage = (e: MessageEvent<FromWorker>) => this.#onMessage(owner, e.data);
    this.worker.onerror = (e: ErrorEvent) => {
      e.preventDefault();
      owner.crashed(this, `uncaught ${e.message}`);
    };
    this.worker.onmessageerror = () =>
      owner.crashed(this, "a message from the worker could not be deserialized");
    this.worker.postMessage({ type: "init", url: moduleUrl } satisfies ToWorker);
  }

  /** Runs no call and has none pinned: a shrinking pool may retire it now. */
  get idle(): boolean {
    return this.current === undefined && this.pinned.length === 0;
  }

  /** Pins a call to this Worker: it runs after the current one, or at once if there is none. */
  pin(c: Call): void {
    this.pinned.push(c);
    if (this.current === undefined) this.dispatch(this.pinned.shift()!);
  }

  /** Hands the Worker a call to run now (it must have none running). */
  dispatch(c: Call): void {
    if (this.ready) c.waited?.(); // else the wait goes on until the Worker has started (`ready`)
    this.current = c;
    const msg: ToWorker = { type: "call", id: c.id, name: c.name, args: c.args };
    try {
      this.worker.postMessage(msg, c.transfer);
    } catch (e) {
      this.current = undefined;
      c.reject(e); // not cloneable / not transferable: the caller's fault, the worker is fine
    }
  }

  /**
   * Fails the call the Worker runs and the calls pinned to it, as the Worker dies or its pool closes.
   * @param errorFor the error for each call, told whether the Worker was running it
   */
  rejectCalls(errorFor: (c: Call, running: boolean) => unknown): void {
    this.current?.reject(errorFor(this.current, true));
    for (const c of this.pinned.splice(0)) c.reject(errorFor(c, false));
  }

  /**
   * Asks the Worker to run its release hook, then terminates it (also when it does not answer within
   * `timeoutMs`). From here on the owner hears nothing more of its messages.
   */
  retire(timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.worker.terminate();
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      this.worker.onmessage = (e: MessageEvent<FromWorker>) => {
        if (e.data.type === "released" || e.data.type === "dying") done();
      };
      this.worker.onerror = (e: ErrorEvent) => {
        e.preventDefault();
        done();
      };
      this.worker.postMessage({ type: "release" } satisfies ToWorker);
    });
  }

  /** What the Worker says while in the pool: its death, that its module loaded, or a call's answer. */
  #onMessage(owner: SlotOwner, msg: FromWorker): void {
    if (msg.type === "dying") return owner.crashed(this, msg.reason, msg.error);
    if (msg.type === "released") return; // answered while retiring (see retire), which installs its own handler
    if (msg.type === "ready") {
      this.ready = true;
      return void this.current?.waited?.();
    }
    owner.answered(this, msg);
  }
}
