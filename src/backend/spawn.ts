/**
 * `spawnBackend`: runs a pipeline in a child Deno process and streams its items back over the child's stdout
 * as framed binary (protocol version 2, see docs/protocol.md). The returned {@link BackendSource} is an
 * `AsyncIterable` usable directly as `PipelineBuilder.addSource(source)`: each iteration is one epoch of the
 * child's pipeline, and the same child serves every epoch. The child sends an item only against a credit, and
 * the parent returns a credit only when its consumer takes an item, so at most `bufferSize` items are ever
 * buffered in the parent and the child never runs ahead of them.
 * @module
 */

import {
  BackendError,
  BackendExitedError,
  InvalidArgumentError,
  PipelineStoppedError,
  ProtocolError,
} from "../errors.ts";
import { readStream } from "./byte_reader.ts";
import { BACKEND_PIPE_BYTES } from "./pipe_size.ts";
import { type Frame, FrameReader } from "./frame_reader.ts";
import { decodeItem } from "./item_codec.ts";
import {
  creditPayload,
  encodeFrame,
  type EndPayload,
  type FatalPayload,
  FrameType,
  type FrameTypeCode,
  frameTypeName,
  type InitPayload,
  type ItemErrorPayload,
  jsonBytes,
  parseJson,
} from "./protocol.ts";

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
  /** Aborting it terminates the child; a pending `next()` then rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Milliseconds between the child's STATS frames (default 500). */
  statsIntervalMs?: number;
  /** Where forwarded stderr lines and item-failure messages go (default `console.error`). */
  log?: (line: string) => void;
  /** Milliseconds `close()` waits after SIGTERM before SIGKILL (default 1000). */
  killGraceMs?: number;
}

/** What `BackendSource.stats()` returns. */
export interface BackendStats {
  /** The child's process id. */
  pid: number;
  /** `"running"` while the child is alive; `"exited"` after it ended (closed, crashed or failed). */
  state: "running" | "exited";
  /** Epochs completed (END frames received). */
  epochs: number;
  /** Items received, and their encoded bytes. */
  items: number;
  bytes: number;
  /** Item failures reported by the child (counted, not thrown), in total and per stage. */
  failures: number;
  failuresByStage: Record<string, number>;
  /** Items (and their bytes) received but not yet taken by the consumer; never above `bufferSize`. */
  buffered: number;
  bufferedBytes: number;
  /** The highest `buffered` / `bufferedBytes` seen. */
  peakBuffered: number;
  peakBufferedBytes: number;
  /** Bytes held for a frame still arriving. */
  partialFrameBytes: number;
  /** The child's own per-stage pipeline stats, as last relayed (null before the first STATS frame). */
  child: ChildStats | null;
}

/** The child's STATS payload. */
export interface ChildStats {
  /** The child pipeline's `stats()` (a `PipelineStats`), or null when the backend is a plain AsyncIterable. */
  pipeline: unknown;
  /** The child's epoch number. */
  epoch: number;
  /** ITEM frames the child has sent in total. */
  sent: number;
  /** Credits the child held. */
  credits: number;
}

type Entry =
  | { kind: "item"; value: unknown; bytes: number }
  | { kind: "end"; end: EndPayload }
  | { kind: "error"; error: unknown };

const DEFAULT_PERMISSIONS = ["--allow-read", "--allow-env", "--allow-ffi"];
const STDERR_TAIL = 20;
const EXIT_GRACE_MS = 200;
const CHILD_ENTRY = new URL("./child.ts", import.meta.url).href;
/**
 * glibc malloc settings for the child, unless the caller's `env` sets them. By default glibc raises its mmap
 * threshold each time a big block is freed (up to 32 MiB), after which frame payloads, packet buffers and pipe
 * read buffers come from the heap, where freed space fragments and is rarely given back: the child's RSS crept
 * up ~10% over 10 epochs of the loader. A fixed threshold keeps big blocks in their own mappings, which go back
 * to the system as soon as they are freed. It is 32 KiB rather than glibc's initial 128 KiB because the child's
 * typical blocks are smaller: a demuxed clip's packets (the loader's demo clips average ~54 KiB) are allocated in
 * a demux Worker's malloc arena and freed on the main thread once written, and between 32 and 128 KiB they
 * fragmented those arenas (child RSS +3–4.7 MiB over epochs 2–10 of bench/rss_epochs.ts at 128 KiB, +2.6 MiB at
 * 32 KiB, +3.0–3.6 MiB at 64 KiB; 3 runs each). At the child's item rate the extra mmap/munmap pairs cost
 * nothing measurable (bench/loader_vs_ffmpeg.ts within run-to-run noise).
 */
