/**
 * The binary layout of a serialized `VideoPackets` (used by the subprocess backend and for files). All integers
 * little-endian; every section starts at a multiple of 8 bytes.
 *
 * ```
 * offset size  field
 *  0     4     magic "SLVP"
 *  4     4     u32 version (= 1)
 *  8     4     u32 header size H (168; 152 before `endSec`, 160 before `firstFrameIndex`, both still read; the
 *              variable sections start at H)
 * 12     4     u32 numPackets N
 * 16     4     u32 source length (UTF-8 bytes)
 * 20     4     u32 codec name length (UTF-8 bytes)
 * 24     4     u32 extradata length
 * 28     4     u32 payload length P
 * 32     4     i32 streamIndex        36  i32 codecId          40  u32 codecTag        44  i32 profile
 * 48     4     i32 level              52  i32 width            56  i32 height          60  i32 format (pix fmt)
 * 64     4     i32 bitsPerRawSample   68  i32 fieldOrder       72  i32 colorRange      76  i32 colorPrimaries
 * 80     4     i32 colorTrc           84  i32 colorSpace       88  i32 chromaLocation  92  i32 rotation
 * 96     4     i32 sar num           100  i32 sar den         104  i32 timeBase num   108  i32 timeBase den
 * 112    8     f64 frameRate
 * 120    4     u32 flags (bit 0: window present, bit 1: endSec present, bit 2: firstFrameIndex present)
 * 124    4     u32 reserved (0)
 * 128    8     f64 startTimeSec
 * 136    16    f64 window start, f64 window end (0 when absent)
 * 152    8     f64 endSec (0 when absent; only when H >= 160)
 * 160    8     f64 firstFrameIndex (0 when absent; only when H >= 168)
 * H            strings: source, codec, then extradata, zero-padded to a multiple of 8
 *              packet table: i64 pts[N], i64 dts[N], i64 duration[N], u32 flags[N], u32 offset[N],
 *              u32 size[N], zero-padded to a multiple of 8
 *              payload: P bytes (packets back to back; offset/size index into it)
 * ```
 * Timestamps are in `timeBase` units; "no timestamp" is INT64_MIN. {@link decodePackets} checks every length
 * and offset against the buffer, every codec parameter against the ranges FFmpeg's demuxers produce
 * (`codec_params.ts`) and every packet's flags, and throws `ProtocolError` naming the byte offset on anything
 * malformed.
 * @module
 */
import { ProtocolError } from "../errors.ts";
import { codecParamsProblem, type ParamsProblem } from "./codec_params.ts";
import type { VideoPacketsInit } from "./packet_info.ts";

/** "SLVP" as a little-endian u32. */
export const PACKETS_MAGIC = 0x50564c53;
/** The layout version {@link encodePackets} writes and {@link decodePackets} reads. */
export const PACKETS_FORMAT_VERSION = 1;
/** Size of the fixed header this build writes. */
export const PACKETS_HEADER_SIZE = 168;
/** The smallest header with `endSec`. */
const END_HEADER_SIZE = 160;
/** The smallest header a reader accepts (written before `endSec` existed). */
const MIN_HEADER_SIZE = 152;
/** Per-packet bytes in the packet table. */
const ENTRY_SIZE = 8 * 3 + 4 * 3;

/** `n` rounded up to a multiple of 8; exact for every `n` below 2^53 (a bitwise `& ~7` would wrap at 2^31). */
const pad8 = (n: number) => Math.ceil(n / 8) * 8;
const enc = new TextEncoder();
const dec = new TextDecoder("utf-8", { fatal: true });

