/**
 * Entry point of a backend child process (`deno run … child.ts`), started by `spawnBackend`. It reads an INIT
 * frame from stdin, imports the backend module, calls the named export with the JSON args, and serves epochs:
 * for each NEXT_EPOCH it iterates the pipeline and writes one ITEM frame per item to stdout — only while it
 * holds credit (CREDIT frames from the parent), so it never runs ahead of the parent's buffer — then END.
 * Per-stage failures go out as ITEM_ERROR frames, the pipeline's stats as STATS frames, a thrown pipeline as
 * FATAL (then exit 1), and a HEARTBEAT whenever nothing else was written for `heartbeatIntervalMs`, so the
 * parent can tell a busy child from a stopped one. EOF or STOP on stdin stops the pipeline and exits 0, so a
 * dead parent leaves no orphan. The parent's frames are checked like the child's (schema, order: INIT first
 * and once); a damaged control stream stops the child.
 * stdout carries frames only: console output is redirected to stderr, which the parent forwards.
 * @module
 */

import { errorText } from "../errors.ts";
import { serializeError } from "../error_wire.ts";
import type { PipelineEvent } from "../pipeline/hooks.ts";
import { describeItem } from "../pipeline/describe.ts";
import { failureLine } from "../pipeline/stage.ts";
import { readStream } from "./byte_reader.ts";
import { type Frame, MessageReader } from "./message_reader.ts";
import { MessageWriter } from "./message_writer.ts";
import { encodeItem } from "./item_codec.ts";
import { BACKEND_PIPE_BYTES, growPipe } from "./pipe_size.ts";
import {
  controlPayload,
  type EndPayload,
  type FatalPayload,
  FrameType,
  HEADER_SIZE,
  type InitPayload,
  type ItemErrorPayload,
  jsonBytes,
} from "./protocol.ts";
import { ProtocolError } from "../errors.ts";

/** Stage name under which items the transport cannot encode are counted. */
export const TRANSPORT_STAGE = "(backend transport)";
/** Errors sent per stage and report; later failures are only counted. */
const KEPT_ERRORS = 10;
const STOP_GRACE_MS = 1000;
/** Thrown out of the stdin reader's callback to end it after STOP. */
const STOPPED = Symbol("stopped");
const STDIN = "backend stdin";

interface Served extends AsyncIterable<unknown> {
  stats?: () => { stages: { name: string; failed: number }[] };
  stop?: () => Promise<void> | void;
}

/** Control state fed by the frames the parent writes to stdin. */
class Control {
  credits = 0;
  epochRequests = 0;
  stopped = false;
  init: Promise<InitPayload>;
  #resolveInit!: (p: InitPayload) => void;
  #wake: (() => void) | undefined;
  onStop: () => void = () => {};

  constructor() {
    this.init = new Promise((resolve) => this.#resolveInit = resolve);
  }

  async run(): Promise<void> {
    const reader = new MessageReader({
      source: STDIN,
      allowedTypes: new Set([FrameType.INIT, FrameType.CREDIT, FrameType.NEXT_EPOCH, FrameType.STOP]),
    });
    try {
      // Control frames are small: a 64 KiB buffer, reused for every read (see byte_reader.ts).
      await readStream(Deno.stdin.readable, {
        push: (chunk) => {
          for (const f of reader.push(chunk)) this.#handle(f);
          if (this.stopped) throw STOPPED;
        },
      }, 64 * 1024);
      reader.end();
    } catch (e) {
      if (e === STOPPED) return;
      console.error(`sluice backend: control stream from the parent failed: ${errorText(e)}`);
    }
    this.stop();
  }

  #handle(f: Frame): void {
    const payload = controlPayload(f.type, f.payload, f.offset + HEADER_SIZE, STDIN);
    if ((f.seq === 0) !== (f.type === FrameType.INIT)) {
      throw new ProtocolError(`${STDIN}: INIT must be the first frame, and only the first`, f.offset);
    }
    if (f.type === FrameType.INIT) {
      this.#resolveInit(payload as InitPayload);
    } else if (f.type === FrameType.CREDIT) {
      this.credits += payload as number;
    } else if (f.type === FrameType.NEXT_EPOCH) {
      this.epochRequests++;
    } else {
      this.stop();
    }
    this.#signal();
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.#signal();
    this.onStop();
  }

