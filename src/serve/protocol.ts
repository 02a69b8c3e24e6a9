/**
 * The serve protocol (docs/serve_protocol.md): messages between a sluice batch server and a trainer over a
 * Unix domain socket. Each message is a frame: a 4-byte little-endian length, then that many bytes of UTF-8
 * JSON (an object with a `type`). The framing and the `hello`, `welcome` and `error` messages never change
 * across versions, so peers of different versions always understand why they cannot talk.
 *
 * Everything a client sends is untrusted: {@link parseClientMessage} checks every field before the server
 * uses it.
 * @module
 */

import { ServeError, SluiceError } from "../errors.ts";
import type { MemoryDescriptor } from "../memory/descriptor.ts";
import type { FrameKind } from "../loader/clip/clip_spec.ts";

/** Version of the serve protocol this module speaks. */
export const SERVE_PROTOCOL_VERSION = 1;

/** Largest frame a client may send (its messages are a few dozen bytes). */
export const MAX_CLIENT_MESSAGE = 64 * 1024;

/** Largest frame a server sends (a batch descriptor with per-clip metadata). */
export const MAX_SERVER_MESSAGE = 16 * 1024 * 1024;

/** Sample types of batch pixels. */
export type ServeDtype = "uint8" | "float32";

/** The {@link ServeDtype} of a batch's pixels (`batch.data`). */
export function serveDtype(data: unknown): ServeDtype {
  if (data instanceof Float32Array) return "float32";
  if (data instanceof Uint8Array) return "uint8";
  throw new ServeError(
    "internal",
    `batch pixels of an unsupported type ${Object.prototype.toString.call(data)}`,
  );
}

/** Bytes per sample of each {@link ServeDtype}. */
export const DTYPE_BYTES: Record<ServeDtype, number> = { uint8: 1, float32: 4 };

// ---------------------------------------------------------------------------------------- client → server

/** First message of a connection. */
export interface HelloMessage {
  type: "hello";
  /** The protocol version the client speaks. */
  protocol: number;
  /** Free text naming the client, e.g. `"sluice-python/0.1.0"` (logged). */
  client: string;
  /** The shard the client wants (default: the server's). */
  rank?: number;
  worldSize?: number;
  /** The epoch the client will ask for first (lets a server build its loader there). */
  epoch?: number;
  /** CUDA device the client wants GPU slots on (`decode: "nvdec"` servers). */
  device?: number;
}

/** Starts streaming an epoch (cancelling one still running). */
export interface EpochMessage {
  type: "epoch";
  epoch: number;
}

/** Gives a batch's slot back. */
export interface ReleaseMessage {
  type: "release";
  slot: number;
  /** The `seq` of the batch that was in the slot. */
  seq: number;
  /** The client discarded the batch without handing it to its code (it does not count as delivered). */
  unused?: boolean;
  /** Data waits the client measured since its last report, ms (see `data_wait.ts`). */
  waits?: number[];
}

/**
 * The client's code took every batch before `seq` `taken` (sent with each batch it hands out, to a server whose
 * `welcome` has `ahead`): the server sends at most `ahead` batches beyond it.
 */
export interface TakenMessage {
  type: "taken";
  /** One past the `seq` of the last batch the client's code took. */
  taken: number;
}

/** Asks for a `stats` reply. */
export interface StatsRequest {
  type: "stats";
  /**
   * One past the `seq` of the last batch the client's code took (0 before any): the reply counts batches sent
   * from that `seq` on as sent, not delivered (they wait in the client's queue, or are leftovers of an abandoned
   * epoch it will release `unused`). Absent (an older client): every batch sent counts as delivered.
   */
  taken?: number;
  /** Data waits the client measured since its last report, ms (see `data_wait.ts`). */
  waits?: number[];
}

/** Ends the session politely. */
export interface ByeMessage {
  type: "bye";
}

/**
 * Asks for the loader's state (`loader.stateDict()`) at the client's place: just after the batch whose first
 * clip is `after` (the last batch the client's code took), or else at batch `batches` of `epoch`.
 */
export interface StateRequest {
  type: "state";
  /** The first clip of the last batch the client's code took (its `epoch` and `position`). */
  after?: { epoch: number; position: number };
  /** Without `after`: the epoch the client is in... */
  epoch?: number;
  /** ...and the batches of it it had. */
  batches?: number;
}

