/**
 * Opening a media input for demuxing: a file path (FFmpeg's own file protocol) or bytes in memory (a custom
 * `AVIOContext` whose read/seek callbacks copy from a `Uint8Array`). {@link MediaSource} owns the
 * `AVFormatContext` and, for bytes, the I/O context, its buffer and the two callbacks, and releases all of them
 * deterministically in `[Symbol.dispose]`.
 *
 * `avformat_find_stream_info` is *not* called here: it opens decoders, and decoder init serialises behind
 * FFmpeg's process-wide codec lock (demux latency measured 15× higher at 8 threads than at 2). Callers call
 * {@link MediaSource.findStreamInfo} only when the container header lacks what they need.
 * @module
 */
import { OutParam } from "../../ffi/out_param.ts";
import { cstr } from "../../ffi/cstring.ts";
import { AVERROR_EOF, AVERROR_INVALIDDATA } from "../../ffi/ffmpeg/errors.ts";
import { InvalidArgumentError, MediaError } from "../errors.ts";
import { check, ffmpeg } from "./ffmpeg.ts";
import { AVFMT_FLAG_CUSTOM_IO, formatContext, ioContext, type Ptr } from "./structs.ts";

/** A media input: a file path, or the bytes of a whole file. */
export type MediaInput = string | Uint8Array;

/** The label errors use for an input: the path, or `<bytes N>` for in-memory bytes. */
export function sourceLabel(src: MediaInput): string {
  return typeof src === "string" ? src : `<bytes ${src.byteLength}>`;
}

/** Size of the custom I/O buffer handed to FFmpeg (FFmpeg may grow it). */
const IO_BUFFER_SIZE = 64 * 1024;
const AVSEEK_SIZE = 0x10000;
const AVSEEK_FORCE = 0x20000;
const SEEK_SET = 0, SEEK_CUR = 1, SEEK_END = 2;
/** `AVERROR(EINVAL)`. */
const EINVAL = -22;

const READ_DEF = { parameters: ["pointer", "pointer", "i32"], result: "i32" } as const;
const SEEK_DEF = { parameters: ["pointer", "i64", "i32"], result: "i64" } as const;

/** The custom I/O for in-memory bytes: callbacks, the `AVIOContext` and its buffer. */
class MemoryIo {
  #pos = 0;
  readonly #bytes: Uint8Array;
  readonly #read: Deno.UnsafeCallback<typeof READ_DEF>;
  readonly #seek: Deno.UnsafeCallback<typeof SEEK_DEF>;
  #ctx: Ptr | null;

  constructor(bytes: Uint8Array, label: string) {
    this.#bytes = bytes;
    this.#read = new Deno.UnsafeCallback(READ_DEF, (_opaque, buf, size) => this.#onRead(buf, size));
    this.#seek = new Deno.UnsafeCallback(SEEK_DEF, (_opaque, offset, whence) => this.#onSeek(offset, whence));
    const { avutil, avformat } = ffmpeg();
    const buffer = avutil.av_malloc(BigInt(IO_BUFFER_SIZE));
    if (buffer === null) {
      this.#closeCallbacks();
      throw new MediaError(label, "av_malloc", "out of memory for the I/O buffer");
    }
    const ctx = avformat.avio_alloc_context(
      buffer,
      IO_BUFFER_SIZE,
      0,
      null,
      this.#read.pointer,
      null,
      this.#seek.pointer,
    );
    if (ctx === null) {
      avutil.av_free(buffer);
      this.#closeCallbacks();
      throw new MediaError(label, "avio_alloc_context", "out of memory for the I/O context");
    }
    this.#ctx = ctx;
  }

  get ctx(): Ptr {
    if (this.#ctx === null) throw new InvalidArgumentError("in-memory I/O used after release");
    return this.#ctx;
  }

  #onRead(buf: Deno.PointerValue, size: number): number {
    const left = this.#bytes.byteLength - this.#pos;
    if (left <= 0) return AVERROR_EOF;
    if (buf === null || size <= 0) return EINVAL;
    const n = Math.min(left, size);
    new Uint8Array(Deno.UnsafePointerView.getArrayBuffer(buf, n)).set(
      this.#bytes.subarray(this.#pos, this.#pos + n),
    );
    this.#pos += n;
    return n;
  }

