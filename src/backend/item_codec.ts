/**
 * The payload of an ITEM frame: one pipeline item, encoded by kind.
 *
 * | byte 0 (tag) | rest |
 * | --- | --- |
 * | 1 `BYTES` | the Uint8Array's bytes, raw |
 * | 2 `VIDEO_PACKETS` | `VideoPackets.serialize()` |
 * | 3 `JSON` | u32 JSON length, u32 blob count, one u32 size per blob, the JSON text (UTF-8), the blobs |
 *
 * In the JSON form every typed array (and `VideoPackets`) inside the value, at any depth, is replaced by a
 * placeholder `{"\u0000sluice": [kind, index]}` and its bytes travel as blob `index`, not as base64. Each blob
 * starts at a multiple of 8 bytes from the payload's start (zero padding before it, since protocol version 2), so
 * the decoder can return every typed array as a view of the payload instead of a copy. Encoding returns a list
 * of parts so that big buffers are written without being copied; decoding never reads outside the payload and
 * reports damage as a ProtocolError.
 * @module
 */

import { InvalidArgumentError, ProtocolError } from "../errors.ts";
import { VideoPackets } from "../media/packets.ts";
import { MAX_JSON_DEPTH, nestedDeeper } from "./protocol.ts";

/** Item kinds (byte 0 of an ITEM payload). */
export const ItemTag = { BYTES: 1, VIDEO_PACKETS: 2, JSON: 3 } as const;

/** Key of a blob placeholder in the JSON form. */
export const BLOB_KEY = "\u0000sluice";

type TypedArrayCtor =
  | Int8ArrayConstructor
  | Uint8ArrayConstructor
  | Uint8ClampedArrayConstructor
  | Int16ArrayConstructor
  | Uint16ArrayConstructor
  | Int32ArrayConstructor
  | Uint32ArrayConstructor
  | Float32ArrayConstructor
  | Float64ArrayConstructor
  | BigInt64ArrayConstructor
  | BigUint64ArrayConstructor;

/** Blob kinds in placeholders: typed array names, and `"VideoPackets"`. */
const ARRAY_KINDS = new Map<string, TypedArrayCtor>([
  ["Int8Array", Int8Array],
  ["Uint8Array", Uint8Array],
  ["Uint8ClampedArray", Uint8ClampedArray],
  ["Int16Array", Int16Array],
  ["Uint16Array", Uint16Array],
  ["Int32Array", Int32Array],
  ["Uint32Array", Uint32Array],
  ["Float32Array", Float32Array],
  ["Float64Array", Float64Array],
  ["BigInt64Array", BigInt64Array],
  ["BigUint64Array", BigUint64Array],
]);
const VIDEO_PACKETS_KIND = "VideoPackets";

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

/**
 * Encodes an item as the parts of an ITEM payload (concatenate them, or write them one after another).
 * Throws InvalidArgumentError for values that are not JSON-compatible (bigint, cycles, functions at the top).
 */
export function encodeItem(item: unknown): Uint8Array[] {
  if (item instanceof Uint8Array) return [Uint8Array.of(ItemTag.BYTES), item];
  if (item instanceof VideoPackets) return [Uint8Array.of(ItemTag.VIDEO_PACKETS), item.serialize()];
  return encodeJson(item);
}