/** Serializes packets into one buffer (see the module docs for the layout). */
export function encodePackets(p: VideoPacketsInit): Uint8Array<ArrayBuffer> {
  const n = p.sizes.length;
  if (
    p.pts.length !== n || p.dts.length !== n || p.duration.length !== n || p.flags.length !== n ||
    p.offsets.length !== n
  ) {
    throw new ProtocolError("packet table columns have different lengths", 0);
  }
  const source = enc.encode(p.source);
  const codec = enc.encode(p.codec);
  const varStart = PACKETS_HEADER_SIZE;
  const tableStart = pad8(varStart + source.length + codec.length + p.extradata.length);
  const payloadStart = pad8(tableStart + n * ENTRY_SIZE);
  const out = new Uint8Array(payloadStart + p.data.length);
  const dv = new DataView(out.buffer);
  const u32 = (o: number, v: number) => dv.setUint32(o, v >>> 0, true);
  const i32 = (o: number, v: number) => dv.setInt32(o, v | 0, true);
  u32(0, PACKETS_MAGIC);
  u32(4, PACKETS_FORMAT_VERSION);
  u32(8, PACKETS_HEADER_SIZE);
  u32(12, n);
  u32(16, source.length);
  u32(20, codec.length);
  u32(24, p.extradata.length);
  u32(28, p.data.length);
  const ints = [
    p.streamIndex,
    p.codecId,
    p.codecTag,
    p.profile,
    p.level,
    p.width,
    p.height,
    p.format,
    p.bitsPerRawSample,
    p.fieldOrder,
    p.colorRange,
    p.colorPrimaries,
    p.colorTrc,
    p.colorSpace,
    p.chromaLocation,
    p.rotation,
    p.sampleAspectRatio[0],
    p.sampleAspectRatio[1],
    p.timeBase[0],
    p.timeBase[1],
  ];
  ints.forEach((v, i) => i === 2 ? u32(32 + 4 * i, v) : i32(32 + 4 * i, v));
  dv.setFloat64(112, p.frameRate, true);
  const hasEnd = p.endSec !== undefined, hasIndex = p.firstFrameIndex !== undefined;
  u32(120, (p.window ? 1 : 0) | (hasEnd ? 2 : 0) | (hasIndex ? 4 : 0));
  u32(124, 0);
  dv.setFloat64(128, p.startTimeSec, true);
  dv.setFloat64(136, p.window ? p.window[0] : 0, true);
  dv.setFloat64(144, p.window ? p.window[1] : 0, true);
  dv.setFloat64(152, hasEnd ? p.endSec! : 0, true);
  dv.setFloat64(160, hasIndex ? p.firstFrameIndex! : 0, true);
  out.set(source, varStart);
  out.set(codec, varStart + source.length);
  out.set(p.extradata, varStart + source.length + codec.length);
  let o = tableStart;
  for (const col of [p.pts, p.dts, p.duration]) {
    for (let i = 0; i < n; i++, o += 8) dv.setBigInt64(o, col[i], true);
  }
  for (const col of [p.flags, p.offsets, p.sizes]) {
    for (let i = 0; i < n; i++, o += 4) dv.setUint32(o, col[i], true);
  }
  out.set(p.data, payloadStart);
  return out;
}

/** Parses a buffer written by {@link encodePackets}; every field is copied out (the input may be reused). */
export function decodePackets(bytes: Uint8Array): VideoPacketsInit {
  const layout = readLayout(bytes);
  const { dv, headerSize, sourceLen, codecLen, extraLen } = layout;
  const text = (start: number, size: number, at: number): string => {
    try {
      return dec.decode(bytes.subarray(start, start + size));
    } catch {
      throw new ProtocolError("string is not valid UTF-8", at);
    }
  };
  const source = text(headerSize, sourceLen, headerSize);
  const codec = text(headerSize + sourceLen, codecLen, headerSize + sourceLen);
  const extraStart = headerSize + sourceLen + codecLen;
  const extradata = bytes.slice(extraStart, extraStart + extraLen);
  const table = readPacketTable(bytes, layout);
  const data = bytes.slice(layout.payloadStart, layout.payloadStart + layout.payloadLen);
  const init = withHeaderFields(dv, layout.flagsWord, { source, codec, extradata, ...table, data });
  checkFields(init);
  checkPacketFlags(table.flags, layout);
  return init;
}

/**
 * Where a serialized buffer's sections lie, from its fixed header (see the module docs): the packet count `n`,
 * each section's length in bytes, where the table and the payload start, and the header's flags word.
 */
interface Layout {
  dv: DataView;
  headerSize: number;
  n: number;
  sourceLen: number;
  codecLen: number;
  extraLen: number;
  payloadLen: number;
  tableStart: number;
  payloadStart: number;
  flagsWord: number;
}

/**
 * Reads and checks the fixed header's framing: magic, version, header size, that the sections' lengths add up
 * to the buffer's, the flags and the reserved word; throws ProtocolError.
 */
