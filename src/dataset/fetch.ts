/**
 * `fetchBytes`: the bytes of one dataset item, from a local path or an `http(s)://` URL.
 *
 * HTTP behaviour: every attempt has three clocks, so that a stalled server costs seconds, not minutes:
 * `connectTimeoutMs` until the response headers arrive, `idleTimeoutMs` between two body chunks, `timeoutMs`
 * for the whole attempt; and the item has a total `deadlineMs` over all attempts and the backoff between them.
 * 5xx answers, timeouts, network errors and connections dropped before the announced `Content-Length` arrived
 * are retried with exponential backoff (with jitter) while the deadline allows; 4xx answers fail at once. Every
 * failure is a {@link FetchError} naming the URL, the phase (`connect`, `status`, `body`, `deadline`) and, for a
 * timeout, the limit that fired. A `range` asks for part of the file with an HTTP `Range` header (a server that
 * ignores it and sends the whole file is handled too). The announced length is never trusted for allocation.
 * @module
 */

import { FetchError, type FetchPhase } from "../errors.ts";
import { defaultsOf, type OptionTable, resolveTable, tsVocabulary } from "../options.ts";
import type { OptionsDisagreement } from "../option_types.ts";
import { type Clock, realClock } from "../pipeline/clock.ts";

/** Options of {@link fetchBytes}; their ranges and defaults are {@link FETCH_OPTIONS}'s. */
export interface FetchOptions {
  /** Retries after the first attempt for retryable failures, while the deadline allows. */
  retries?: number;
  /** Backoff before the first retry, doubled for each next one, ms. */
  backoffMs?: number;
  /** Time until the response headers arrive (connection, request, the server's first answer), ms. */
  connectTimeoutMs?: number;
  /** Longest wait for the next bytes of the body, ms. */
  idleTimeoutMs?: number;
  /** Time limit of one attempt, ms. */
  timeoutMs?: number;
  /** Time limit of the whole fetch: every attempt and the backoff between them, ms. */
  deadlineMs?: number;
  /** Only these bytes: `[start, end)` (HTTP `Range`, or a partial read of a local file). */
  range?: [number, number];
  /** Cancels waiting and in-flight requests. */
  signal?: AbortSignal;
}

const ms = (doc: string, dflt: number) => ({ kind: "number", above: 0, default: dflt, doc }) as const;

/** {@link FetchOptions}, declared once: a stalled server costs at most `deadlineMs`, about 21 s in practice. */
export const FETCH_OPTIONS = {
  retries: {
    kind: "integer",
    min: 0,
    default: 3,
    doc: "retries after the first attempt for retryable failures (5xx, timeouts, dropped connections)",
  },
  backoffMs: {
    kind: "number",
    min: 0,
    default: 200,
    doc: "backoff before the first retry, doubled for each next, ms",
  },
  connectTimeoutMs: ms("time until the response headers arrive, ms", 5000),
  idleTimeoutMs: ms("longest wait for the next bytes of the body, ms", 5000),
  timeoutMs: ms("time limit of one attempt, ms", 30_000),
  deadlineMs: ms("time limit of the whole fetch, every attempt and backoff, ms", 30_000),
  range: {
    kind: "numbers",
    length: 2,
    min: 0,
    range: true,
    doc: "only these bytes, [start, end)",
    python: false,
  },
  signal: {
    kind: "custom",
    what: "an AbortSignal",
    test: (v) => v instanceof AbortSignal,
    doc: "cancels waiting and in-flight requests",
    python: false,
  },
} as const satisfies OptionTable;

// FetchOptions is this table written for its readers: an option the two do not write the same (missing from one, or of
// another type) fails `deno task check` here, naming it.
const _agrees: Record<OptionsDisagreement<FetchOptions, typeof FETCH_OPTIONS>, never> = {};

/** The defaults of {@link FetchOptions}. */
export const FETCH_DEFAULTS = defaultsOf(FETCH_OPTIONS);

/** The limits a fetch runs with: every option of {@link FetchOptions} but `range` and `signal`, defaults applied. */
export type FetchLimits = Required<Omit<FetchOptions, "range" | "signal">>;

/** What one fetch reads (a byte range) and what cancels it. */
export type FetchWhat = Pick<FetchOptions, "range" | "signal">;

/** True for `http://` and `https://` sources. */
export function isUrl(source: string): boolean {
  return /^https?:\/\//i.test(source);
}

/**
 * Reads a whole local file or `http(s)://` URL, or a byte range of it (an HTTP `Range` request; a server that
 * ignores it and sends the whole file is handled too). Each HTTP attempt has three time limits, so that a
 * stalled server costs seconds, not minutes: `connectTimeoutMs` until the headers arrive, `idleTimeoutMs`
 * between two body chunks, `timeoutMs` for the attempt; and the fetch has a total `deadlineMs`. 5xx answers,
 * timeouts, network errors and connections dropped before the announced length arrived are retried with
 * exponential backoff while the deadline allows; 4xx answers fail at once.
 * @param source a local path or an `http(s)://` URL
 * @param opts retries, time limits, a byte range, a signal ({@link FetchOptions})
 * @returns the bytes
 * @throws {FetchError} naming the source, the phase (`connect`, `status`, `body`, `deadline`, `read`) and the
 *   time limit that fired, if one did
 * @throws {InvalidArgumentError} for an option out of range
 */
