/**
 * `fetchBytes`: the bytes of one dataset item, from a local path or an `http(s)://` URL.
 *
 * HTTP behaviour: each attempt has a timeout; 5xx answers, timeouts, network errors and connections dropped
 * before the announced `Content-Length` arrived are retried with exponential backoff (with jitter); 4xx answers
 * fail at once with a {@link FetchError} that names the URL and the status. A `range` asks for part of the file
 * with an HTTP `Range` header (a server that ignores it and sends the whole file is handled too).
 * @module
 */

import { FetchError } from "../errors.ts";

/** Options of {@link fetchBytes}. */
export interface FetchOptions {
  /** Retries after the first attempt for retryable failures (default 3). */
  retries?: number;
  /** Backoff before the first retry, doubled for each next one, ms (default 200). */
  backoffMs?: number;
  /** Time limit of one attempt, ms (default 30000). */
  timeoutMs?: number;
  /** Only these bytes: `[start, end)` (HTTP `Range`, or a partial read of a local file). */
  range?: [number, number];
  /** Cancels waiting and in-flight requests. */
  signal?: AbortSignal;
}

/** True for `http://` and `https://` sources. */
export function isUrl(source: string): boolean {
  return /^https?:\/\//i.test(source);
}

/** Reads a whole local file or URL (or a byte range of it); see the module docs. */
export async function fetchBytes(source: string, opts: FetchOptions = {}): Promise<Uint8Array<ArrayBuffer>> {
  if (!isUrl(source)) return await readLocal(source, opts.range);
  const retries = opts.retries ?? 3;
  const backoff = opts.backoffMs ?? 200;
  let last: { status: number; reason: string; cause?: unknown } = { status: 0, reason: "not attempted" };
  for (let attempt = 1; attempt <= retries + 1; attempt++) {
    opts.signal?.throwIfAborted();
    const r = await attemptOnce(source, opts);
    if (r.ok) return r.bytes;
    last = r;
    if (!r.retry) throw new FetchError(source, r.status, attempt, r.reason, { cause: r.cause });
    if (attempt <= retries) {
      await sleep(backoff * 2 ** (attempt - 1) * (0.75 + Math.random() * 0.5), opts.signal);
    }
  }
  throw new FetchError(source, last.status, retries + 1, last.reason, { cause: last.cause });
}

type Attempt =
  | { ok: true; bytes: Uint8Array<ArrayBuffer> }
  | { ok: false; retry: boolean; status: number; reason: string; cause?: unknown };

async function attemptOnce(url: string, opts: FetchOptions): Promise<Attempt> {
  const timeout = AbortSignal.timeout(opts.timeoutMs ?? 30_000);
  const signal = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout;
  const headers: Record<string, string> = {};
  if (opts.range) headers["range"] = `bytes=${opts.range[0]}-${opts.range[1] - 1}`;
  let res: Response;
  try {
    res = await fetch(url, { headers, signal });
  } catch (e) {
    opts.signal?.throwIfAborted();
    return { ok: false, retry: true, status: 0, reason: networkReason(e, timeout), cause: e };
  }
  if (res.status >= 400) {
    await res.body?.cancel();
    const retry = res.status >= 500 || res.status === 408 || res.status === 429;
    return { ok: false, retry, status: res.status, reason: `HTTP ${res.status} ${res.statusText}`.trim() };
  }
  let bytes: Uint8Array<ArrayBuffer>;
  try {
    bytes = new Uint8Array(await res.arrayBuffer());
  } catch (e) {
    opts.signal?.throwIfAborted();
    return {
      ok: false,
      retry: true,
      status: res.status,
      reason: `body: ${networkReason(e, timeout)}`,
      cause: e,
    };
  }
  const expected = Number(res.headers.get("content-length") ?? NaN);
  if (Number.isFinite(expected) && bytes.length !== expected) {
    return {
      ok: false,
      retry: true,
      status: res.status,
      reason: `connection dropped: got ${bytes.length} of ${expected} bytes`,
    };
  }
  if (opts.range && res.status === 200) bytes = bytes.slice(opts.range[0], opts.range[1]);
  return { ok: true, bytes };
}

function networkReason(e: unknown, timeout: AbortSignal): string {
  if (timeout.aborted) return "timed out";
  return e instanceof Error ? e.message : String(e);
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
    throw new FetchError(path, 0, 1, reason, { cause: e });
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