function encodeJson(item: unknown): Uint8Array[] {
  // The decoder refuses deeper items: refusing them here keeps a strange item from killing the transport.
  if (nestedDeeper(item)) {
    throw new InvalidArgumentError(`backend item nests deeper than ${MAX_JSON_DEPTH} levels`);
  }
  const blobs: Uint8Array[] = [];
  let text: string | undefined;
  try {
    text = JSON.stringify(item, function (this: unknown, _key, value: unknown) {
      if (value === null || typeof value !== "object") return value;
      if (value instanceof VideoPackets) return placeholder(VIDEO_PACKETS_KIND, value.serialize(), blobs);
      if (ArrayBuffer.isView(value) && !(value instanceof DataView)) {
        const name = value.constructor.name;
        if (!ARRAY_KINDS.has(name)) throw new InvalidArgumentError(`unsupported typed array ${name}`);
        return placeholder(name, new Uint8Array(value.buffer, value.byteOffset, value.byteLength), blobs);
      }
      if (!Array.isArray(value) && Object.hasOwn(value, BLOB_KEY)) {
        throw new InvalidArgumentError(`an object key may not be "\\u0000sluice"`);
      }
      return value;
    });
  } catch (e) {
    if (e instanceof InvalidArgumentError) throw e;
    throw new InvalidArgumentError(`backend item is not JSON-compatible: ${(e as Error).message}`, {
      cause: e,
    });
  }
  if (text === undefined) {
    throw new InvalidArgumentError(`backend item of type ${typeof item} is not JSON-compatible`);
  }
  const json = encoder.encode(text);
  const head = new Uint8Array(12 + 4 * blobs.length);
  const v = new DataView(head.buffer);
  v.setUint8(0, ItemTag.JSON);
  v.setUint32(4, json.length, true);
  v.setUint32(8, blobs.length, true);
  const parts: Uint8Array[] = [head, json];
  let at = head.length + json.length;
  blobs.forEach((b, i) => {
    v.setUint32(12 + 4 * i, b.length, true);
    const pad = blobPadding(at);
    if (pad > 0) parts.push(ZEROS[pad]);
    parts.push(b);
    at += pad + b.length;
  });
  return parts;
}

/** Blobs of the JSON form start at multiples of this many bytes from the payload's start. */
export const BLOB_ALIGN = 8;
/** `ZEROS[n]`: n zero bytes of padding (shared; never written to). */
const ZEROS = Array.from({ length: BLOB_ALIGN }, (_, n) => new Uint8Array(n));

/** Zero bytes to insert at payload position `at` so that the next blob starts aligned. */
function blobPadding(at: number): number {
  return (BLOB_ALIGN - (at % BLOB_ALIGN)) % BLOB_ALIGN;
}

function placeholder(kind: string, bytes: Uint8Array, blobs: Uint8Array[]): Record<string, unknown> {
  blobs.push(bytes);
  return { [BLOB_KEY]: [kind, blobs.length - 1] };
}

/** Total bytes of encoded parts. */
export function partsLength(parts: readonly Uint8Array[]): number {
  let n = 0;
  for (const p of parts) n += p.length;
  return n;
}

/**
 * Decodes an ITEM payload. `offset` is the payload's position in the stream, for errors. The result may share
 * memory with `payload`: Uint8Array items and blobs are views, and so are other typed arrays whose bytes lie
 * aligned in memory (always, when `payload` starts at a multiple of 8 bytes of its buffer, as a MessageReader's
 * payloads do); the others are aligned copies. Transferring one of them moves the whole payload buffer.
 */
export function decodeItem(payload: Uint8Array, offset = 0): unknown {
  if (payload.length < 1) throw new ProtocolError("empty ITEM payload", offset);
  const tag = payload[0];
  if (tag === ItemTag.BYTES) return payload.subarray(1);
  if (tag === ItemTag.VIDEO_PACKETS) return decodeVideoPackets(payload.subarray(1), offset + 1);
  if (tag === ItemTag.JSON) return decodeJson(payload, offset);
  throw new ProtocolError(`unknown ITEM tag ${tag}`, offset);
}

function decodeVideoPackets(bytes: Uint8Array, offset: number): VideoPackets {
  try {
    return VideoPackets.deserialize(bytes);
  } catch (e) {
    if (e instanceof ProtocolError) throw new ProtocolError(e.message, offset + e.offset, { cause: e });
    throw new ProtocolError(`VideoPackets payload does not deserialize: ${(e as Error)?.message}`, offset, {
      cause: e,
    });
  }
}