const CHILD_MALLOC_ENV: Record<string, string> = { MALLOC_MMAP_THRESHOLD_: "32768" };
const CHILD_TO_PARENT = new Set<number>([
  FrameType.ITEM,
  FrameType.ITEM_ERROR,
  FrameType.STATS,
  FrameType.LOG,
  FrameType.END,
  FrameType.FATAL,
  FrameType.READY,
]);

/** Starts a backend child process; see the module docs and {@link SpawnBackendOptions}. */
export function spawnBackend(opts: SpawnBackendOptions): BackendSource {
  return new BackendSource(opts);
}

/** A pipeline running in a child process, as an `AsyncIterable` of its items. Create with {@link spawnBackend}. */
export class BackendSource implements AsyncIterable<unknown>, AsyncDisposable {
  readonly #name: string;
  readonly #bufferSize: number;
  readonly #creditBatch: number;
  readonly #log: (line: string) => void;
  readonly #killGraceMs: number;
  readonly #signal: AbortSignal | undefined;
  readonly #onAbort: () => void;
  readonly #child: Deno.ChildProcess;
  readonly #stdin: WritableStreamDefaultWriter<Uint8Array>;
  readonly #reader = new FrameReader({ source: "backend stdout", allowedTypes: CHILD_TO_PARENT });
  readonly #queue: Entry[] = [];
  #bufferedItems = 0;
  #wake: (() => void) | undefined;
  #outbox: Uint8Array[] = [];
  #credit = 0;
  #outSeq = 0;
  #flushing = false;
  #epochRequested = false;
  #iterating = false;
  #closing: Promise<void> | undefined;
  #terminated = false;
  #failed = false;
  #exited = false;
  #exitError: unknown;
  #truncated: unknown;
  readonly #pumps: Promise<unknown>;
  readonly #stderrTail: string[] = [];
  readonly #stats: Omit<BackendStats, "pid" | "state" | "partialFrameBytes" | "buffered"> = {
    epochs: 0,
    items: 0,
    bytes: 0,
    failures: 0,
    failuresByStage: {},
    bufferedBytes: 0,
    peakBuffered: 0,
    peakBufferedBytes: 0,
    child: null,
  };

  /** Use {@link spawnBackend}. */
  constructor(opts: SpawnBackendOptions) {
    const bufferSize = opts.bufferSize ?? 3;
    if (!Number.isInteger(bufferSize) || bufferSize < 1) {
      throw new InvalidArgumentError(
        `spawnBackend: bufferSize must be a positive integer, got ${bufferSize}`,
      );
    }
    const module = opts.module instanceof URL
      ? opts.module.href
      : /^[a-z][a-z0-9+.-]*:/i.test(opts.module)
      ? opts.module
      : new URL(`file://${opts.module}`).href;
    const exportName = opts.export ?? "default";
    this.#name = `${module}#${exportName}`;
    this.#bufferSize = bufferSize;
    this.#creditBatch = Math.max(1, Math.floor(bufferSize / 4));
    this.#log = opts.log ?? ((line) => console.error(line));
    this.#killGraceMs = opts.killGraceMs ?? 1000;
    const init: InitPayload = {
      module,
      export: exportName,
      args: opts.args ?? null,
      statsIntervalMs: opts.statsIntervalMs ?? 500,
    };
    const initBytes = jsonBytes(init);
    this.#child = new Deno.Command(Deno.execPath(), {
      args: ["run", "--quiet", ...(opts.permissions ?? DEFAULT_PERMISSIONS), CHILD_ENTRY],
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
      env: { ...CHILD_MALLOC_ENV, ...opts.env },
    }).spawn();
    this.#stdin = this.#child.stdin.getWriter();
    this.#pumps = Promise.all([this.#pumpStdout(), this.#pumpStderr()]).then(() => this.#onExit());
    this.#send(FrameType.INIT, initBytes);
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
    return this.#child.pid;
  }

  /** One epoch of the child's pipeline. One iteration at a time; `break` (`return()`) terminates the child. */
  [Symbol.asyncIterator](): AsyncIterator<unknown> {
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

  /** Transport counters, item failures, and the child pipeline's own stats as last relayed. */
  stats(): BackendStats {
    const buffered = this.#bufferedItems;
    return {
      pid: this.#child.pid,
      state: this.#exited ? "exited" : "running",
      ...this.#stats,
      failuresByStage: { ...this.#stats.failuresByStage },
      buffered,
      partialFrameBytes: this.#reader.bufferedBytes,
    };
  }

  /** Item failures the child reported (counted, never thrown). */
  get failures(): number {
    return this.#stats.failures;
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
      this.#stats.bufferedBytes -= e.bytes;
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

  #wakeUp(): void {
    const w = this.#wake;
    this.#wake = undefined;
    w?.();
  }

  #requestEpoch(): void {
    if (this.#epochRequested) return;
    this.#epochRequested = true;
    this.#send(FrameType.NEXT_EPOCH, new Uint8Array(0));
  }

  // ---- parent → child -------------------------------------------------------------------------------------

  #send(type: FrameTypeCode, payload: Uint8Array): void {
    this.#outbox.push(encodeFrame(type, payload, this.#outSeq++));
    this.#flush();
  }

  /**
   * Returns `n` credits to the child. They go out in batches of `bufferSize / 4` (at least 1), or at once when
   * no item is left buffered (the consumer is about to wait, so the child must not); credits granted while a
   * write is in flight are merged into one CREDIT frame. Batching saves a pipe write and a wake-up of the
   * child per item; the child's lead shrinks by less than a batch, and it is never left without credit while
   * the parent waits.
   */
  #grant(n: number): void {
    this.#credit += n;
    if (this.#credit >= this.#creditBatch || this.#bufferedItems === 0) this.#flush();
  }

  #flush(): void {
    if (this.#flushing || this.#closing !== undefined) return;
    void this.#flushLoop();
  }

  async #flushLoop(): Promise<void> {
    this.#flushing = true;
    try {
      while (this.#closing === undefined && (this.#outbox.length > 0 || this.#credit > 0)) {
        let bytes = this.#outbox.shift();
        if (bytes === undefined) {
          bytes = encodeFrame(FrameType.CREDIT, creditPayload(this.#credit), this.#outSeq++);
          this.#credit = 0;
        }
        await this.#stdin.write(bytes);
      }
    } catch {
      // The child is gone; the stdout pump reports how it ended.
    } finally {
      this.#flushing = false;
    }
  }

  // ---- child → parent -------------------------------------------------------------------------------------

  async #pumpStdout(): Promise<void> {
    const reader = this.#reader;
    try {
      await readStream(this.#child.stdout, {
        push: (chunk) => {
          for (const f of reader.push(chunk)) this.#onFrame(f);
        },
        directTarget: (minBytes) => reader.payloadSpace(minBytes),
        directFilled: (filled) => {
          for (const f of reader.commitPayload(filled)) this.#onFrame(f);
        },
      }, BACKEND_PIPE_BYTES);
    } catch (e) {
      if (this.#closing === undefined) this.#push({ kind: "error", error: e });
      if (e instanceof ProtocolError) this.#kill("SIGKILL");
      // Drain the rest so the child never blocks on a full pipe while it is being stopped.
      try {
        for await (const _ of this.#child.stdout) { /* discard */ }
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
    switch (f.type) {
      case FrameType.ITEM: {
        const value = decodeItem(f.payload, f.offset + 24);
        const s = this.#stats;
        s.items++;
        s.bytes += f.length;
        s.bufferedBytes += f.length;
        this.#push({ kind: "item", value, bytes: f.length });
        if (this.#bufferedItems > s.peakBuffered) s.peakBuffered = this.#bufferedItems;
        s.peakBufferedBytes = Math.max(s.peakBufferedBytes, s.bufferedBytes);
        return;
      }
      case FrameType.ITEM_ERROR: {
        const p = this.#json<ItemErrorPayload>(f);
        this.#stats.failures += p.count;
        this.#stats.failuresByStage[p.stage] = (this.#stats.failuresByStage[p.stage] ?? 0) + p.count;
        for (const m of p.messages) this.#log(`[backend ${this.pid}] ${m}`);
        if (p.messages.length === 0) {
          this.#log(`[backend ${this.pid}] ${p.count} item(s) failed in stage "${p.stage}" (see its stderr)`);
        }
        return;
      }
      case FrameType.STATS:
        this.#stats.child = this.#json<ChildStats>(f);
        return;
      case FrameType.LOG:
        this.#log(`[backend ${this.pid}] ${this.#json<{ message: string }>(f).message}`);
        return;
      case FrameType.END:
        this.#stats.epochs++;
        this.#push({ kind: "end", end: this.#json<EndPayload>(f) });
        return;
      case FrameType.FATAL: {
        const p = this.#json<FatalPayload>(f);
        this.#push({
          kind: "error",
          error: new BackendError(`backend ${this.#name} failed: ${p.name}: ${p.message}`, this.#name),
        });
        return;
      }
      case FrameType.READY:
        return;
    }
  }

  #json<T>(f: Frame): T {
    const p = parseJson(f.payload);
    if (p === undefined || p.value === null || typeof p.value !== "object") {
      throw new ProtocolError(
        `backend stdout: ${frameTypeName(f.type)} frame payload is not a JSON object`,
        f.offset + 24,
      );
    }
    return p.value as T;
  }

  async #pumpStderr(): Promise<void> {
    let rest = "";
    const decoder = new TextDecoder();
    const line = (text: string) => {
      this.#stderrTail.push(text);
      if (this.#stderrTail.length > STDERR_TAIL) this.#stderrTail.shift();
      this.#log(`[backend ${this.pid}] ${text}`);
    };
    try {
      for await (const chunk of this.#child.stderr) {
        rest += decoder.decode(chunk, { stream: true });
        const lines = rest.split("\n");
        rest = lines.pop()!;
        for (const l of lines) line(l);
      }
    } catch { /* the pipe broke: the child is gone */ }
    rest += decoder.decode();
    if (rest.length > 0) line(rest);
  }

  async #onExit(): Promise<void> {
    const status = await this.#child.status;
    this.#exited = true;
    const how = status.signal !== null
      ? `was killed by ${status.signal}`
      : status.success
      ? "exited (code 0)"
      : `exited with code ${status.code}`;
    const tail = this.#stderrTail.length > 0
      ? `; last stderr lines:\n  ${this.#stderrTail.join("\n  ")}`
      : "";
    this.#exitError = new BackendExitedError(
      `backend ${this.#name} (pid ${this.pid}) ${how}${tail}`,
      this.#name,
      {
        code: status.signal !== null ? null : status.code,
        signal: status.signal,
        stderrTail: [...this.#stderrTail],
      },
      { cause: this.#truncated },
    );
    if (this.#closing !== undefined) return;
    if (status.success && this.#truncated !== undefined) {
      this.#push({ kind: "error", error: this.#truncated });
    } else if (!status.success || this.#epochRequested) this.#push({ kind: "error", error: this.#exitError });
    else this.#wakeUp();
  }

  // ---- termination ----------------------------------------------------------------------------------------

  async #terminate(): Promise<void> {
    this.#signal?.removeEventListener("abort", this.#onAbort);
    this.#outbox = [];
    this.#stdin.close().catch(() => {});
    if (!(await this.#exitWithin(EXIT_GRACE_MS))) {
      this.#kill("SIGTERM");
      if (!(await this.#exitWithin(this.#killGraceMs))) this.#kill("SIGKILL");
    }
    await this.#child.status;
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

  async #exitWithin(ms: number): Promise<boolean> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<false>((resolve) => timer = setTimeout(() => resolve(false), ms));
    try {
      return await Promise.race([this.#child.status.then(() => true), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  #kill(signal: Deno.Signal): void {
    try {
      this.#child.kill(signal);
    } catch {
      // Already exited.
    }
  }
}
