/**
 * `spawnBackend`: runs a pipeline in a child Deno process and streams its items back over the child's stdout
 * as framed binary (protocol version 4, see docs/protocol.md). The returned {@link BackendSource} is an
 * `AsyncIterable` usable directly as `PipelineBuilder.addSource(source)`: each iteration is one epoch of the
 * child's pipeline, and the same child serves every epoch. The child sends an item only against a credit, and
 * the parent returns a credit only when its consumer takes an item, so at most `bufferSize` items are ever
 * buffered in the parent and the child never runs ahead of them.
 *
 * Everything the child writes is untrusted: frames are checked by the reader (header, CRCs, sequence, sizes),
 * control payloads by their schema, items by the item codec, and the order of frames against what the parent
 * asked for (no ITEM without a credit or outside an epoch, END counts that match). The child's liveness is
 * watched: it sends a HEARTBEAT when it has nothing else to send, and a silent child is a warning after
 * `stallWarningMs` and a {@link BackendStalledError} (the child killed) after `stallTimeoutMs`.
 *
 * This module is the conversation: the consumer's queue and the frames read. Beside it: what the child's frames
 * may say and when, and their counts, in `child_frames.ts`; the child as a process (start, stderr, exit, stop) in
 * `backend_process.ts`, what the parent sends and its credit batching in `outbox.ts`, the silence watch in
 * `liveness.ts`, the stats' shapes in `backend_stats.ts`.
 * @module
 */

import {
  BackendStalledError,
  InvalidArgumentError,
  PipelineStoppedError,
  ProtocolError,
  type StageError,
} from "../errors.ts";
import type { Clock } from "../pipeline/clock.ts";
import type { BackendStats } from "./backend_stats.ts";
import { BackendProcess } from "./backend_process.ts";
import { readStream } from "./byte_reader.ts";
import { ChildFrames } from "./child_frames.ts";
import { type Frame, MessageReader } from "./message_reader.ts";
import { Liveness } from "./liveness.ts";
import { Outbox } from "./outbox.ts";
import { BACKEND_PIPE_BYTES } from "./pipe_size.ts";
import { type EndPayload, FrameType, type InitPayload, jsonBytes } from "./protocol.ts";

/** Options of {@link spawnBackend}. */
export interface SpawnBackendOptions {
  /** The backend module (URL or absolute path). */
  module: string | URL;
  /** Its export: a function `(args) => Pipeline | PipelineBuilder | AsyncIterable` (default `"default"`). */
  export?: string;
  /** JSON-compatible arguments passed to that function in the child. */
  args?: unknown;
  /** Items the parent buffers, i.e. how far the child may run ahead of the consumer (default 3). */
  bufferSize?: number;
  /** Deno permission flags for the child (default `["--allow-read", "--allow-env", "--allow-ffi"]`). */
  permissions?: string[];
  /** Extra environment variables for the child (added to the parent's environment). */
  env?: Record<string, string>;
  /**
   * The module imports only files by relative path: run the child with no configuration file, lock file, npm or
   * remote imports (`--no-config --no-lock --no-npm --no-remote`), so a `deno.json` or `package.json` where the
   * program runs (a user's project around an installed sluice) cannot change or break it. Default false: the
   * child resolves imports as `deno run` does there.
   */
  isolated?: boolean;
  /** Aborting it terminates the child; a pending `next()` then rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Milliseconds between the child's STATS frames (default 500). */
  statsIntervalMs?: number;
  /** Where forwarded stderr lines and item-failure messages go (default `console.error`). */
  log?: (line: string) => void;
  /** Milliseconds `close()` waits after SIGTERM before SIGKILL (default 1000). */
  killGraceMs?: number;
  /** The child sends a HEARTBEAT frame when it has sent nothing else for this many milliseconds (default 500). */
  heartbeatIntervalMs?: number;
  /**
   * A child silent (no frame at all) for this many milliseconds is reported: one log line, and `stalled` in
   * `stats()` until it speaks again (default 3000).
   */
  stallWarningMs?: number;
  /**
   * A child silent for this many milliseconds is killed and the source fails with `BackendStalledError`
   * (default 30000; `Infinity` waits forever).
   */
  stallTimeoutMs?: number;
  /** The time source of the liveness watch (default: wall-clock time; tests pass a virtual clock). */
  clock?: Clock;
}

type Entry =
  | { kind: "item"; value: unknown; bytes: number }
  | { kind: "end"; end: EndPayload }
  | { kind: "error"; error: unknown };

const STREAM = "backend stdout";
const CHILD_TO_PARENT = new Set<number>([
  FrameType.ITEM,
  FrameType.ITEM_ERROR,
  FrameType.STATS,
  FrameType.LOG,
  FrameType.END,
  FrameType.FATAL,
  FrameType.READY,
  FrameType.HEARTBEAT,
]);

