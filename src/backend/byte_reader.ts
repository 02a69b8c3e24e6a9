/**
 * `readStream`: drains a byte stream (a child's stdout, `Deno.stdin.readable`) with a BYOB reader into one
 * reused buffer, so a read allocates nothing. The default reader of Deno's pipe streams allocates a fresh
 * 64 KiB buffer for every read and hands out a view of it; at one read per small frame that is megabytes of
 * short-lived external memory per second, which costs time and lets RSS creep up until V8 next collects.
 *
 * When the {@link ByteSink} asks for it (`directTarget`), the next read goes straight into the sink's own
 * memory (the rest of a big frame payload), saving a copy.
 * @module
 */

/** Where {@link readStream} delivers bytes. */
export interface ByteSink {
  /** Takes bytes read into the shared buffer; the view is only valid during the call. */
  push(chunk: Uint8Array): void;
  /**
   * Optionally, a view to read the next bytes straight into (at least `minBytes` long), or undefined. The
   * read transfers the view's ArrayBuffer: {@link ByteSink.directFilled} gets the view the read returned.
   */
  directTarget?(minBytes: number): Uint8Array | undefined;
  /** Bytes were read into the last `directTarget` view; `filled` is that view's memory after the transfer. */
  directFilled?(filled: Uint8Array): void;
}

/** Default size of the reused read buffer. */
export const READ_BUFFER_SIZE = 256 * 1024;
/** Reads go straight into the sink's memory only when at least this much of it is wanted. */
export const DIRECT_READ_MIN = 64 * 1024;

/**
 * Reads `stream` until it ends, feeding `sink`. Exceptions from the sink propagate; the reader's lock is
 * released either way, so the caller may drain the stream afterwards.
 */
export async function readStream(
  stream: ReadableStream<Uint8Array>,
  sink: ByteSink,
  bufferSize = READ_BUFFER_SIZE,
): Promise<void> {
  const reader = stream.getReader({ mode: "byob" });
  let buffer = new ArrayBuffer(bufferSize);
  try {
    for (;;) {
      const target = sink.directTarget?.(DIRECT_READ_MIN);
      if (target !== undefined) {
        const { done, value } = await reader.read(target);
        if (value !== undefined) sink.directFilled!(value);
        if (done) return;
        continue;
      }
      const { done, value } = await reader.read(new Uint8Array(buffer));
      if (value !== undefined) buffer = value.buffer as ArrayBuffer;
      if (done) return;
      if (value !== undefined && value.length > 0) sink.push(value);
    }
  } finally {
    reader.releaseLock();
  }
}