  /** Takes a credit when one is there and the child is not stopped (the per-item fast path, no await). */
  tryTakeCredit(): boolean {
    if (this.stopped || this.credits === 0) return false;
    this.credits--;
    return true;
  }

  /** Waits for a credit and takes it; false when stopped. */
  async takeCredit(): Promise<boolean> {
    while (!this.stopped && this.credits === 0) await this.#wait();
    if (this.stopped) return false;
    this.credits--;
    return true;
  }

  /** Waits for a NEXT_EPOCH request and takes it; false when stopped. */
  async takeEpoch(): Promise<boolean> {
    while (!this.stopped && this.epochRequests === 0) await this.#wait();
    if (this.stopped) return false;
    this.epochRequests--;
    return true;
  }

  #wait(): Promise<void> {
    return new Promise((resolve) => this.#wake = resolve);
  }

  #signal(): void {
    const w = this.#wake;
    this.#wake = undefined;
    w?.();
  }
}

/** Serves one backend; see the module docs. */
class BackendChild {
  readonly #out = new MessageWriter(Deno.stdout);
  readonly #control = new Control();
  #served!: Served;
  /** Per stage, the failures not yet relayed (the first {@link KEPT_ERRORS}). */
  readonly #errors = new Map<string, ItemErrorPayload["errors"]>();
  /** The log line of the failure the pipeline just reported as an event (ITEM_ERROR carries it instead). */
  #failureLine: string | undefined;
  readonly #reported = new Map<string, number>();
  #failuresReported = 0;
  #epoch = 0;
  #sent = 0;
  #lastStats = 0;
  #statsIntervalMs = 500;