export function fetchBytes(source: string, opts: FetchOptions = {}): Promise<Uint8Array<ArrayBuffer>> {
  return fetchOnClock(realClock, source, opts);
}

/** {@link fetchBytes} with its timers and time read from `clock` (tests: a virtual clock). */
export async function fetchOnClock(
  clock: Clock,
  source: string,
  opts: FetchOptions = {},
): Promise<Uint8Array<ArrayBuffer>> {
  if (!isUrl(source)) return await readLocal(source, opts.range);
  const { range, signal, ...limits } = resolveFetchOptions(opts);
  return await fetchResolved(source, limits, { range, signal }, clock);
}

/**
 * The door of the fetch options: checks `opts` against {@link FETCH_OPTIONS} and applies the defaults, once;
 * what it returns goes to {@link fetchResolved} unchecked.
 * @param opts the fetch options as given
 * @returns every limit in force, and the range and signal as given
 * @throws {InvalidArgumentError} naming the option out of range
 */
export function resolveFetchOptions(opts: FetchOptions): FetchLimits & FetchWhat {
  return resolveTable(FETCH_OPTIONS, opts, tsVocabulary("fetch: ")) as FetchLimits & FetchWhat;
}

/**
 * {@link fetchBytes} with limits resolved at a door ({@link resolveFetchOptions}; the loader's options): for
 * callers that fetch many items with one set of limits, which are not checked again.
 * @param source a local path or an `http(s)://` URL
 * @param o the limits in force
 * @param what a byte range, a signal
 * @param clock where its timers and time come from (tests: a virtual clock)
 * @returns the bytes
 * @throws {FetchError} as {@link fetchBytes}
 */
export async function fetchResolved(
  source: string,
  o: FetchLimits,
  what: FetchWhat = {},
  clock: Clock = realClock,
): Promise<Uint8Array<ArrayBuffer>> {
  if (!isUrl(source)) return await readLocal(source, what.range);
  const deadline = clock.now() + o.deadlineMs;
  const overDeadline = (attempts: number, last: Failure): FetchError =>
    new FetchError(
      source,
      last.status,
      attempts,
      `the deadline of ${o.deadlineMs} ms ran out (deadlineMs; last attempt: ${last.reason})`,
      { cause: last.cause, phase: "deadline", limit: { name: "deadlineMs", ms: o.deadlineMs } },
    );
  for (let attempt = 1;; attempt++) {
    what.signal?.throwIfAborted();
    const r = await attemptOnce(clock, source, what, o, deadline);
    if (r.ok) return r.bytes;
    const fail = () =>
      new FetchError(source, r.status, attempt, r.reason, { cause: r.cause, phase: r.phase, limit: r.limit });
    if (!r.retry || attempt > o.retries) throw fail();
    const wait = o.backoffMs * 2 ** (attempt - 1) * (0.75 + Math.random() * 0.5);
    // A retry that could not even start before the deadline is not made.
    if (clock.now() + wait >= deadline) {
      throw r.limit?.name === "deadlineMs" ? fail() : overDeadline(attempt, r);
    }
    await sleep(clock, wait, what.signal);
  }
}

interface Failure {
  ok: false;
  retry: boolean;
  status: number;
  phase: FetchPhase;
  reason: string;
  limit?: { name: string; ms: number };
  cause?: unknown;
}

type Attempt = { ok: true; bytes: Uint8Array<ArrayBuffer> } | Failure;

/** A time limit that aborted an attempt (the abort reason of its controller). */
class Timeout {
  constructor(readonly name: string, readonly ms: number, readonly what: string) {}
}

/** One attempt's time limits on a clock: each aborts the attempt's request with itself as the reason. */
class AttemptLimits implements Disposable {
  /** Aborted by a limit, or by the caller's signal. */
  readonly ac: AbortController = new AbortController();
  readonly #clock: Clock;
  readonly #signal: AbortSignal | undefined;
  readonly #timers = new Map<string, unknown>();
  readonly #onAbort = () => this.ac.abort(this.#signal!.reason);

