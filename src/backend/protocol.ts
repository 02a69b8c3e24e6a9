/**
 * The sluice backend frame protocol, version 4 (see docs/protocol.md): how a child process and its parent talk
 * over the child's stdout (child → parent) and stdin (parent → child).
 *
 * Every frame is a 24-byte little-endian header followed by `length` payload bytes:
 *
 * | offset | size | field |
 * | --- | --- | --- |
 * | 0 | 4 | magic `"SLBK"` (bytes 0x53 0x4C 0x42 0x4B) |
 * | 4 | 1 | protocol version ({@link PROTOCOL_VERSION}) |
 * | 5 | 1 | frame type ({@link FrameType}) |
 * | 6 | 2 | flags ({@link FLAG_PAYLOAD_CRC}; other bits must be 0) |
 * | 8 | 4 | payload length |
 * | 12 | 4 | sequence number (per direction, from 0, +1 per frame) |
 * | 16 | 4 | CRC-32 of the payload when `FLAG_PAYLOAD_CRC` is set, else 0 |
 * | 20 | 4 | CRC-32 of header bytes 0..19 |
 * @module
 */

import { ProtocolError } from "../errors.ts";
import { isSerializedError, type SerializedError } from "../error_wire.ts";

/**
 * Version of the frame protocol this module speaks. 2: blobs of the JSON item form start 8-byte aligned
 * (zero padding before each; see item_codec.ts). 3: HEARTBEAT frames, and INIT's `heartbeatIntervalMs`.
 * 4: ITEM_ERROR and FATAL carry the errors themselves (`serializeError`), so they keep their class in the
 * parent. Parent and child always run the same build.
 */
export const PROTOCOL_VERSION = 4;
/** `"SLBK"` read as a little-endian u32. */
export const MAGIC = 0x4b424c53;
/** Bytes in a frame header. */
export const HEADER_SIZE = 24;
/** Payload bytes are covered by the CRC-32 in header bytes 16..19. */
export const FLAG_PAYLOAD_CRC = 1;
/** Flag bits a reader of this version accepts. */
export const KNOWN_FLAGS = FLAG_PAYLOAD_CRC;
/** Largest payload a reader accepts unless told otherwise (1 GiB). */
export const DEFAULT_MAX_PAYLOAD = 1 << 30;

/** Frame types. 1–15 flow child → parent, 16–31 parent → child. */
export const FrameType = {
  /** One item of the child's pipeline (payload: the item codec, see item_codec.ts). */
  ITEM: 1,
  /** Per-item failures in the child (JSON {@link ItemErrorPayload}); counted, not fatal. */
  ITEM_ERROR: 2,
  /** The child pipeline's stats (JSON `PipelineStats` plus the child's own counters). */
  STATS: 3,
  /** A log line from the child's pipeline (JSON `{ message }`). */
  LOG: 4,
  /** Clean end of an epoch (JSON {@link EndPayload}). */
  END: 5,
  /** The child's pipeline threw; the child exits after sending it (JSON {@link FatalPayload}). */
  FATAL: 6,
  /** The child loaded the backend module and is waiting for epochs (JSON `{ pid }`). */
  READY: 7,
  /** The child is alive: sent whenever it has sent nothing else for `heartbeatIntervalMs` (empty payload). */
  HEARTBEAT: 8,
  /** First frame to the child: what to run (JSON {@link InitPayload}). */
  INIT: 16,
  /** Permission to send more ITEM frames (payload: u32 count). */
  CREDIT: 17,
  /** Start the next epoch (empty payload). */
  NEXT_EPOCH: 18,
  /** Stop the running epoch and exit (empty payload). */
  STOP: 19,
} as const;

/** A frame type number. */
export type FrameTypeCode = typeof FrameType[keyof typeof FrameType];

const TYPE_NAMES = new Map<number, string>(Object.entries(FrameType).map(([k, v]) => [v, k]));

/** Name of a frame type, or `type <n>` for an unknown one. */
export function frameTypeName(type: number): string {
  return TYPE_NAMES.get(type) ?? `type ${type}`;
}

/** Whether `type` is a frame type of this protocol version. */
export function isFrameType(type: number): type is FrameTypeCode {
  return TYPE_NAMES.has(type);
}

