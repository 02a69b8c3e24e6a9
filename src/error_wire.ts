/**
 * Errors as they cross Workers and processes: {@link serializeError} turns any thrown value into JSON-safe data
 * (fields and causes kept), {@link deserializeError} rebuilds it as an instance of its class, registered by name
 * ({@link registerErrorClass}; every class of `errors.ts` is), so a `MediaError` thrown in a decode Worker or a
 * backend child is a `MediaError` where the loader raises it.
 * @module
 */
import {
  BackendError,
  BackendExitedError,
  BackendStalledError,
  ClipError,
  ClipIntegrityError,
  CudaError,
  DatasetError,
  EncoderNotFoundError,
  FetchError,
  InvalidArgumentError,
  LibraryNotFoundError,
  LibraryVersionError,
  MediaError,
  NvdecUnsupportedError,
  PipelineFailure,
  PipelineStoppedError,
  ProtocolError,
  ServeError,
  ShardError,
  SluiceError,
  WorkerCrashedError,
} from "./errors.ts";

/** A value an error field may hold once serialized: JSON-safe, with nested errors marked. */
export type SerializedValue =
  | string
  | number
  | boolean
  | null
  | SerializedValue[]
  | { [key: string]: SerializedValue }
  | { $error: SerializedError };

/**
 * An error as plain JSON-safe data ({@link serializeError}), for `postMessage` to and from Workers and for the
 * backend's wire protocol. {@link deserializeError} turns it back into an instance of the same class.
 */
export interface SerializedError {
  /** The class name, e.g. `"MediaError"` (also `"TypeError"`, `"AbortError"`, or any other `name`). */
  name: string;
  /** The message, as thrown. */
  message: string;
  /** The stack, as captured where it was thrown. */
  stack?: string;
  /** The error's own fields (`source`, `operation`, `code`, …), nested errors serialized the same way. */
  fields?: { [key: string]: SerializedValue };
  /** The `cause`, when there is one. */
  cause?: SerializedValue;
}

/** A class {@link registerErrorClass} accepts: any `Error` subclass (its constructor is never called). */
export type ErrorClass = abstract new (...args: never[]) => Error;

/** Classes {@link deserializeError} rebuilds by name: every `SluiceError` subclass and the built-in errors. */
const ERROR_CLASSES = new Map<string, ErrorClass>();

/**
 * Makes {@link deserializeError} rebuild errors named `cls.name` as instances of `cls`. Every class in this module
 * is registered already; a module that defines its own `SluiceError` subclass registers it at load time.
 * @param cls the error class (its `name`, not its constructor, is what is matched; a later class of the same
 *   name replaces an earlier one)
 */
export function registerErrorClass(cls: ErrorClass): void {
  ERROR_CLASSES.set(cls.name, cls);
}

for (
  const cls of [
    SluiceError,
    LibraryNotFoundError,
    LibraryVersionError,
    MediaError,
    ClipError,
    ClipIntegrityError,
    ProtocolError,
    InvalidArgumentError,
    PipelineFailure,
    WorkerCrashedError,
    PipelineStoppedError,
    BackendError,
    BackendExitedError,
    BackendStalledError,
    FetchError,
    DatasetError,
    CudaError,
    NvdecUnsupportedError,
    ServeError,
    EncoderNotFoundError,
    ShardError,
    Error,
    TypeError,
    RangeError,
    SyntaxError,
    ReferenceError,
    EvalError,
    URIError,
    AggregateError,
  ]
) registerErrorClass(cls);

/** Levels of nested values (fields, causes) kept; deeper ones become their `String()`. */
const MAX_DEPTH = 8;
const OWN_KEYS = new Set(["name", "message", "stack", "cause"]);

/**
 * An error (or any thrown value) as JSON-safe data that keeps its class name, message, stack, own fields
 * (`MediaError.source`, `FetchError.status`, …) and `cause` chain. Values that are not JSON-safe (functions,
 * symbols, class instances other than errors) become their `String()`; `undefined` fields are left out.
 * @param e what was thrown: an `Error`, a `DOMException`, or any other value (its `String()` is the message)
 * @returns JSON-safe data for `postMessage` or `JSON.stringify`, nested values kept to 8 levels
 */
export function serializeError(e: unknown): SerializedError {
  return serializeErrorAt(e, 0);
}

function serializeErrorAt(e: unknown, depth: number): SerializedError {
  if (!(e instanceof Error)) {
    if (e instanceof DOMException) return { name: e.name, message: e.message, stack: e.stack };
    return { name: "Error", message: typeof e === "string" ? e : String(e) };
  }
  const out: SerializedError = { name: e.name, message: e.message };
  if (e.stack !== undefined) out.stack = e.stack;
  const fields: { [key: string]: SerializedValue } = {};
  let any = false;
  for (const key of Object.keys(e)) {
    if (OWN_KEYS.has(key)) continue;
    const v = serializeValue((e as unknown as Record<string, unknown>)[key], depth + 1);
    if (v === undefined) continue;
    fields[key] = v;
    any = true;
  }
  // AggregateError keeps its `errors` in a non-enumerable own property.
  if (e instanceof AggregateError) {
    fields.errors = serializeValue(e.errors, depth + 1)!;
    any = true;
  }
  if (any) out.fields = fields;
  if (e.cause !== undefined) out.cause = serializeValue(e.cause, depth + 1);
  return out;
}