/** The options of {@link spawnBackend} checked and defaulted, and the INIT payload they make. */
interface SpawnSettings {
  name: string;
  bufferSize: number;
  stallTimeoutMs: number;
  stallWarningMs: number;
  heartbeatIntervalMs: number;
  init: InitPayload;
}

function spawnSettings(opts: SpawnBackendOptions): SpawnSettings {
  const bufferSize = opts.bufferSize ?? 3;
  if (!Number.isInteger(bufferSize) || bufferSize < 1) {
    throw new InvalidArgumentError(`spawnBackend: bufferSize must be a positive integer, got ${bufferSize}`);
  }
  const ms = (name: string, v: number | undefined, dflt: number, infinite = false): number => {
    const x = v ?? dflt;
    if (!(x > 0 && (Number.isFinite(x) ? x <= 0x7fffffff : infinite))) {
      throw new InvalidArgumentError(
        `spawnBackend: ${name} must be a positive number of milliseconds, got ${x}`,
      );
    }
    return x;
  };
  const heartbeatIntervalMs = ms("heartbeatIntervalMs", opts.heartbeatIntervalMs, 500);
  const stallWarningMs = ms("stallWarningMs", opts.stallWarningMs, 3000, true);
  const stallTimeoutMs = ms("stallTimeoutMs", opts.stallTimeoutMs, 30_000, true);
  const statsIntervalMs = ms("statsIntervalMs", opts.statsIntervalMs, 500);
  const module = opts.module instanceof URL
    ? opts.module.href
    : /^[a-z][a-z0-9+.-]*:/i.test(opts.module)
    ? opts.module
    : new URL(`file://${opts.module}`).href;
  const exportName = opts.export ?? "default";
  return {
    name: `${module}#${exportName}`,
    bufferSize,
    stallTimeoutMs,
    stallWarningMs,
    heartbeatIntervalMs,
    init: { module, export: exportName, args: opts.args ?? null, statsIntervalMs, heartbeatIntervalMs },
  };
}

/** The failure of a child silent for `silentMs`, which is killed. */
function stalledError(name: string, pid: number, silentMs: number, timeoutMs: number): BackendStalledError {
  return new BackendStalledError(
    `backend ${name} (pid ${pid}) sent nothing, not even a heartbeat, for ` +
      `${(silentMs / 1000).toFixed(1)} s (stallTimeoutMs ${timeoutMs}): killed`,
    name,
    silentMs,
  );
}

/**
 * Starts a backend child process: a Deno child that runs `opts.module`'s export and streams its items back,
 * each checked before use, against credits (at most `bufferSize` wait in this process), its liveness watched.
 * @param opts the module and export to run, its arguments, and the transport's limits ({@link SpawnBackendOptions})
 * @returns the source of its items: one iteration per epoch of the child's pipeline
 * @throws {InvalidArgumentError} for `bufferSize` or a time limit out of range
 */
export function spawnBackend(opts: SpawnBackendOptions): BackendSource {
  return new BackendSource(opts);
}

/** A pipeline running in a child process, as an `AsyncIterable` of its items. Create with {@link spawnBackend}. */
export class BackendSource implements AsyncIterable<unknown>, AsyncDisposable {
  readonly #name: string;
  readonly #log: (line: string) => void;
  readonly #killGraceMs: number;
  readonly #signal: AbortSignal | undefined;
  readonly #onAbort: () => void;
  readonly #process: BackendProcess;
  readonly #outbox: Outbox;
  readonly #liveness: Liveness;
  readonly #reader = new MessageReader({ source: STREAM, allowedTypes: CHILD_TO_PARENT });
  readonly #frames: ChildFrames;
  readonly #queue: Entry[] = [];
  readonly #failure = new AbortController();
  #bufferedItems = 0;
  #wake: (() => void) | undefined;
  #epochRequested = false;
  #iterating = false;
  #closing: Promise<void> | undefined;
  #terminated = false;
  #failed = false;
  #exited = false;
  #exitError: unknown;
  #truncated: unknown;
  readonly #pumps: Promise<unknown>;
  #bufferedBytes = 0;
  #peakBuffered = 0;
  #peakBufferedBytes = 0;