function readLayout(bytes: Uint8Array): Layout {
  if (!(bytes instanceof Uint8Array)) throw new ProtocolError("serialized packets must be a Uint8Array", 0);
  const len = bytes.byteLength;
  if (len < 16) throw new ProtocolError(`serialized packets too short: ${len} bytes`, 0);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, len);
  const u32 = (o: number) => dv.getUint32(o, true);
  if (u32(0) !== PACKETS_MAGIC) throw new ProtocolError("not serialized VideoPackets (bad magic)", 0);
  const version = u32(4);
  if (version !== PACKETS_FORMAT_VERSION) {
    throw new ProtocolError(
      `unsupported VideoPackets format version ${version} (this build reads ${PACKETS_FORMAT_VERSION})`,
      4,
    );
  }
  const headerSize = u32(8);
  if (headerSize < MIN_HEADER_SIZE || headerSize > len) {
    throw new ProtocolError(`header size ${headerSize} is invalid for a ${len}-byte buffer`, 8);
  }
  const n = u32(12), sourceLen = u32(16), codecLen = u32(20), extraLen = u32(24), payloadLen = u32(28);
  // All sums stay far below 2^53: each term is < 2^32 and N * 36 < 2^38.
  const tableStart = pad8(headerSize + sourceLen + codecLen + extraLen);
  const payloadStart = pad8(tableStart + n * ENTRY_SIZE);
  if (payloadStart + payloadLen !== len) {
    throw new ProtocolError(
      `lengths do not add up: header ${headerSize} + strings/extradata ${
        sourceLen + codecLen + extraLen
      } + ` +
        `table ${n}×${ENTRY_SIZE} + payload ${payloadLen} ≠ buffer ${len}`,
      12,
    );
  }
  const flagsWord = u32(120);
  if (
    flagsWord > 7 || (flagsWord & 2 && headerSize < END_HEADER_SIZE) ||
    (flagsWord & 4 && headerSize < PACKETS_HEADER_SIZE)
  ) {
    throw new ProtocolError(`unknown header flags 0x${flagsWord.toString(16)}`, 120);
  }
  if (u32(124) !== 0) throw new ProtocolError("reserved header word is not 0", 124);
  return {
    dv,
    headerSize,
    n,
    sourceLen,
    codecLen,
    extraLen,
    payloadLen,
    tableStart,
    payloadStart,
    flagsWord,
  };
}

/** Copies out the packet table's columns, checking that every packet lies inside the payload. */
function readPacketTable(bytes: Uint8Array, { n, tableStart, payloadLen }: Layout) {
  // A fresh, 8-aligned copy; typed arrays read it in host order, little-endian on every platform Deno runs on.
  const table = bytes.slice(tableStart, tableStart + n * ENTRY_SIZE);
  const pts = new BigInt64Array(table.buffer, 0, n).slice();
  const dts = new BigInt64Array(table.buffer, 8 * n, n).slice();
  const duration = new BigInt64Array(table.buffer, 16 * n, n).slice();
  const flags = new Uint32Array(table.buffer, 24 * n, n).slice();
  const offsets = new Uint32Array(table.buffer, 28 * n, n).slice();
  const sizes = new Uint32Array(table.buffer, 32 * n, n).slice();
  for (let i = 0; i < n; i++) {
    if (offsets[i] + sizes[i] > payloadLen) {
      throw new ProtocolError(
        `packet ${i} (offset ${offsets[i]}, size ${sizes[i]}) lies outside the ${payloadLen}-byte payload`,
        tableStart + 28 * n + 4 * i,
      );
    }
  }
  return { pts, dts, duration, flags, offsets, sizes };
}

/**
 * The packets' fields: the sections read (`parts`) and the fixed header's stream and codec fields, as read
 * (their ranges are {@link checkFields}').
 */
function withHeaderFields(dv: DataView, flagsWord: number, parts: Sections): VideoPacketsInit {
  const u32 = (o: number) => dv.getUint32(o, true);
  const i32 = (o: number) => dv.getInt32(o, true);
  const frameRate = dv.getFloat64(112, true);
  const startTimeSec = dv.getFloat64(128, true);
  const ws = dv.getFloat64(136, true), we = dv.getFloat64(144, true);
  const init: VideoPacketsInit = {
    source: parts.source,
    streamIndex: i32(32),
    codec: parts.codec,
    codecId: i32(36),
    codecTag: u32(40),
    profile: i32(44),
    level: i32(48),
    width: i32(52),
    height: i32(56),
    format: i32(60),
    bitsPerRawSample: i32(64),
    fieldOrder: i32(68),
    colorRange: i32(72),
    colorPrimaries: i32(76),
    colorTrc: i32(80),
    colorSpace: i32(84),
    chromaLocation: i32(88),
    rotation: i32(92),
    sampleAspectRatio: [i32(96), i32(100)],
    extradata: parts.extradata,
    timeBase: [i32(104), i32(108)],
    frameRate,
    startTimeSec,
    window: flagsWord & 1 ? [ws, we] : null,
    pts: parts.pts,
    dts: parts.dts,
    duration: parts.duration,
    flags: parts.flags,
    offsets: parts.offsets,
    sizes: parts.sizes,
    data: parts.data,
  };
  if (flagsWord & 2) init.endSec = dv.getFloat64(152, true);
  if (flagsWord & 4) init.firstFrameIndex = dv.getFloat64(160, true);
  return init;
}

