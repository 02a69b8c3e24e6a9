/**
 * What a stage function may return: a value, a promise of one, or an async iterable streaming several outputs.
 * The runners tell them apart with these checks.
 * @module
 */

/** Whether `x` is a promise or another thenable. */
export function isThenable(x: unknown): x is PromiseLike<unknown> {
  return x !== null && typeof x === "object" && typeof (x as PromiseLike<unknown>).then === "function";
}

/** Whether `x` is an async iterable (a stage function that streams many outputs returns one). */
export function isAsyncIterable(x: unknown): x is AsyncIterable<unknown> {
  return x !== null && typeof x === "object" &&
    typeof (x as AsyncIterable<unknown>)[Symbol.asyncIterator] === "function";
}