  #onSeek(offset: number | bigint, whence: number): bigint {
    const len = this.#bytes.byteLength;
    if (whence & AVSEEK_SIZE) return BigInt(len);
    const off = Number(offset);
    let target: number;
    switch (whence & ~AVSEEK_FORCE) {
      case SEEK_SET:
        target = off;
        break;
      case SEEK_CUR:
        target = this.#pos + off;
        break;
      case SEEK_END:
        target = len + off;
        break;
      default:
        return BigInt(EINVAL);
    }
    // Past the end is allowed, as lseek allows it on a file (a read there is EOF): FFmpeg 4.x's MOV demuxer,
    // refused such a seek into a truncated file, says "invalid data" where 5.0 on says end of file.
    if (!Number.isFinite(target) || target < 0) return BigInt(EINVAL);
    this.#pos = target;
    return BigInt(target);
  }

  #closeCallbacks(): void {
    this.#read.close();
    this.#seek.close();
  }

  /** Frees the buffer FFmpeg currently uses (it may have replaced ours), the context and the callbacks. */
  [Symbol.dispose](): void {
    if (this.#ctx === null) return;
    const { avutil, avformat } = ffmpeg();
    const buffer = ioContext.buffer(this.#ctx);
    if (buffer !== null) avutil.av_free(buffer);
    avformat.avio_context_free(new OutParam(this.#ctx).bytes);
    this.#ctx = null;
    this.#closeCallbacks();
  }
}

/** Options for {@link MediaSource.open}. */
export interface OpenOptions {
  /** Operation name for error messages (default "open"). */
  operation?: string;
}

/** An opened input: the demuxer's `AVFormatContext` (header read, no stream info probed) and its I/O. */
export class MediaSource {
  /** Path or `<bytes N>`, for error messages. */
  readonly label: string;
  #fmt: Ptr | null;
  readonly #io: MemoryIo | null;
  readonly #input: MediaInput;
  #probed = false;

  private constructor(input: MediaInput, fmt: Ptr, io: MemoryIo | null) {
    this.#input = input;
    this.label = sourceLabel(input);
    this.#fmt = fmt;
    this.#io = io;
  }

  /**
   * Opens `src` and reads the container header (`avformat_open_input`). Throws {@link MediaError} naming the
   * source and FFmpeg's message (e.g. "No such file or directory", "Invalid data found when processing input").
   */
  static open(src: MediaInput, _opts: OpenOptions = {}): MediaSource {
    const label = sourceLabel(src);
    if (typeof src !== "string" && !(src instanceof Uint8Array)) {
      throw new InvalidArgumentError(`media source must be a path or a Uint8Array, got ${typeof src}`);
    }
    const { avformat } = ffmpeg();
    if (typeof src === "string") {
      const out = new OutParam();
      check(avformat.avformat_open_input(out.bytes, cstr(src), null, null), label, "avformat_open_input");
      return new MediaSource(src, out.pointer as Ptr, null);
    }
    if (src.byteLength === 0) {
      throw new MediaError(label, "avformat_open_input", "the input is empty (0 bytes)");
    }
    const io = new MemoryIo(src, label);
    const fmt = avformat.avformat_alloc_context();
    if (fmt === null) {
      io[Symbol.dispose]();
      throw new MediaError(label, "avformat_alloc_context", "out of memory");
    }
    formatContext.setPb(fmt, io.ctx);
    formatContext.setFlags(fmt, formatContext.flags(fmt) | AVFMT_FLAG_CUSTOM_IO);
    const out = new OutParam(fmt);
    // On failure avformat_open_input frees the context (not our custom pb) and writes NULL to it.
    const rc = avformat.avformat_open_input(out.bytes, cstr(""), null, null);
    if (rc < 0) {
      io[Symbol.dispose]();
      check(rc, label, "avformat_open_input");
    }
    return new MediaSource(src, out.pointer as Ptr, io);
  }

  /** The `AVFormatContext`; throws after release. */
  get fmt(): Ptr {
    if (this.#fmt === null) throw new InvalidArgumentError(`${this.label}: media source used after release`);
    return this.#fmt;
  }

  /**
   * A new open of the same input: a demuxer of its own, whose first read is the file's first packet (bytes are
   * shared, not copied). Throws as {@link open} does.
   */
  reopen(): MediaSource {
    if (this.#fmt === null) throw new InvalidArgumentError(`${this.label}: media source used after release`);
    return MediaSource.open(this.#input);
  }

  /** True once `avformat_find_stream_info` ran on this source. */
  get probed(): boolean {
    return this.#probed;
  }

  /**
   * Runs `avformat_find_stream_info` (opens decoders: takes FFmpeg's codec lock for some codecs), with
   * `probesize` bytes and `maxAnalyzeDurationUs` microseconds as limits. A no-op when it already ran.
   */
  findStreamInfo(limits: { probesize?: number; maxAnalyzeDurationUs?: number } = {}): void {
    if (this.#probed) return;
    const fmt = this.fmt;
    formatContext.setProbeLimits(
      fmt,
      BigInt(limits.probesize ?? 2_000_000),
      BigInt(limits.maxAnalyzeDurationUs ?? 2_000_000),
    );
    check(ffmpeg().avformat.avformat_find_stream_info(fmt, null), this.label, "avformat_find_stream_info");
    this.#probed = true;
  }

  /** Closes the demuxer, then frees the custom I/O (if any). Safe to call twice. */
  [Symbol.dispose](): void {
    if (this.#fmt === null) return;
    ffmpeg().avformat.avformat_close_input(new OutParam(this.#fmt).bytes);
    this.#fmt = null;
    this.#io?.[Symbol.dispose]();
  }
}

/**
 * `av_read_frame`, with one difference between releases smoothed over: at a truncated file's end FFmpeg 4.x's
 * MOV demuxer reports `AVERROR_INVALIDDATA` ("partial file") where 5.0 on reports `AVERROR_EOF`; an
 * invalid-data error once the input has reached its end (`avio_feof`) is that end, as 5.0 says.
 */
export function readFrame(fmt: Ptr, pkt: Ptr): number {
  const { avformat } = ffmpeg();
  const rc = avformat.av_read_frame(fmt, pkt);
  if (rc !== AVERROR_INVALIDDATA) return rc;
  const pb = formatContext.pb(fmt);
  return pb !== null && avformat.avio_feof(pb) !== 0 ? AVERROR_EOF : rc;
}
