/**
 * `MessageReader`: turns a byte stream cut at arbitrary chunk boundaries back into messages of the backend
 * protocol (its frames: a header and a payload, see protocol.ts). It is push-based and synchronous, so it can neither hang nor read out of bounds:
 * a damaged header (magic, version, type, flags, header CRC, sequence, size limit) or payload CRC throws a
 * {@link ProtocolError} naming the stream offset at once, and {@link MessageReader.end} throws when the stream
 * stops inside a frame. After an error the reader stays failed.
 * @module
 */

import { ProtocolError } from "../errors.ts";
import {
  crc32,
  DEFAULT_MAX_PAYLOAD,
  FLAG_PAYLOAD_CRC,
  type FrameHeader,
  frameTypeName,
  HEADER_SIZE,
  isFrameType,
  KNOWN_FLAGS,
  MAGIC,
  PROTOCOL_VERSION,
} from "./protocol.ts";

/** One frame read from the stream. */
export interface Frame extends FrameHeader {
  /** The payload (owned by the caller: a copy, never a view of an input chunk). */
  payload: Uint8Array;
  /** Stream offset of the frame's first header byte. */
  offset: number;
}

/** Options of {@link MessageReader}. */
export interface MessageReaderOptions {
  /** Largest payload accepted (default 1 GiB); a bigger length is a ProtocolError, never an allocation. */
  maxPayload?: number;
  /** What the stream is, for error messages (e.g. `"backend stdout"`). */
  source?: string;
  /** Frame types allowed on this stream (default: all of the protocol version). */
  allowedTypes?: ReadonlySet<number>;
}

/** Incremental frame parser. See the module docs. */
export class MessageReader {
  readonly #maxPayload: number;
  readonly #source: string;
  readonly #allowed: ReadonlySet<number> | undefined;
  readonly #header = new Uint8Array(HEADER_SIZE);
  readonly #headerView = new DataView(this.#header.buffer);
  #headerFill = 0;
  #current: FrameHeader | undefined;
  #frameOffset = 0;
  #payload: Uint8Array | undefined;
  #payloadFill = 0;
  #offset = 0;
  #nextSeq = 0;
  #failed: ProtocolError | undefined;

  constructor(opts: MessageReaderOptions = {}) {
    this.#maxPayload = opts.maxPayload ?? DEFAULT_MAX_PAYLOAD;
    this.#source = opts.source ?? "backend stream";
    this.#allowed = opts.allowedTypes;
  }

  /** Bytes consumed so far. */
  get offset(): number {
    return this.#offset;
  }

  /** Bytes held for the frame being assembled (header + payload so far). */
  get bufferedBytes(): number {
    return this.#headerFill + this.#payloadFill;
  }