/** Resumes the session's loader from a state (`loader.loadStateDict()`); answered by `resumed`. */
export interface ResumeRequest {
  type: "resume";
  /** A `loader.stateDict()` (a `state` reply's), checked by the loader. */
  state: unknown;
}

/** Asks the server to write a contact sheet of the client's next epoch's first batches; answered by `preview`. */
export interface PreviewRequest {
  type: "preview";
  /** The epoch to draw. */
  epoch: number;
  /** Its first batches to draw (≥ 1). */
  batches: number;
  /** Absolute path of the file the server writes. */
  path: string;
  /** Write the HTML page (each clip playable) instead of the PNG sheet. */
  html: boolean;
}

/** Any message a client may send. */
export type ClientMessage =
  | HelloMessage
  | EpochMessage
  | ReleaseMessage
  | TakenMessage
  | StatsRequest
  | StateRequest
  | ResumeRequest
  | PreviewRequest
  | ByeMessage;

// ---------------------------------------------------------------------------------------- server → client

/** The server's answer to `hello`. */
export interface WelcomeMessage {
  type: "welcome";
  protocol: number;
  /** e.g. `"sluice/0.1.0"`. */
  server: string;
  /** The server's process id (a client checks it against the socket's peer). */
  pid: number;
  rank: number;
  worldSize: number;
  batchSize: number;
  batchesPerEpoch: number;
  clipsPerEpoch: number;
  /** The epoch the server's loader runs next. */
  nextEpoch: number;
  /** `"cpu"` (host slots) or `"nvdec"` (device slots). */
  decoder: "cpu" | "nvdec";
  slots: number;
  /** Batches the server sends ahead of what the client's code took, once the client reports it (`taken`). */
  ahead: number;
}

/** Where the slots are; sent once per connection, before the first batch. */
export interface MemoryMessage {
  type: "memory";
  memory: MemoryDescriptor;
  slots: number;
  /** Distance between slot starts, bytes (a multiple of the page size). */
  slotBytes: number;
}

/** Metadata of one clip of a batch. */
export interface ServeClipMeta {
  path: string;
  video: number;
  label: number;
  start: number;
  end: number;
  pts: number[];
  /** Each slot's frame's index in the stream's presentation order, or null (`ClipOutcome.frameIndex`). */
  frameIndex: number[] | null;
  /** What each slot is (`ClipOutcome.frameKind`). */
  frameKind: FrameKind[];
  held: number;
  padded: number;
  [key: string]: unknown;
}

/** A batch is ready in a slot. */
export interface BatchMessage {
  type: "batch";
  /** Sequence number of the batch in this connection (0, 1, …). */
  seq: number;
  epoch: number;
  /** Index of the batch in its epoch. */
  index: number;
  slot: number;
  /** Where the pixels start inside the slot, bytes. */
  offset: number;
  nbytes: number;
  shape: number[];
  dtype: ServeDtype;
  layout: "BTHWC" | "BCTHW";
  labels: number[];
  clips: ServeClipMeta[];
  /** With the loader's `audio` option: the batch's audio, float32 `shape` `[B, channels, samples]`, in the slot. */
  audio?: { offset: number; nbytes: number; shape: number[] };
}

/** An epoch ended (`cancelled` when a new `epoch` request cut it short). */
export interface EpochEndMessage {
  type: "epoch-end";
  epoch: number;
  batches: number;
  clips: number;
  cancelled: boolean;
}

/** Reply to a stats request. */
export interface StatsMessage {
  type: "stats";
  stats: unknown;
  /**
   * The counters as text: the session's line, then the loader's clip counts and per-stage table(s) as
   * `sluice load` prints them (added in protocol 1 by later servers; a client shows `stats` without it).
   */
  text?: string;
}

/** Reply to a `state` request: the loader's state, plain JSON. */
export interface StateMessage {
  type: "state";
  state: unknown;
}

/** Reply to a `resume` request: the loader's next epoch is `epoch`, starting with its batch `batches`. */
export interface ResumedMessage {
  type: "resumed";
  epoch: number;
  batches: number;
}

/** Reply to a `preview` request: the file written, and what it shows. */
export interface PreviewMessage {
  type: "preview";
  path: string;
  /** Clips (rows) drawn. */
  clips: number;
  /** The sheet's size in pixels (the PNG's, also with `html`). */
  width: number;
  height: number;
}

/** Something failed; the server closes the connection after sending it when `fatal`. */
export interface ErrorMessage {
  type: "error";
  /** One of the codes of docs/serve_protocol.md, or the class name of a sluice error (see {@link errorMessage}). */
  code: string;
  /** The class of the error on the server: `ServeError` for the protocol's own codes, else e.g. `MediaError`. */
  name: string;
  message: string;
  fatal: boolean;
}