  /** Use {@link spawnBackend}. */
  constructor(opts: SpawnBackendOptions) {
    const { name, bufferSize, stallTimeoutMs, init, ...watch } = spawnSettings(opts);
    this.#name = name;
    this.#log = opts.log ?? ((line) => console.error(line));
    this.#killGraceMs = opts.killGraceMs ?? 1000;
    this.#process = new BackendProcess({
      permissions: opts.permissions,
      env: opts.env,
      isolated: opts.isolated,
      log: this.#log,
    });
    this.#outbox = new Outbox((bytes) => this.#process.write(bytes), bufferSize);
    this.#frames = new ChildFrames(STREAM, name, this.#process.pid, () => this.#outbox.granted, {
      item: (value, bytes) => this.#onItem(value, bytes),
      end: (end) => this.#push({ kind: "end", end }),
      fatal: (error) => this.#fail(error),
      log: this.#log,
    });
    this.#liveness = new Liveness({
      heartbeatIntervalMs: watch.heartbeatIntervalMs,
      warningMs: watch.stallWarningMs,
      timeoutMs: stallTimeoutMs,
      log: (line) => this.#log(`[backend ${this.pid}] ${line}`),
      ...(opts.clock ? { clock: opts.clock } : {}),
      onTimeout: (silent) => {
        this.#fail(stalledError(name, this.pid, silent, stallTimeoutMs));
        this.#process.kill("SIGKILL");
      },
    });
    this.#pumps = Promise.all([this.#pumpStdout(), this.#process.stderrDone]).then(() => this.#onExit());
    this.#outbox.send(FrameType.INIT, jsonBytes(init));
    this.#grant(bufferSize);
    this.#requestEpoch();
    this.#signal = opts.signal;
    this.#onAbort = () => {
      this.#push({ kind: "error", error: this.#signal?.reason });
      void this.close();
    };
    if (this.#signal?.aborted) this.#onAbort();
    else this.#signal?.addEventListener("abort", this.#onAbort, { once: true });
  }

  /** The child's process id. */
  get pid(): number {
    return this.#process.pid;
  }

  /**
   * Aborted, with the error as its reason, when the backend fails: the child exits or is killed
   * (`BackendExitedError`), its pipeline throws (that error, with its class), it stalls (`BackendStalledError`)
   * or its stream is damaged (`ProtocolError`); never by `close()` or the `signal` option. A pipeline this source feeds
   * ends with that error itself, rather than a `PipelineFailure` wrapping it, when built with this signal:
   * `builder.addSource(source).….build({ signal: source.failure })`.
   */
  get failure(): AbortSignal {
    return this.#failure.signal;
  }

  /**
   * One epoch of the child's pipeline. One iteration at a time; `break` (`return()`) terminates the child.
   * @returns the epoch's items, in the order the child sent them
   * @throws the backend's failure ({@link failure}'s reason) when it failed, {@link PipelineStoppedError} once
   *   closed, {@link InvalidArgumentError} while another iteration runs
   */
  [Symbol.asyncIterator](): AsyncIterator<unknown> {
    if (this.#failure.signal.aborted) throw this.#failure.signal.reason;
    if (this.#closing !== undefined || this.#terminated) {
      throw new PipelineStoppedError(`backend ${this.#name} is closed`);
    }
    if (this.#exitError !== undefined) throw this.#exitError;
    if (this.#iterating) {
      throw new InvalidArgumentError(`backend ${this.#name}: an epoch is already being iterated`);
    }
    this.#iterating = true;
    this.#requestEpoch();
    return {
      next: () => this.#next(),
      return: async (value?: unknown) => {
        this.#iterating = false;
        await this.close();
        return { done: true, value };
      },
    };
  }

  /**
   * Transport counters, item failures, liveness, and the child pipeline's own stats as last relayed.
   * @returns the counters now
   */
  stats(): BackendStats {
    return {
      pid: this.pid,
      state: this.#exited ? "exited" : "running",
      ...this.#frames.counts(),
      bufferedBytes: this.#bufferedBytes,
      peakBuffered: this.#peakBuffered,
      peakBufferedBytes: this.#peakBufferedBytes,
      buffered: this.#bufferedItems,
      partialFrameBytes: this.#reader.bufferedBytes,
      silentMs: this.#exited ? 0 : this.#liveness.silentMs,
      stalled: this.#liveness.stalled,
      stalls: this.#liveness.stalls,
    };
  }

  /** Item failures the child reported (counted, never thrown). */
  get failures(): number {
    return this.#frames.failures;
  }

  /**
   * The first item failures the child reported with their errors (at most ten per stage and report, and
   * 100 in all), each rebuilt with its class: a `MediaError` in the child is a `MediaError` here.
   */
  get errors(): readonly StageError[] {
    return this.#frames.errors;
  }

  /** Terminates the child (stdin EOF, then SIGTERM, then SIGKILL after `killGraceMs`) and waits for it. */
  close(): Promise<void> {
    this.#closing ??= this.#terminate();
    return this.#closing;
  }

  /** Same as {@link close}. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  // ---- consumer side --------------------------------------------------------------------------------------

  async #next(): Promise<IteratorResult<unknown>> {
    if (!this.#iterating) return { done: true, value: undefined };
    let e = this.#queue.shift();
    while (e === undefined) {
      if (this.#exitError !== undefined) {
        e = { kind: "error", error: this.#exitError };
        break;
      }
      await new Promise<void>((resolve) => this.#wake = resolve);
      e = this.#queue.shift();
    }
    if (e.kind === "item") {
      this.#bufferedItems--;
      this.#bufferedBytes -= e.bytes;
      this.#grant(1);
      return { done: false, value: e.value };
    }
    this.#iterating = false;
    if (e.kind === "end") {
      this.#epochRequested = false;
      return { done: true, value: undefined };
    }
    this.#failed = true;
    this.#queue.length = 0;
    this.#bufferedItems = 0;
    this.#queue.push(e);
    await this.close();
    throw e.error;
  }

  #push(e: Entry): void {
    if (this.#failed) return;
    if (e.kind === "error" && this.#queue.some((x) => x.kind === "error")) return;
    if (e.kind === "item") this.#bufferedItems++;
    this.#queue.push(e);
    this.#wakeUp();
  }

  /**
   * The backend can deliver nothing more: aborts {@link BackendSource.failure} first (so that a pipeline built
   * with it ends with `error` itself), then hands `error` to the consumer. The first failure wins.
   */
  #fail(error: unknown): void {
    if (this.#closing !== undefined) return;
    if (!this.#failure.signal.aborted) this.#failure.abort(error);
    this.#push({ kind: "error", error: this.#failure.signal.reason });
  }

  #wakeUp(): void {
    const w = this.#wake;
    this.#wake = undefined;
    w?.();
  }

  #requestEpoch(): void {
    if (this.#epochRequested) return;
    this.#epochRequested = true;
    this.#frames.epochRequested();
    this.#outbox.send(FrameType.NEXT_EPOCH, new Uint8Array(0));
  }

  /** Returns `n` credits to the child (at once when the consumer is about to wait: see `outbox.ts`). */
  #grant(n: number): void {
    this.#outbox.grant(n, this.#bufferedItems === 0);
  }

  // ---- child → parent -------------------------------------------------------------------------------------

  async #pumpStdout(): Promise<void> {
    const reader = this.#reader;
    const stdout = this.#process.stdout;
    try {
      await readStream(stdout, {
        push: (chunk) => {
          for (const f of reader.push(chunk)) this.#onFrame(f);
        },
        directTarget: (minBytes) => reader.payloadSpace(minBytes),
        directFilled: (filled) => {
          for (const f of reader.commitPayload(filled)) this.#onFrame(f);
        },
      }, BACKEND_PIPE_BYTES);
    } catch (e) {
      this.#fail(e);
      if (e instanceof ProtocolError) this.#process.kill("SIGKILL");
      // Drain the rest so the child never blocks on a full pipe while it is being stopped.
      try {
        for await (const _ of stdout) { /* discard */ }
      } catch { /* already closed */ }
      return;
    }
    try {
      this.#reader.end();
    } catch (e) {
      this.#truncated = e; // reported by #onExit, after the exit status (the likelier cause) is known
    }
  }

  #onFrame(f: Frame): void {
    this.#liveness.heard();
    this.#frames.take(f);
  }

  #onItem(value: unknown, bytes: number): void {
    this.#bufferedBytes += bytes;
    this.#push({ kind: "item", value, bytes });
    this.#peakBuffered = Math.max(this.#peakBuffered, this.#bufferedItems);
    this.#peakBufferedBytes = Math.max(this.#peakBufferedBytes, this.#bufferedBytes);
  }

  async #onExit(): Promise<void> {
    const status = await this.#process.status;
    this.#exited = true;
    this.#liveness.stop();
    this.#exitError = this.#process.exitError(this.#name, status, this.#truncated);
    if (this.#closing !== undefined) return;
    if (status.success && this.#truncated !== undefined) this.#fail(this.#truncated);
    else if (!status.success || this.#epochRequested) this.#fail(this.#exitError);
    else this.#wakeUp();
  }

  // ---- termination ----------------------------------------------------------------------------------------

  async #terminate(): Promise<void> {
    this.#liveness.stop();
    this.#signal?.removeEventListener("abort", this.#onAbort);
    this.#outbox.close();
    await this.#process.stop(this.#killGraceMs);
    await this.#pumps;
    this.#terminated = true;
    const w = this.#wake;
    this.#wake = undefined;
    if (w !== undefined) {
      this.#queue.push({
        kind: "error",
        error: new PipelineStoppedError(`backend ${this.#name} was closed`),
      });
      w();
    }
  }
}