  /** Feeds the next chunk; returns the frames it completed, in order. Throws ProtocolError on damage. */
  push(chunk: Uint8Array): Frame[] {
    if (this.#failed !== undefined) throw this.#failed;
    const frames: Frame[] = [];
    let i = 0;
    while (i < chunk.length) {
      if (this.#current === undefined) {
        const take = Math.min(HEADER_SIZE - this.#headerFill, chunk.length - i);
        this.#header.set(chunk.subarray(i, i + take), this.#headerFill);
        this.#headerFill += take;
        i += take;
        this.#offset += take;
        if (this.#headerFill < HEADER_SIZE) break;
        this.#frameOffset = this.#offset - HEADER_SIZE;
        this.#current = this.#parseHeader();
        this.#payload = new Uint8Array(this.#current.length);
        this.#payloadFill = 0;
      }
      const payload = this.#payload!;
      const take = Math.min(payload.length - this.#payloadFill, chunk.length - i);
      if (take > 0) {
        payload.set(chunk.subarray(i, i + take), this.#payloadFill);
        this.#payloadFill += take;
        i += take;
        this.#offset += take;
      }
      if (this.#payloadFill === payload.length) frames.push(this.#finishFrame());
    }
    return frames;
  }

  /**
   * The unfilled rest of the payload being assembled, when at least `minBytes` of it remain (else undefined):
   * a caller may read the stream straight into it and then call {@link MessageReader.commitPayload}, saving the
   * copy that {@link MessageReader.push} makes.
   */
  payloadSpace(minBytes: number): Uint8Array | undefined {
    if (this.#failed !== undefined || this.#current === undefined) return undefined;
    const payload = this.#payload!;
    if (payload.length - this.#payloadFill < minBytes) return undefined;
    return payload.subarray(this.#payloadFill);
  }

  /**
   * Takes `filled.length` bytes read into the last {@link MessageReader.payloadSpace} view. `filled` is the view
   * the read returned: a BYOB read transfers the ArrayBuffer, so the payload continues in `filled.buffer`.
   * Returns the frame it completed, if any.
   */
  commitPayload(filled: Uint8Array): Frame[] {
    if (this.#failed !== undefined) throw this.#failed;
    // The old payload view is detached by now; its length lives on in the header.
    const length = this.#current?.length ?? -1;
    if (
      filled.byteOffset !== this.#payloadFill || filled.buffer.byteLength !== length ||
      filled.length > length - this.#payloadFill
    ) {
      throw new RangeError(`${this.#source}: commitPayload without a matching payloadSpace view`);
    }
    this.#payload = new Uint8Array(filled.buffer as ArrayBuffer, 0, length);
    this.#payloadFill += filled.length;
    this.#offset += filled.length;
    return this.#payloadFill === length ? [this.#finishFrame()] : [];
  }

  /** Declares the end of the stream; throws ProtocolError if it stopped inside a frame. */
  end(): void {
    if (this.#failed !== undefined) throw this.#failed;
    if (this.#headerFill === 0 && this.#current === undefined) return;
    const where = this.#current === undefined
      ? `inside a frame header (${this.#headerFill} of ${HEADER_SIZE} bytes)`
      : `inside the payload of a ${frameTypeName(this.#current.type)} frame (${this.#payloadFill} of ` +
        `${this.#current.length} bytes)`;
    throw this.#fail(`stream ended ${where}`, this.#offset);
  }

  #parseHeader(): FrameHeader {
    const v = this.#headerView;
    const at = this.#frameOffset;
    if (v.getUint32(0, true) !== MAGIC) throw this.#fail("bad frame magic (stream out of sync)", at);
    const version = v.getUint8(4);
    if (version !== PROTOCOL_VERSION) {
      throw this.#fail(
        `unsupported protocol version ${version} (this reader speaks ${PROTOCOL_VERSION})`,
        at + 4,
      );
    }
    if (v.getUint32(20, true) !== crc32(this.#header, 0, 20)) {
      throw this.#fail("frame header CRC mismatch", at + 20);
    }
    const type = v.getUint8(5);
    if (!isFrameType(type) || (this.#allowed !== undefined && !this.#allowed.has(type))) {
      throw this.#fail(`unexpected ${frameTypeName(type)} frame on this stream`, at + 5);
    }
    const flags = v.getUint16(6, true);
    if ((flags & ~KNOWN_FLAGS) !== 0) throw this.#fail(`unknown frame flags 0x${flags.toString(16)}`, at + 6);
    const length = v.getUint32(8, true);
    if (length > this.#maxPayload) {
      throw this.#fail(`frame payload of ${length} bytes exceeds the limit of ${this.#maxPayload}`, at + 8);
    }
    const seq = v.getUint32(12, true);
    if (seq !== this.#nextSeq) throw this.#fail(`frame sequence ${seq}, expected ${this.#nextSeq}`, at + 12);
    this.#nextSeq = (this.#nextSeq + 1) >>> 0;
    return { type, flags, length, seq, payloadCrc: v.getUint32(16, true) };
  }

  #finishFrame(): Frame {
    const h = this.#current!;
    const payload = this.#payload!;
    if ((h.flags & FLAG_PAYLOAD_CRC) !== 0 && crc32(payload) !== h.payloadCrc) {
      throw this.#fail(
        `${frameTypeName(h.type)} frame payload CRC mismatch`,
        this.#frameOffset + HEADER_SIZE,
      );
    }
    const frame: Frame = { ...h, payload, offset: this.#frameOffset };
    this.#current = undefined;
    this.#payload = undefined;
    this.#payloadFill = 0;
    this.#headerFill = 0;
    return frame;
  }

  #fail(message: string, offset: number): ProtocolError {
    this.#failed = new ProtocolError(`${this.#source}: ${message}`, offset);
    return this.#failed;
  }
}
