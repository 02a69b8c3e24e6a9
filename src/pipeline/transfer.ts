/**
 * How values cross into and out of `WorkerPool` Workers without copies.
 *
 * Convention:
 * - A worker function may return `transferable(value, [buffers])`: `value` is posted back and exactly the listed
 *   buffers are transferred (moved, not copied). `transferable(value, [])` transfers nothing (use it when the
 *   function keeps reusing a buffer it returns a view of... after copying it).
 * - Any other return value is scanned by {@link collectTransferables}: every `ArrayBuffer` found in it (directly, as
 *   the buffer of a typed array / DataView, or in array elements and plain-object fields up to 3 levels deep,
 *   e.g. `{ data: Uint8Array }` frames and packets) is transferred. So a returned buffer must not be reused by
 *   the worker afterwards: it is detached there.
 * - Arguments sent by a pipe stage are scanned the same way (the item moves to the worker; it is detached on the
 *   main thread). `pool.call(name, args, transfer)` transfers exactly `transfer` (default: nothing).
 * @module
 */

/** Marks a {@link Transferring} (a registered symbol, so it survives being imported twice). */
export const TRANSFER: unique symbol = Symbol.for("sluice.transferable");
const MAX_DEPTH = 3;

/** A value with an explicit transfer list; create with {@link transferable}. */
export interface Transferring<T> {
  /** The mark {@link unwrapResult} looks for. */
  readonly [TRANSFER]: true;
  /** What is posted. */
  readonly value: T;
  /** Exactly the buffers moved with it. */
  readonly transfer: Transferable[];
}

/**
 * Marks a Worker function's result to be posted with exactly the listed buffers moved (not copied), instead of
 * every buffer {@link collectTransferables} would find in it.
 * @param value the result to post
 * @param transfer the buffers to move with it (detached in the Worker); `[]` moves none
 * @returns the marked result, to return from the export
 */
export function transferable<T>(value: T, transfer: Transferable[]): Transferring<T> {
  return { [TRANSFER]: true, value, transfer };
}

/** Splits a function's result into the value to post and its transfer list (explicit, or collected). */
export function unwrapResult(result: unknown): { value: unknown; transfer: Transferable[] } {
  if (
    result !== null && typeof result === "object" && (result as Record<symbol, unknown>)[TRANSFER] === true
  ) {
    const t = result as Transferring<unknown>;
    return { value: t.value, transfer: t.transfer };
  }
  return { value: result, transfer: collectTransferables(result) };
}

/**
 * Every distinct, non-empty `ArrayBuffer` reachable from a value through typed arrays, DataViews, arrays and
 * plain objects (up to 3 levels deep). `SharedArrayBuffer`s are skipped: they are shared, not moved.
 * @param value what is about to be posted (an item, a result)
 * @returns the buffers to transfer with it, each once, in the order found
 */
export function collectTransferables(value: unknown): Transferable[] {
  const found: ArrayBuffer[] = [];
  collect(value, 0, found);
  return found;
}

/**
 * Frees now every `ArrayBuffer` {@link collectTransferables} finds in `value`, by detaching it
 * (`ArrayBuffer.prototype.transfer(0)`): its memory goes back to the allocator at once instead of whenever V8
 * next collects garbage, and every view of it reads as empty from then on. Only for buffers the caller owns
 * alone (e.g. ones a Worker received by transfer and is done with). Returns the bytes released.
 */
export function releaseBuffers(value: unknown): number {
  let bytes = 0;
  for (const b of collectTransferables(value) as ArrayBuffer[]) {
    if (b.detached) continue;
    bytes += b.byteLength;
    b.transfer(0);
  }
  return bytes;
}

function collect(x: unknown, depth: number, found: ArrayBuffer[]): void {
  if (x === null || typeof x !== "object") return;
  if (x instanceof ArrayBuffer) return addBuffer(x, found);
  if (ArrayBuffer.isView(x)) {
    if (x.buffer instanceof ArrayBuffer) addBuffer(x.buffer, found);
    return;
  }
  if (depth >= MAX_DEPTH) return;
  if (Array.isArray(x)) {
    for (const e of x) collect(e, depth + 1, found);
    return;
  }
  const proto = Object.getPrototypeOf(x);
  if (proto !== Object.prototype && proto !== null) return;
  for (const key in x) collect((x as Record<string, unknown>)[key], depth + 1, found);
}

function addBuffer(b: ArrayBuffer, found: ArrayBuffer[]): void {
  if (b.byteLength > 0 && !found.includes(b)) found.push(b);
}