/** Payload of INIT. */
export interface InitPayload {
  /** URL of the backend module. */
  module: string;
  /** Name of its export: a function `(args) => Pipeline | PipelineBuilder | AsyncIterable`. */
  export: string;
  /** JSON arguments for that function. */
  args: unknown;
  /** Milliseconds between STATS frames while an epoch runs. */
  statsIntervalMs: number;
  /** The child sends a HEARTBEAT when it has sent no frame for this many milliseconds. */
  heartbeatIntervalMs: number;
}

/** Payload of ITEM_ERROR: `count` new failures of `stage` since the last report, with their errors. */
export interface ItemErrorPayload {
  stage: string;
  count: number;
  /**
   * The first of these failures (at most ten per report; later ones only count): the item, described, and the
   * error with its class. Empty when the backend returned a built pipeline (its failures are only counted).
   */
  errors: { item: string; error: SerializedError }[];
}

/** Payload of END. */
export interface EndPayload {
  /** Epoch number in the child, from 1. */
  epoch: number;
  /** ITEM frames sent in this epoch. */
  items: number;
  /** Failures reported by ITEM_ERROR frames during this epoch. */
  failures: number;
}

/** Payload of FATAL: what the child's pipeline threw, with its class, fields, stack and cause. */
export interface FatalPayload {
  error: SerializedError;
}

/** A decoded frame header. */
export interface FrameHeader {
  type: FrameTypeCode;
  flags: number;
  length: number;
  seq: number;
  payloadCrc: number;
}

const CRC_TABLE = makeCrcTable();

function makeCrcTable(): Uint32Array {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
}

/** CRC-32 (IEEE 802.3, as zlib computes it) of `bytes[start, end)`. */
export function crc32(bytes: Uint8Array, start = 0, end = bytes.length): number {
  let c = 0xffffffff;
  for (let i = start; i < end; i++) c = CRC_TABLE[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** Writes a header for a payload of `length` bytes into `out` at `at` (24 bytes). */
export function writeHeader(
  out: Uint8Array,
  at: number,
  h: { type: FrameTypeCode; flags: number; length: number; seq: number; payloadCrc: number },
): void {
  const v = new DataView(out.buffer, out.byteOffset + at, HEADER_SIZE);
  v.setUint32(0, MAGIC, true);
  v.setUint8(4, PROTOCOL_VERSION);
  v.setUint8(5, h.type);
  v.setUint16(6, h.flags, true);
  v.setUint32(8, h.length, true);
  v.setUint32(12, h.seq >>> 0, true);
  v.setUint32(16, h.payloadCrc >>> 0, true);
  v.setUint32(20, crc32(out, at, at + 20), true);
}

/**
 * Encodes one whole frame (header + payload) into a new buffer. Used for small control frames; ITEM frames go
 * through `MessageWriter`, which avoids copying big payloads.
 */
export function encodeFrame(
  type: FrameTypeCode,
  payload: Uint8Array,
  seq: number,
  withCrc = true,
): Uint8Array {
  const out = new Uint8Array(HEADER_SIZE + payload.length);
  out.set(payload, HEADER_SIZE);
  writeHeader(out, 0, {
    type,
    flags: withCrc ? FLAG_PAYLOAD_CRC : 0,
    length: payload.length,
    seq,
    payloadCrc: withCrc ? crc32(payload) : 0,
  });
  return out;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

/** UTF-8 JSON bytes of `value`. */
export function jsonBytes(value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(value));
}

/** Parses a JSON payload; returns `undefined` when the bytes are not UTF-8 JSON (callers raise ProtocolError). */
export function parseJson(bytes: Uint8Array): { value: unknown } | undefined {
  try {
    return { value: JSON.parse(decoder.decode(bytes)) };
  } catch {
    return undefined;
  }
}

/** Deepest nesting of JSON the protocol carries (items, control payloads): far beyond any real one. */
export const MAX_JSON_DEPTH = 256;

/**
 * Whether `value` nests objects and arrays deeper than `max` levels, found without recursion (a hostile depth
 * must not overflow the stack). Typed arrays and other non-plain objects are leaves.
 */
export function nestedDeeper(value: unknown, max: number = MAX_JSON_DEPTH): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== "object" || ArrayBuffer.isView(v)) continue;
    if (
      !Array.isArray(v) && Object.getPrototypeOf(v) !== Object.prototype && Object.getPrototypeOf(v) !== null
    ) {
      continue;
    }
    if (depth >= max) return true;
    for (const x of Array.isArray(v) ? v : Object.values(v)) stack.push([x, depth + 1]);
  }
  return false;
}