/**
 * The `error` message for `e`: a `ServeError`'s code, the class name of any other sluice error
 * (`InvalidArgumentError`, `DatasetError`, …), else `"internal"`; `name` is the class in every case.
 */
export function errorMessage(e: unknown, fatal: boolean): ErrorMessage {
  const code = e instanceof ServeError ? e.code : e instanceof SluiceError ? e.name : "internal";
  const name = e instanceof Error ? e.name : "Error";
  return { type: "error", code, name, message: e instanceof Error ? e.message : String(e), fatal };
}

/** Any message a server sends. */
export type ServerMessage =
  | WelcomeMessage
  | MemoryMessage
  | BatchMessage
  | EpochEndMessage
  | StatsMessage
  | StateMessage
  | ResumedMessage
  | PreviewMessage
  | ErrorMessage;

// ---------------------------------------------------------------------------------------- framing

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

/** One frame: length prefix and JSON. */
export function encodeMessage(message: ServerMessage | ClientMessage): Uint8Array<ArrayBuffer> {
  const json = encoder.encode(JSON.stringify(message));
  const out = new Uint8Array(4 + json.length);
  new DataView(out.buffer).setUint32(0, json.length, true);
  out.set(json, 4);
  return out;
}

/**
 * Cuts a byte stream into frames and parses their JSON (not their meaning: see {@link parseClientMessage}).
 * Throws a {@link ServeError} ("bad-frame") for a frame over `maxBytes`, invalid UTF-8 or invalid JSON.
 */