/** What the variable sections hold: the strings, the extradata, the packet table and the payload. */
type Sections = Pick<
  VideoPacketsInit,
  "source" | "codec" | "extradata" | "pts" | "dts" | "duration" | "flags" | "offsets" | "sizes" | "data"
>;

/** Checks that every packet's flags are among {@link PACKET_FLAGS}; throws ProtocolError. */
function checkPacketFlags(flags: Uint32Array, { n, tableStart }: Layout): void {
  for (let i = 0; i < n; i++) {
    if ((flags[i] & ~PACKET_FLAGS) !== 0) {
      throw new ProtocolError(
        `packet ${i} has flags 0x${flags[i].toString(16)} (known: 0x${PACKET_FLAGS.toString(16)})`,
        tableStart + 24 * n + 4 * i,
      );
    }
  }
}

/**
 * `AV_PKT_FLAG_KEY | CORRUPT | DISCARD | DISPOSABLE`: the flags demuxers set. Never `AV_PKT_FLAG_TRUSTED` (8),
 * which tells FFmpeg that packet bytes may hold pointers.
 */
const PACKET_FLAGS = 0x1 | 0x2 | 0x4 | 0x10;

/** Header offsets of the codec parameters, for errors. */
const FIELD_OFFSETS: Record<ParamsProblem["field"], number> = {
  codecId: 36,
  codecTag: 40,
  profile: 44,
  level: 48,
  width: 52,
  height: 56,
  format: 60,
  bitsPerRawSample: 64,
  fieldOrder: 68,
  colorRange: 72,
  colorPrimaries: 76,
  colorTrc: 80,
  colorSpace: 84,
  chromaLocation: 88,
  sampleAspectRatio: 96,
  codec: 20, // (only FFmpeg can tell: never raised here)
  extradata: 24,
};

/** Range checks of the header fields (codec parameters: `codec_params.ts`); throws ProtocolError. */
function checkFields(p: VideoPacketsInit): void {
  const problem = codecParamsProblem(p);
  if (problem !== null) {
    throw new ProtocolError(`${problem.field} ${problem.reason}`, FIELD_OFFSETS[problem.field]);
  }
  if (p.streamIndex < 0) throw new ProtocolError(`stream index ${p.streamIndex} is negative`, 32);
  if (p.rotation < -360 || p.rotation > 360) {
    throw new ProtocolError(`rotation ${p.rotation}° is out of range`, 92);
  }
  const [tbNum, tbDen] = p.timeBase;
  if (tbNum <= 0 || tbDen <= 0) throw new ProtocolError(`invalid time base ${tbNum}/${tbDen}`, 104);
  if (!(Number.isFinite(p.frameRate) && p.frameRate >= 0)) {
    throw new ProtocolError(`frame rate ${p.frameRate} is not a finite number >= 0`, 112);
  }
  if (!Number.isFinite(p.startTimeSec)) throw new ProtocolError("start time is not a finite number", 128);
  const w = p.window;
  if (w !== null && !(Number.isFinite(w[0]) && Number.isFinite(w[1]) && w[0] <= w[1])) {
    throw new ProtocolError(`invalid window [${w[0]}, ${w[1]})`, 136);
  }
  if (p.endSec !== undefined && !Number.isFinite(p.endSec)) {
    throw new ProtocolError(`end time ${p.endSec} is not a finite number`, 152);
  }
  const first = p.firstFrameIndex;
  if (first !== undefined && !(Number.isInteger(first) && first >= 0 && first < 2 ** 31)) {
    throw new ProtocolError(`first frame index ${first} is not an integer in [0, 2^31)`, 160);
  }
}