/** What a JSON control field must hold: a string, a count (integer >= 0), milliseconds (> 0), ... */
type FieldKind = "string" | "count" | "ms" | "object?" | "error" | "item errors" | "any";

/** The fields of each JSON control payload: exactly these, no others. */
const JSON_SHAPES: Partial<Record<FrameTypeCode, Record<string, FieldKind>>> = {
  [FrameType.ITEM_ERROR]: { stage: "string", count: "count", errors: "item errors" },
  [FrameType.STATS]: { pipeline: "object?", epoch: "count", sent: "count", credits: "count" },
  [FrameType.LOG]: { message: "string" },
  [FrameType.END]: { epoch: "count", items: "count", failures: "count" },
  [FrameType.FATAL]: { error: "error" },
  [FrameType.READY]: { pid: "count" },
  [FrameType.INIT]: {
    module: "string",
    export: "string",
    args: "any",
    statsIntervalMs: "ms",
    heartbeatIntervalMs: "ms",
  },
};

/** Largest value of an "ms" field: setTimeout's limit (2^31 - 1). */
const MAX_MS = 0x7fffffff;

function fits(kind: FieldKind, v: unknown): boolean {
  switch (kind) {
    case "string":
      return typeof v === "string";
    case "count":
      return Number.isSafeInteger(v) && (v as number) >= 0;
    case "ms":
      return typeof v === "number" && v > 0 && v <= MAX_MS;
    case "object?":
      return v === null || (typeof v === "object" && !Array.isArray(v));
    case "error":
      return isSerializedError(v);
    case "item errors":
      return Array.isArray(v) &&
        v.every((x) =>
          x !== null && typeof x === "object" && Object.keys(x).length === 2 && typeof x.item === "string" &&
          isSerializedError(x.error)
        );
    case "any":
      return true;
  }
}

/**
 * The payload of a control frame (every type but ITEM), checked: JSON payloads must be an object with exactly
 * the fields of their type, each of the right kind; CREDIT is a u32 count > 0; NEXT_EPOCH, STOP and HEARTBEAT are
 * empty. Returns the parsed JSON object, the credit count, or null for an empty payload; throws ProtocolError
 * naming `source`, the frame type and the field, at `offset` (the payload's stream offset).
 */
export function controlPayload(
  type: FrameTypeCode,
  payload: Uint8Array,
  offset: number,
  source: string,
): unknown {
  const fail = (what: string) => new ProtocolError(`${source}: ${frameTypeName(type)} frame ${what}`, offset);
  if (type === FrameType.CREDIT) {
    if (payload.length !== 4) throw fail(`payload must be 4 bytes, got ${payload.length}`);
    const n = new DataView(payload.buffer, payload.byteOffset, 4).getUint32(0, true);
    if (n === 0) throw fail("grants 0 credits");
    return n;
  }
  const shape = JSON_SHAPES[type];
  if (shape === undefined) {
    if (payload.length !== 0) throw fail(`payload must be empty, got ${payload.length} bytes`);
    return null;
  }
  const parsed = parseJson(payload);
  if (parsed === undefined) throw fail("payload is not UTF-8 JSON");
  const v = parsed.value;
  if (v === null || typeof v !== "object" || Array.isArray(v)) throw fail("payload is not a JSON object");
  if (nestedDeeper(v)) throw fail(`payload nests deeper than ${MAX_JSON_DEPTH} levels`);
  for (const key of Object.keys(v)) if (!(key in shape)) throw fail(`payload has an unknown field "${key}"`);
  for (const [key, kind] of Object.entries(shape)) {
    if (!fits(kind, (v as Record<string, unknown>)[key])) throw fail(`field "${key}" is not a valid ${kind}`);
  }
  return v;
}

/** The u32 payload of a CREDIT frame. */
export function creditPayload(n: number): Uint8Array {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, n, true);
  return b;
}