export class MessageDecoder {
  readonly #maxBytes: number;
  #buf = new Uint8Array(0);
  #offset = 0; // bytes of the stream consumed before #buf[0], for error messages

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  /** Adds bytes and returns the JSON values of every frame they complete. */
  push(chunk: Uint8Array): unknown[] {
    const joined = new Uint8Array(this.#buf.length + chunk.length);
    joined.set(this.#buf);
    joined.set(chunk, this.#buf.length);
    const out: unknown[] = [];
    let at = 0;
    while (joined.length - at >= 4) {
      const len = new DataView(joined.buffer, at, 4).getUint32(0, true);
      if (len > this.#maxBytes) {
        throw new ServeError(
          "bad-frame",
          `frame of ${len} bytes at byte ${this.#offset + at} exceeds the limit of ${this.#maxBytes}`,
        );
      }
      if (joined.length - at - 4 < len) break;
      let value: unknown;
      try {
        value = JSON.parse(decoder.decode(joined.subarray(at + 4, at + 4 + len)));
      } catch (e) {
        throw new ServeError("bad-frame", `frame at byte ${this.#offset + at} is not UTF-8 JSON: ${e}`);
      }
      out.push(value);
      at += 4 + len;
    }
    this.#offset += at;
    this.#buf = joined.slice(at);
    return out;
  }

  /** Bytes of an incomplete frame held back. */
  get pending(): number {
    return this.#buf.length;
  }
}

// ---------------------------------------------------------------------------------------- validation

function bad(message: string): ServeError {
  return new ServeError("bad-message", message);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function optInt(m: Record<string, unknown>, key: string, min: number, max: number): number | undefined {
  return m[key] === undefined ? undefined : int(m, key, min, max);
}

function int(m: Record<string, unknown>, key: string, min: number, max: number): number {
  const v = m[key];
  if (!Number.isSafeInteger(v) || (v as number) < min || (v as number) > max) {
    throw bad(`${m.type} message: "${key}" must be an integer in [${min}, ${max}], got ${JSON.stringify(v)}`);
  }
  return v as number;
}

const MAX_INT = Number.MAX_SAFE_INTEGER;

/** Data waits reported in one message at most. */
const MAX_WAITS = 4096;

function optWaits(m: Record<string, unknown>): number[] | undefined {
  const v = m.waits;
  if (v === undefined) return undefined;
  if (
    !Array.isArray(v) || v.length > MAX_WAITS ||
    !v.every((x) => typeof x === "number" && Number.isFinite(x) && x >= 0)
  ) {
    throw bad(`${m.type} message: "waits" must be a list of at most ${MAX_WAITS} numbers >= 0 (ms)`);
  }
  return v;
}

/**
 * Checks a decoded frame from a client and returns it typed; throws a {@link ServeError} ("bad-message") naming
 * the field otherwise. Unknown fields are ignored (a later minor revision may add some).
 */
export function parseClientMessage(value: unknown): ClientMessage {
  if (!isObject(value)) {
    throw bad(`a message must be a JSON object, got ${JSON.stringify(value)?.slice(0, 80)}`);
  }
  switch (value.type) {
    case "hello":
      return parseHello(value);
    case "epoch":
      return { type: "epoch", epoch: int(value, "epoch", 0, MAX_INT) };
    case "release":
      return parseRelease(value);
    case "taken":
      return { type: "taken", taken: int(value, "taken", 0, MAX_INT) };
    case "stats":
      return parseStatsRequest(value);
    case "state":
      return parseStateRequest(value);
    case "resume":
      if (!isObject(value.state)) throw bad(`resume message: "state" must be an object (a loader state)`);
      return { type: "resume", state: value.state };
    case "preview":
      return parsePreview(value);
    case "bye":
      return { type: "bye" };
    default:
      throw bad(`unknown message type ${JSON.stringify(value.type)?.slice(0, 40)}`);
  }
}

/** A `hello` message's fields (`rank` and `worldSize` together or not at all). */
function parseHello(value: Record<string, unknown>): HelloMessage {
  const protocol = int(value, "protocol", 0, MAX_INT);
  const client = value.client;
  if (typeof client !== "string" || client.length > 200) {
    throw bad(`hello message: "client" must be a string of at most 200 characters`);
  }
  const msg: HelloMessage = { type: "hello", protocol, client };
  const worldSize = optInt(value, "worldSize", 1, 1 << 20);
  const rank = optInt(value, "rank", 0, (worldSize ?? 1 << 20) - 1);
  if ((rank === undefined) !== (worldSize === undefined)) {
    throw bad(`hello message: "rank" and "worldSize" come together`);
  }
  if (rank !== undefined) msg.rank = rank;
  if (worldSize !== undefined) msg.worldSize = worldSize;
  const epoch = optInt(value, "epoch", 0, MAX_INT);
  if (epoch !== undefined) msg.epoch = epoch;
  const device = optInt(value, "device", 0, 1023);
  if (device !== undefined) msg.device = device;
  return msg;
}

/** A `release` message's fields. */
function parseRelease(value: Record<string, unknown>): ReleaseMessage {
  const msg: ReleaseMessage = {
    type: "release",
    slot: int(value, "slot", 0, MAX_INT),
    seq: int(value, "seq", 0, MAX_INT),
  };
  if (value.unused !== undefined) {
    if (typeof value.unused !== "boolean") throw bad(`release message: "unused" must be a boolean`);
    msg.unused = value.unused;
  }
  const waits = optWaits(value);
  if (waits !== undefined) msg.waits = waits;
  return msg;
}

/** A `stats` request's fields. */
function parseStatsRequest(value: Record<string, unknown>): StatsRequest {
  const msg: StatsRequest = { type: "stats" };
  const taken = optInt(value, "taken", 0, MAX_INT);
  if (taken !== undefined) msg.taken = taken;
  const waits = optWaits(value);
  if (waits !== undefined) msg.waits = waits;
  return msg;
}

/** A `state` request's fields: a position (`after`), or an epoch and its batches drawn. */
function parseStateRequest(value: Record<string, unknown>): StateRequest {
  const msg: StateRequest = { type: "state" };
  if (value.after !== undefined) {
    if (!isObject(value.after)) throw bad(`state message: "after" must be an object { epoch, position }`);
    msg.after = {
      epoch: int({ ...value.after, type: "state" }, "epoch", 0, MAX_INT),
      position: int({ ...value.after, type: "state" }, "position", 0, MAX_INT),
    };
  } else {
    msg.epoch = int(value, "epoch", 0, MAX_INT);
    msg.batches = int(value, "batches", 0, MAX_INT);
  }
  return msg;
}

/** A `preview` request's fields. */
function parsePreview(value: Record<string, unknown>): PreviewRequest {
  const path = value.path;
  if (typeof path !== "string" || !path.startsWith("/") || path.length > 4096) {
    throw bad(`preview message: "path" must be an absolute path`);
  }
  if (typeof value.html !== "boolean") throw bad(`preview message: "html" must be a boolean`);
  return {
    type: "preview",
    epoch: int(value, "epoch", 0, MAX_INT),
    batches: int(value, "batches", 1, 1 << 16),
    path,
    html: value.html,
  };
}