  constructor(clock: Clock, signal: AbortSignal | undefined) {
    this.#clock = clock;
    this.#signal = signal;
    signal?.addEventListener("abort", this.#onAbort, { once: true });
  }

  /** Starts limit `t`, or starts it again. */
  arm(t: Timeout): void {
    this.clear(t.name);
    this.#timers.set(t.name, this.#clock.setTimer(() => this.ac.abort(t), t.ms));
  }

  /** Stops limit `name`. */
  clear(name: string): void {
    this.#clock.clearTimer(this.#timers.get(name));
  }

  /**
   * The failure `e` made of the attempt in `phase`: the limit that fired, or `e`'s message.
   * @throws the caller's abort reason, when the caller aborted
   */
  failed(e: unknown, status: number, phase: FetchPhase): Failure {
    this.#signal?.throwIfAborted();
    const t = this.ac.signal.reason;
    if (t instanceof Timeout) {
      return {
        ok: false,
        retry: true,
        status,
        phase,
        reason: `${t.what} (${phase}; ${t.name} ${Math.round(t.ms)})`,
        limit: { name: t.name, ms: t.ms },
        cause: e,
      };
    }
    const message = e instanceof Error ? e.message : String(e);
    return { ok: false, retry: true, status, phase, reason: `${phase}: ${message}`, cause: e };
  }

  [Symbol.dispose](): void {
    for (const t of this.#timers.values()) this.#clock.clearTimer(t);
    this.#signal?.removeEventListener("abort", this.#onAbort);
  }
}

async function attemptOnce(
  clock: Clock,
  url: string,
  opts: FetchWhat,
  o: FetchLimits,
  deadline: number,
): Promise<Attempt> {
  using limits = new AttemptLimits(clock, opts.signal);
  const left = Math.max(1, deadline - clock.now());
  limits.arm(
    left < o.timeoutMs
      ? new Timeout("deadlineMs", left, `the deadline of the item ran out`)
      : new Timeout("timeoutMs", o.timeoutMs, `the attempt took longer than ${o.timeoutMs} ms`),
  );
  limits.arm(
    new Timeout("connectTimeoutMs", o.connectTimeoutMs, `no response within ${o.connectTimeoutMs} ms`),
  );
  const headers: Record<string, string> = {};
  if (opts.range) headers["range"] = `bytes=${opts.range[0]}-${opts.range[1] - 1}`;
  let res: Response;
  try {
    res = await fetch(url, { headers, signal: limits.ac.signal });
  } catch (e) {
    return limits.failed(e, 0, "connect");
  }
  limits.clear("connectTimeoutMs");
  if (res.status >= 400) {
    await res.body?.cancel().catch(() => {});
    const retry = res.status >= 500 || res.status === 408 || res.status === 429;
    const reason = `HTTP ${res.status} ${res.statusText}`.trim();
    return { ok: false, retry, status: res.status, phase: "status", reason };
  }
  const idle = new Timeout("idleTimeoutMs", o.idleTimeoutMs, `no byte for ${o.idleTimeoutMs} ms`);
  let body: Uint8Array[];
  try {
    body = await readBody(res, limits, idle);
  } catch (e) {
    return limits.failed(e, res.status, "body");
  }
  const size = body.reduce((n, c) => n + c.length, 0);
  const expected = Number(res.headers.get("content-length") ?? NaN);
  if (Number.isFinite(expected) && size !== expected) {
    const reason = `connection dropped: got ${size} of ${expected} bytes`;
    return { ok: false, retry: true, status: res.status, phase: "body", reason };
  }
  let bytes = concat(body, size);
  if (opts.range && res.status === 200) bytes = bytes.slice(opts.range[0], opts.range[1]);
  return { ok: true, bytes };
}

/** The chunks of `res`'s body, with the `idle` limit started again at each. */
async function readBody(res: Response, limits: AttemptLimits, idle: Timeout): Promise<Uint8Array[]> {
  const chunks: Uint8Array[] = [];
  if (res.body === null) return chunks;
  const reader = res.body.getReader();
  limits.arm(idle);
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return chunks;
    limits.arm(idle);
    chunks.push(value);
  }
}

function concat(chunks: Uint8Array[], size: number): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

async function readLocal(path: string, range?: [number, number]): Promise<Uint8Array<ArrayBuffer>> {
  try {
    if (range === undefined) return await Deno.readFile(path) as Uint8Array<ArrayBuffer>;
    using f = await Deno.open(path);
    await f.seek(range[0], Deno.SeekMode.Start);
    const buf = new Uint8Array(range[1] - range[0]);
    let n = 0;
    while (n < buf.length) {
      const got = await f.read(buf.subarray(n));
      if (got === null) break;
      n += got;
    }
    return buf.slice(0, n);
  } catch (e) {
    const reason = e instanceof Deno.errors.NotFound
      ? "no such file"
      : e instanceof Error
      ? e.message
      : String(e);
    throw new FetchError(path, 0, 1, reason, { cause: e, phase: "read" });
  }
}

function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const t = clock.setTimer(done, ms);
    function done() {
      signal?.removeEventListener("abort", abort);
      resolve();
    }
    function abort() {
      clock.clearTimer(t);
      reject(signal!.reason);
    }
    signal?.addEventListener("abort", abort, { once: true });
  });
}
