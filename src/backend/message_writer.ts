/**
 * `MessageWriter`: writes messages of the backend protocol (its frames: a header and a payload; not video
 * frames, which `src/media/frame_writer.ts` writes) to a synchronous sink (the child's stdout) with
 * `writeSync` loops that handle partial writes. Small parts are coalesced into one scratch buffer so a small
 * frame costs one system call; big parts (≥ 128 KiB) are written straight from their own memory, uncopied.
 * Synchronous writes are several times faster than the async writer for pipes (measured here: 4 KB frames at
 * ~75k/s against ~15k/s, an async write costing ~80–150 µs; `bench/backend_transport.ts` measures the transport),
 * and they keep frames whole: nothing else can run between the header and the payload.
 * @module
 */

import { crc32, FLAG_PAYLOAD_CRC, type FrameTypeCode, HEADER_SIZE, writeHeader } from "./protocol.ts";

/** Something with a blocking `writeSync`, e.g. `Deno.stdout`. */
export interface SyncSink {
  writeSync(p: Uint8Array): number;
}

const SCRATCH = 256 * 1024;
const DIRECT = 128 * 1024;

/** Writes frames with increasing sequence numbers. */
export class MessageWriter {
  readonly #sink: SyncSink;
  readonly #scratch = new Uint8Array(SCRATCH);
  #fill = 0;
  #seq = 0;
  /** Bytes written so far. */
  bytesWritten = 0;
  /** `performance.now()` when the last frame was written (or the writer created). */
  lastWriteAt: number = performance.now();

  constructor(sink: SyncSink) {
    this.#sink = sink;
  }

  /** Writes one frame whose payload is the concatenation of `parts`; `withCrc` adds a payload CRC-32. */
  write(type: FrameTypeCode, parts: readonly Uint8Array[], withCrc = false): void {
    let length = 0;
    for (const p of parts) length += p.length;
    const payloadCrc = withCrc ? crcOfParts(parts) : 0;
    if (this.#fill + HEADER_SIZE > SCRATCH) this.#flush();
    writeHeader(this.#scratch, this.#fill, {
      type,
      flags: withCrc ? FLAG_PAYLOAD_CRC : 0,
      length,
      seq: this.#seq,
      payloadCrc,
    });
    this.#seq = (this.#seq + 1) >>> 0;
    this.#fill += HEADER_SIZE;
    for (const p of parts) {
      if (p.length >= DIRECT) {
        this.#flush();
        this.#writeAll(p);
      } else {
        if (this.#fill + p.length > SCRATCH) this.#flush();
        this.#scratch.set(p, this.#fill);
        this.#fill += p.length;
      }
    }
    this.#flush();
    this.lastWriteAt = performance.now();
  }

  #flush(): void {
    if (this.#fill === 0) return;
    this.#writeAll(this.#scratch.subarray(0, this.#fill));
    this.#fill = 0;
  }

  #writeAll(bytes: Uint8Array): void {
    let done = 0;
    while (done < bytes.length) done += this.#sink.writeSync(bytes.subarray(done));
    this.bytesWritten += bytes.length;
  }
}

function crcOfParts(parts: readonly Uint8Array[]): number {
  if (parts.length === 1) return crc32(parts[0]);
  let n = 0;
  for (const p of parts) n += p.length;
  const all = new Uint8Array(n);
  let at = 0;
  for (const p of parts) {
    all.set(p, at);
    at += p.length;
  }
  return crc32(all);
}