  async main(): Promise<never> {
    const controlDone = this.#control.run();
    this.#control.onStop = () => this.#exitSoon();
    const init = await Promise.race([this.#control.init, controlDone.then(() => undefined)]);
    if (init === undefined) Deno.exit(0);
    this.#statsIntervalMs = init.statsIntervalMs;
    const beat = init.heartbeatIntervalMs;
    setInterval(() => {
      if (performance.now() - this.#out.lastWriteAt < beat) return;
      try {
        this.#out.write(FrameType.HEARTBEAT, []);
      } catch {
        Deno.exit(0); // stdout is broken: the parent is gone
      }
    }, Math.max(1, beat / 2));
    try {
      this.#served = await this.#load(init);
    } catch (e) {
      this.#fatal(e);
    }
    this.#out.write(FrameType.READY, [jsonBytes({ pid: Deno.pid })], true);
    const timer = setInterval(() => this.#report(), this.#statsIntervalMs);
    while (await this.#control.takeEpoch()) await this.#serveEpoch();
    clearInterval(timer);
    await this.#stopServed();
    Deno.exit(0);
  }

  async #load(init: InitPayload): Promise<Served> {
    const mod = await import(init.module);
    const fn = mod[init.export];
    if (typeof fn !== "function") {
      throw new TypeError(`${init.module} has no exported function "${init.export}"`);
    }
    const built = await fn(init.args);
    if (built !== null && typeof built === "object" && Symbol.asyncIterator in built) return built as Served;
    if (built !== null && typeof built === "object" && typeof built.build === "function") {
      return built.build({
        log: (m: string) => this.#onLog(m),
        hooks: [{ event: (e: PipelineEvent) => this.#onEvent(e) }],
      }) as Served;
    }
    throw new TypeError(
      `${init.module}#${init.export} returned neither a Pipeline, a PipelineBuilder nor an AsyncIterable`,
    );
  }

  async #serveEpoch(): Promise<void> {
    this.#epoch++;
    const failuresAtStart = this.#failuresReported;
    let items = 0;
    const it = this.#served[Symbol.asyncIterator]();
    try {
      for (;;) {
        if (!this.#control.tryTakeCredit() && !(await this.#control.takeCredit())) break;
        const r = await it.next();
        if (r.done) {
          this.#control.credits++;
          break;
        }
        if (this.#sendItem(r.value)) items++;
        else this.#control.credits++;
        if (performance.now() - this.#lastStats >= this.#statsIntervalMs) this.#report();
      }
    } catch (e) {
      this.#relayFailures();
      this.#fatal(e);
    }
    if (this.#control.stopped) {
      await it.return?.();
      return;
    }
    this.#report();
    const end: EndPayload = { epoch: this.#epoch, items, failures: this.#failuresReported - failuresAtStart };
    this.#out.write(FrameType.END, [jsonBytes(end)], true);
  }

  #sendItem(item: unknown): boolean {
    let parts: Uint8Array[];
    try {
      parts = encodeItem(item);
    } catch (e) {
      const error = { item: describeItem(item), error: serializeError(e) };
      this.#sendItemError({ stage: TRANSPORT_STAGE, count: 1, errors: [error] });
      return false;
    }
    this.#out.write(FrameType.ITEM, parts);
    this.#sent++;
    return true;
  }

  #onLog(message: string): void {
    if (message === this.#failureLine) {
      this.#failureLine = undefined; // the parent prints it from the ITEM_ERROR frame
      return;
    }
    this.#out.write(FrameType.LOG, [jsonBytes({ message })], true);
  }

  /** A failed task: kept for the next ITEM_ERROR (the pipeline logs its line right after the event). */
  #onEvent(e: PipelineEvent): void {
    if (e.type !== "failure") return;
    this.#failureLine = failureLine(e.stage, e.item, e.error);
    const list = this.#errors.get(e.stage) ?? [];
    if (list.length < KEPT_ERRORS) list.push({ item: e.item, error: serializeError(e.error) });
    this.#errors.set(e.stage, list);
  }

  /** Sends ITEM_ERROR frames for failures counted by the pipeline since the last report. */
  #relayFailures(): void {
    const stats = this.#served?.stats?.();
    if (stats === undefined) return;
    for (const s of stats.stages) {
      const delta = s.failed - (this.#reported.get(s.name) ?? 0);
      if (delta <= 0) continue;
      this.#reported.set(s.name, s.failed);
      this.#sendItemError({ stage: s.name, count: delta, errors: this.#errors.get(s.name) ?? [] });
      this.#errors.delete(s.name);
    }
  }

  #sendItemError(p: ItemErrorPayload): void {
    this.#failuresReported += p.count;
    this.#out.write(FrameType.ITEM_ERROR, [jsonBytes(p)], true);
  }

  #report(): void {
    this.#lastStats = performance.now();
    this.#relayFailures();
    const payload = {
      pipeline: this.#served?.stats?.() ?? null,
      epoch: this.#epoch,
      sent: this.#sent,
      credits: this.#control.credits,
    };
    this.#out.write(FrameType.STATS, [jsonBytes(payload)], true);
  }

  #fatal(e: unknown): never {
    const p: FatalPayload = { error: serializeError(e) };
    try {
      this.#out.write(FrameType.FATAL, [jsonBytes(p)], true);
    } catch {
      // The parent is gone; nobody to tell.
    }
    Deno.exit(1);
  }

  async #stopServed(): Promise<void> {
    try {
      await this.#served?.stop?.();
    } catch (e) {
      console.error(`sluice backend: stopping the pipeline failed: ${errorText(e)}`);
    }
  }

  /** On STOP or EOF: stop the pipeline, then exit even if something hangs. */
  #exitSoon(): void {
    const t = setTimeout(() => Deno.exit(0), STOP_GRACE_MS);
    this.#stopServed().then(() => {
      clearTimeout(t);
      Deno.exit(0);
    });
  }
}

if (import.meta.main) {
  growPipe(1, BACKEND_PIPE_BYTES); // stdout; best effort (see pipe_size.ts)
  const toStderr = (...a: unknown[]) => console.error(...a);
  console.log = toStderr;
  console.info = toStderr;
  console.debug = toStderr;
  await new BackendChild().main();
}
