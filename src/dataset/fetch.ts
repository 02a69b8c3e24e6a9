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
 * Reads a whole local file or URL (or a byte range of it); see the module docs. Throws `InvalidArgumentError`
 * for options out of range (checked here, once: {@link resolveFetchOptions}), `FetchError` when the bytes
 * cannot be had.
 */
export async function fetchBytes(source: string, opts: FetchOptions = {}): Promise<Uint8Array<ArrayBuffer>> {
  const { range, signal, ...limits } = resolveFetchOptions(opts);
  return await fetchResolved(source, limits, { range, signal });
}

/**
 * The door of the fetch options: checks `opts` against {@link FETCH_OPTIONS} and applies the defaults, once;
 * what it returns goes to {@link fetchResolved} unchecked. Throws `InvalidArgumentError` naming the option.
 */
export function resolveFetchOptions(opts: FetchOptions): FetchLimits & FetchWhat {
  return resolveTable(FETCH_OPTIONS, opts, tsVocabulary("fetch: ")) as FetchLimits & FetchWhat;
}

/**
 * {@link fetchBytes} with limits resolved at a door (the loader's options, {@link resolveFetchOptions}): for
 * callers that fetch many items with one set of limits, which are not checked again.
 */
export async function fetchResolved(
  source: string,
  o: FetchLimits,
  what: FetchWhat = {},
): Promise<Uint8Array<ArrayBuffer>> {
  if (!isUrl(source)) return await readLocal(source, what.range);
  const deadline = performance.now() + o.deadlineMs;
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
    const r = await attemptOnce(source, o, what, deadline);
    if (r.ok) return r.bytes;
    const fail = () =>
      new FetchError(source, r.status, attempt, r.reason, { cause: r.cause, phase: r.phase, limit: r.limit });
    if (!r.retry || attempt > o.retries) throw fail();
    const wait = o.backoffMs * 2 ** (attempt - 1) * (0.75 + Math.random() * 0.5);
    // A retry that could not even start before the deadline is not made.
    if (performance.now() + wait >= deadline) {
      throw r.limit?.name === "deadlineMs" ? fail() : overDeadline(attempt, r);
    }
    await sleep(wait, what.signal);
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

/** One HTTP request: the response's status, then its body, each under the attempt's clocks. */
async function attemptOnce(url: string, o: FetchLimits, what: FetchWhat, deadline: number): Promise<Attempt> {
  using clocks = new AttemptClocks(o, deadline, what.signal);
  const headers: Record<string, string> = {};
  if (what.range) headers["range"] = `bytes=${what.range[0]}-${what.range[1] - 1}`;
  let res: Response;
  try {
    res = await fetch(url, { headers, signal: clocks.signal });
  } catch (e) {
    return clocks.failed(e, 0);
  }
  clocks.clear("connectTimeoutMs");
  if (res.status >= 400) {
    await res.body?.cancel().catch(() => {});
    const retry = res.status >= 500 || res.status === 408 || res.status === 429;
    const reason = `HTTP ${res.status} ${res.statusText}`.trim();
    return { ok: false, retry, status: res.status, phase: "status", reason };
  }
  clocks.phase = "body";
  const body = await readBody(
    res,
    clocks,
    new Timeout("idleTimeoutMs", o.idleTimeoutMs, `no byte for ${o.idleTimeoutMs} ms`),
  );
  if (!body.ok) return body;
  const expected = Number(res.headers.get("content-length") ?? NaN);
  if (Number.isFinite(expected) && body.bytes.length !== expected) {
    const reason = `connection dropped: got ${body.bytes.length} of ${expected} bytes`;
    return { ok: false, retry: true, status: res.status, phase: "body", reason };
  }
  const bytes = what.range && res.status === 200
    ? body.bytes.slice(what.range[0], what.range[1])
    : body.bytes;
  return { ok: true, bytes };
}

/** The body of `res`, each chunk within `idle` of the last. */
async function readBody(res: Response, clocks: AttemptClocks, idle: Timeout): Promise<Attempt> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    if (res.body !== null) {
      const reader = res.body.getReader();
      clocks.arm(idle);
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        clocks.arm(idle);
        chunks.push(value);
        size += value.length;
      }
    }
  } catch (e) {
    return clocks.failed(e, res.status);
  }
  return { ok: true, bytes: concat(chunks, size) };
}

/**
 * An attempt's clocks: the attempt's time limit (or what is left of the item's deadline), the time to the
 * response headers and the idle time between chunks, each aborting the request when it fires; the caller's
 * `signal` aborts it too. Disposing clears them.
 */
class AttemptClocks implements Disposable {
  readonly #ac = new AbortController();
  readonly #timers = new Map<string, ReturnType<typeof setTimeout>>();
  readonly #caller: AbortSignal | undefined;
  readonly #onAbort = () => this.#ac.abort(this.#caller!.reason);
  /** Where the attempt is, for the failure it ends with. */
  phase: FetchPhase = "connect";

  constructor(o: FetchLimits, deadline: number, caller: AbortSignal | undefined) {
    this.#caller = caller;
    caller?.addEventListener("abort", this.#onAbort, { once: true });
    const left = Math.max(1, deadline - performance.now());
    this.arm(
      left < o.timeoutMs
        ? new Timeout("deadlineMs", left, `the deadline of the item ran out`)
        : new Timeout("timeoutMs", o.timeoutMs, `the attempt took longer than ${o.timeoutMs} ms`),
    );
    this.arm(
      new Timeout("connectTimeoutMs", o.connectTimeoutMs, `no response within ${o.connectTimeoutMs} ms`),
    );
  }

  /** Aborts the request when any clock fires (or the caller aborts). */
  get signal(): AbortSignal {
    return this.#ac.signal;
  }

  /** (Re)starts the clock `t`. */
  arm(t: Timeout): void {
    this.clear(t.name);
    this.#timers.set(t.name, setTimeout(() => this.#ac.abort(t), t.ms));
  }

  /** Stops the clock called `name`. */
  clear(name: string): void {
    clearTimeout(this.#timers.get(name));
  }

  /** The failure `e` is in this attempt's phase: the limit that fired, or the error; the caller's abort throws. */
  failed(e: unknown, status: number): Failure {
    this.#caller?.throwIfAborted();
    const t = this.#ac.signal.reason, phase = this.phase;
    if (t instanceof Timeout) {
      const reason = `${t.what} (${phase}; ${t.name} ${Math.round(t.ms)})`;
      return { ok: false, retry: true, status, phase, reason, limit: { name: t.name, ms: t.ms }, cause: e };
    }
    const message = e instanceof Error ? e.message : String(e);
    return { ok: false, retry: true, status, phase, reason: `${phase}: ${message}`, cause: e };
  }

  [Symbol.dispose](): void {
    for (const t of this.#timers.values()) clearTimeout(t);
    this.#caller?.removeEventListener("abort", this.#onAbort);
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

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(done, ms);
    function done() {
      signal?.removeEventListener("abort", abort);
      resolve();
    }
    function abort() {
      clearTimeout(t);
      reject(signal!.reason);
    }
    signal?.addEventListener("abort", abort, { once: true });
  });
}