function decodeJson(payload: Uint8Array, offset: number): unknown {
  if (payload.length < 12) throw new ProtocolError("JSON item header truncated", offset);
  const v = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
  const jsonLen = v.getUint32(4, true);
  const count = v.getUint32(8, true);
  if (count > (payload.length - 12) / 4) {
    throw new ProtocolError(`JSON item blob count ${count} too large`, offset + 8);
  }
  let at = 12 + 4 * count;
  if (jsonLen > payload.length - at) {
    throw new ProtocolError(`JSON text length ${jsonLen} too large`, offset + 4);
  }
  const textAt = at;
  at += jsonLen;
  const blobs: Uint8Array[] = [];
  for (let i = 0; i < count; i++) {
    const size = v.getUint32(12 + 4 * i, true);
    const pad = blobPadding(at);
    if (pad > payload.length - at) throw new ProtocolError(`blob ${i} padding truncated`, offset + at);
    for (let k = 0; k < pad; k++) {
      if (payload[at + k] !== 0) {
        throw new ProtocolError(`non-zero padding before blob ${i}`, offset + at + k);
      }
    }
    at += pad;
    if (size > payload.length - at) {
      throw new ProtocolError(`blob ${i} size ${size} too large`, offset + 12 + 4 * i);
    }
    blobs.push(payload.subarray(at, at + size));
    at += size;
  }
  if (at !== payload.length) {
    throw new ProtocolError(`${payload.length - at} stray bytes after the blobs`, offset + at);
  }
  let text: string;
  try {
    text = decoder.decode(payload.subarray(textAt, textAt + jsonLen));
  } catch (e) {
    throw new ProtocolError("JSON item text is not UTF-8", offset + textAt, { cause: e });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    throw new ProtocolError(`JSON item does not parse: ${(e as Error).message}`, offset + textAt, {
      cause: e,
    });
  }
  return revive(parsed, blobs, offset + textAt);
}

function revive(value: unknown, blobs: Uint8Array[], offset: number, depth = 0): unknown {
  if (value === null || typeof value !== "object") return value;
  if (depth >= MAX_JSON_DEPTH) {
    throw new ProtocolError(`JSON item nested deeper than ${MAX_JSON_DEPTH} levels`, offset);
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = revive(value[i], blobs, offset, depth + 1);
    return value;
  }
  const obj = value as Record<string, unknown>;
  if (Object.hasOwn(obj, BLOB_KEY)) return blobFor(obj[BLOB_KEY], blobs, offset);
  for (const k of Object.keys(obj)) obj[k] = revive(obj[k], blobs, offset, depth + 1);
  return obj;
}

function blobFor(ref: unknown, blobs: Uint8Array[], offset: number): unknown {
  if (!Array.isArray(ref) || ref.length !== 2 || typeof ref[0] !== "string" || !Number.isInteger(ref[1])) {
    throw new ProtocolError("malformed blob placeholder in JSON item", offset);
  }
  const [kind, index] = ref as [string, number];
  if (index < 0 || index >= blobs.length) throw new ProtocolError(`blob index ${index} out of range`, offset);
  const bytes = blobs[index];
  if (kind === VIDEO_PACKETS_KIND) return decodeVideoPackets(bytes, offset);
  const ctor = ARRAY_KINDS.get(kind);
  if (ctor === undefined) throw new ProtocolError(`unknown blob kind "${kind}"`, offset);
  if (ctor === Uint8Array) return bytes;
  if (bytes.length % ctor.BYTES_PER_ELEMENT !== 0) {
    throw new ProtocolError(`blob of ${bytes.length} bytes is not a whole ${kind}`, offset);
  }
  const n = bytes.length / ctor.BYTES_PER_ELEMENT;
  if (bytes.byteOffset % ctor.BYTES_PER_ELEMENT === 0) {
    return new ctor(bytes.buffer as ArrayBuffer, bytes.byteOffset, n);
  }
  return new ctor(bytes.slice().buffer);
}