function serializeValue(x: unknown, depth: number): SerializedValue | undefined {
  if (x === undefined || typeof x === "function" || typeof x === "symbol") return undefined;
  if (x === null || typeof x === "string" || typeof x === "boolean") return x;
  if (typeof x === "number") return Number.isFinite(x) ? x : String(x);
  if (typeof x === "bigint") return String(x);
  if (depth > MAX_DEPTH) return String(x);
  if (x instanceof Error || x instanceof DOMException) return { $error: serializeErrorAt(x, depth) };
  if (Array.isArray(x)) return x.map((v) => serializeValue(v, depth + 1) ?? null);
  const proto = Object.getPrototypeOf(x);
  if (proto !== Object.prototype && proto !== null) return String(x);
  const obj: { [key: string]: SerializedValue } = {};
  for (const [k, v] of Object.entries(x as Record<string, unknown>)) {
    const s = serializeValue(v, depth + 1);
    if (s !== undefined) obj[k] = s;
  }
  return obj;
}

/**
 * Rebuilds an error from {@link serializeError}'s data: an instance of the registered class of that name (so
 * `instanceof MediaError` holds and `source`, `operation`, `code`, `reason` are there), with the same message,
 * the original stack and the `cause` chain. Constructors are not called, so no message is rebuilt or altered. An
 * unknown name gives a plain `Error` with that `name`; `"AbortError"` and other DOM names give a `DOMException`.
 * @param s what {@link serializeError} made (data from outside the process checked with
 *   {@link isSerializedError} first)
 * @returns the error, not thrown
 */
export function deserializeError(s: SerializedError): Error {
  const cls = ERROR_CLASSES.get(s.name);
  let err: Error;
  if (cls !== undefined) {
    err = Object.create(cls.prototype) as Error;
    define(err, "message", String(s.message));
    // SluiceError sets `name` as an own field in its constructor; the built-in classes inherit theirs.
    if (err instanceof SluiceError) (err as { name: string }).name = s.name;
  } else if (DOM_NAMES.has(s.name)) {
    err = new DOMException(String(s.message), s.name) as unknown as Error;
  } else {
    err = new Error(String(s.message));
    define(err, "name", s.name);
  }
  define(err, "stack", s.stack ?? `${s.name}: ${s.message}`);
  for (const [k, v] of Object.entries(s.fields ?? {})) {
    // Defined, not assigned: a field named `__proto__` (JSON.parse makes it an own key) stays a plain field.
    define(err, k, deserializeValue(v), !(k === "errors" && err instanceof AggregateError));
  }
  if (s.cause !== undefined) define(err, "cause", deserializeValue(s.cause));
  return err;
}

/** DOMException names a thrown `DOMException` may carry (AbortSignal reasons, timeouts, bad clones). */
const DOM_NAMES = new Set([
  "AbortError",
  "TimeoutError",
  "DataCloneError",
  "InvalidStateError",
  "NotSupportedError",
]);

function deserializeValue(v: SerializedValue): unknown {
  if (v === null || typeof v !== "object") return v;
  if (Array.isArray(v)) return v.map(deserializeValue);
  const keys = Object.keys(v);
  if (keys.length === 1 && keys[0] === "$error") {
    const e = (v as { $error: SerializedError }).$error;
    if (e !== null && typeof e === "object" && typeof e.name === "string") return deserializeError(e);
  }
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) define(out, k, deserializeValue(x as SerializedValue), true);
  return out;
}

function define(obj: object, key: string, value: unknown, enumerable = false): void {
  Object.defineProperty(obj, key, { value, writable: true, configurable: true, enumerable });
}

const SERIALIZED_KEYS = new Set(["name", "message", "stack", "fields", "cause"]);

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (v === null || typeof v !== "object" || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/**
 * Whether `v` has exactly the shape {@link serializeError} produces (JSON from another process is checked with
 * it before {@link deserializeError} sees it): `name` and `message` strings, an optional `stack` string, `fields`
 * an object of JSON values (nested errors as `{ $error }` of the same shape), an optional `cause`. Recursive:
 * callers bound the nesting first (the backend protocol limits JSON depth).
 * @param v any value, e.g. parsed JSON from another process
 * @returns true when {@link deserializeError} may be given it
 */
export function isSerializedError(v: unknown): v is SerializedError {
  if (!isPlainObject(v)) return false;
  for (const k of Object.keys(v)) if (!SERIALIZED_KEYS.has(k)) return false;
  if (typeof v.name !== "string" || typeof v.message !== "string") return false;
  if (v.stack !== undefined && typeof v.stack !== "string") return false;
  if (
    v.fields !== undefined && !(isPlainObject(v.fields) && Object.values(v.fields).every(isSerializedValue))
  ) {
    return false;
  }
  return v.cause === undefined || isSerializedValue(v.cause);
}

function isSerializedValue(v: unknown): boolean {
  if (v === null || typeof v === "string" || typeof v === "boolean") return true;
  if (typeof v === "number") return Number.isFinite(v);
  if (Array.isArray(v)) return v.every(isSerializedValue);
  if (!isPlainObject(v)) return false;
  const keys = Object.keys(v);
  if (keys.length === 1 && keys[0] === "$error") return isSerializedError(v.$error);
  return Object.values(v).every(isSerializedValue);
}
