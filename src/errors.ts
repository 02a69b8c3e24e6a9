/**
 * The error hierarchy of sluice. Every error sluice throws on purpose is a {@link SluiceError}, so callers can
 * tell sluice's own failures (bad media, missing libraries, protocol damage) from bugs in their code.
 * @module
 */

/**
 * Root of every error sluice throws on purpose. Each cause has its subclass, which keeps its class (and its
 * fields) across Workers and processes: a `MediaError` thrown in a decode Worker or a backend child is a
 * `MediaError` where the loader raises it.
 * @example Tell sluice's failures apart, and from bugs
 * ```ts
 * import { DatasetError, InvalidArgumentError, SluiceError, videoClassificationLoader } from "@sluice/sluice";
 *
 * try {
 *   await using loader = await videoClassificationLoader({
 *     dataset: "data/train",
 *     batchSize: 8,
 *     clip: { numFrames: 16, width: 112, height: 112 },
 *   });
 *   for await (using batch of loader) console.log(batch.shape);
 * } catch (e) {
 *   if (e instanceof InvalidArgumentError) console.error(`fix the options: ${e.message}`);
 *   else if (e instanceof DatasetError) console.error(`fix the dataset: ${e.message}`);
 *   else if (e instanceof SluiceError) console.error(`${e.name}: ${e.message}`);
 *   else throw e; // not sluice's: a bug in the calling code
 * }
 * ```
 */
export class SluiceError extends Error {
  /**
   * An error whose name is its subclass's.
   * @param message what failed
   * @param options `cause`: the underlying error
   */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** A native library (FFmpeg, libcuda, libnvcuvid) could not be found or loaded. */
export class LibraryNotFoundError extends SluiceError {
  /** Every path that was tried, in order. */
  readonly tried: string[];
  /**
   * An error that lists the paths tried.
   * @param message what could not be loaded, and how to point sluice at it
   * @param tried every path tried, in order
   * @param options `cause`: the loader's own error
   */
  constructor(message: string, tried: string[], options?: ErrorOptions) {
    super(message, options);
    this.tried = tried;
  }
}

/** The loaded libraries do not fit together or are a version sluice does not support. */
export class LibraryVersionError extends SluiceError {}

/** A media operation failed: carries the source, the operation and FFmpeg's own message. */
export class MediaError extends SluiceError {
  /** The file path, URL or a description of in-memory bytes. */
  readonly source: string;
  /** What sluice was doing, e.g. `"avformat_open_input"` or `"decode"`. */
  readonly operation: string;
  /** FFmpeg's AVERROR code, when the failure came from FFmpeg. */
  readonly code: number | undefined;
  /** FFmpeg's description of `code` (from `av_strerror`), or sluice's own reason. */
  readonly reason: string;
  /**
   * An error whose message is `<source>: <operation> failed: <reason>`.
   * @param source the file path, URL or a description of in-memory bytes
   * @param operation what sluice was doing
   * @param reason FFmpeg's description of `code`, or sluice's own reason
   * @param code FFmpeg's AVERROR code, when FFmpeg failed
   * @param options `cause`: the underlying error
   */
  constructor(source: string, operation: string, reason: string, code?: number, options?: ErrorOptions) {
    super(`${source}: ${operation} failed: ${reason}`, options);
    this.source = source;
    this.operation = operation;
    this.reason = reason;
    this.code = code;
  }
}

/**
 * One training clip could not be delivered as asked: it names the file, the clip's window, the stage that failed
 * (`"demux"` or `"decode"`) and the cause (no frame on screen in the window, a file that ends before it,
 * undecodable packets, or more padding than `maxPadFraction` allows). The original error, when there was one,
 * is the `cause`.
 */
export class ClipError extends MediaError {
  /** The clip's window `[start, end)` in seconds. */
  readonly window: [number, number];
  /** Where it failed. */
  readonly stage: "demux" | "decode";
  /**
   * An error whose message names `source`, the window and the stage.
   * @param source the video's path or URL
   * @param stage where the clip failed
   * @param window the clip's window `[start, end)`, seconds
   * @param reason why it failed
   * @param options `cause`: the underlying error
   */
  constructor(
    source: string,
    stage: "demux" | "decode",
    window: [number, number],
    reason: string,
    options?: ErrorOptions,
  ) {
    super(source, stage, reason, undefined, options);
    const [start, end] = window.map(fmtSec);
    this.message = `${source}: clip [${start}, ${end}) s: ${stage} failed: ${reason}`;
    this.window = window;
    this.stage = stage;
  }
}

/**
 * A decoded clip broke the delivery rule (`src/loader/decode/clip_check.ts`), so it is failed instead of delivered:
 * its frames are not in presentation order, one lies outside its window (beyond the one frame on screen at its
 * start), its frame indices contradict its frames' timestamps, or its audio status contradicts its samples.
 * Damaged input (timestamps, pictures) is what brings one; it is counted as a failed clip like any other
 * `ClipError` and replaced per `onClipError`.
 */
export class ClipIntegrityError extends ClipError {
  /** Which part of the rule the clip broke. */
  readonly rule: "shape" | "order" | "window" | "frameIndex" | "audio";
  /**
   * A clip failed by the delivery rule, at its decode stage.
   * @param source the clip's video (path or URL)
   * @param window the clip's window, in seconds
   * @param rule the part of the rule it broke
   * @param reason how, with the times or indices involved
   * @param options `cause`: the underlying error
   */
  constructor(
    source: string,
    window: [number, number],
    rule: ClipIntegrityError["rule"],
    reason: string,
    options?: ErrorOptions,
  ) {
    super(source, "decode", window, `the clip breaks the delivery rule (${rule}): ${reason}`, options);
    this.rule = rule;
  }
}

/** Bytes that should follow one of sluice's binary layouts (packets, frames) do not. */
export class ProtocolError extends SluiceError {
  /** Byte offset in the stream or buffer where the problem was found. */
  readonly offset: number;
  /**
   * An error whose message gets ` (at byte <offset>)` appended.
   * @param message what is wrong with the bytes
   * @param offset where in the stream or buffer
   * @param options `cause`: the underlying error
   */
  constructor(message: string, offset: number, options?: ErrorOptions) {
    super(`${message} (at byte ${offset})`, options);
    this.offset = offset;
  }
}

/**
 * A piece of an option error's message ({@link OptionProblem.says}): text as it is, the door's prefix, an option
 * named by its path, a value shown, or what an option accepts, each worded by whoever shows the message.
 */
export type OptionMessagePart =
  | string
  /** Where the caller's door puts its prefix (`"loader: "`, `"sluice.Loader: "`); this text by default. */
  | { door: string }
  /** An option, by its path as TypeScript spells it (`"clip.numFrames"`). */
  | { option: string }
  /** A value, shown as the caller writes values (`true`, Python's `True`). */
  | { value: unknown }
  /** What an object of options is called (`"an object"`, Python's `"a dict"`). */
  | { object: true }
  /** What the option at `accepts` takes; `text` in TypeScript's words. */
  | { accepts: string; text: string };

/**
 * What an error about one option carries besides its message, so that the door the option came in by can word
 * the message in its caller's vocabulary (TypeScript's `clip.numFrames`, Python's `num_frames`, the command
 * line's `--frames`). Own enumerable fields of the error: they cross Workers and processes with it.
 */
export interface OptionProblem {
  /** The option at fault, by its path as TypeScript spells it (`"clip.numFrames"`). */
  option: string;
  /** The value given, where the value is the fault. */
  value?: unknown;
  /** What the option accepts, in TypeScript's words (`"an integer from 1 to 10000"`), where that is the fault. */
  accepts?: string;
  /** The message as parts, for a door to word again (`rewordOptionError` in `src/options.ts`). */
  says: OptionMessagePart[];
}

/**
 * An option or argument is out of range or inconsistent. An error about an option carries its
 * {@link OptionProblem} fields (`option`, `value`, `accepts`, `says`), so each door words it for its caller.
 */
export class InvalidArgumentError extends SluiceError {
  /** The option at fault, by its TypeScript path, when the error is about one (see {@link OptionProblem}). */
  declare readonly option?: string;
  /** The value given, when that is the fault. */
  declare readonly value?: unknown;
  /** What the option accepts, in TypeScript's words, when that is the fault. */
  declare readonly accepts?: string;
  /** The message as parts (see {@link OptionProblem}). */
  declare readonly says?: OptionMessagePart[];

  /**
   * An argument or option refused.
   * @param message what went wrong, naming the option
   * @param options the error's `cause`, and `problem`: the option the error is about, kept as own fields (see
   *   {@link OptionProblem})
   */
  constructor(message: string, options?: ErrorOptions & { problem?: OptionProblem }) {
    super(message, options);
    if (options?.problem !== undefined) withProblem(this, options.problem);
  }
}

/** `e` with `problem`'s fields as its own (an error about an option; see {@link OptionProblem}). */
export function withProblem<E extends Error>(e: E, problem: OptionProblem): E & OptionProblem {
  const { option, value, accepts, says } = problem;
  Object.assign(
    e,
    { option },
    value === undefined ? {} : { value },
    accepts === undefined ? {} : { accepts },
    {
      says,
    },
  );
  return e as E & OptionProblem;
}

/** One failed task, as remembered by a {@link PipelineFailure}. */
export interface StageError {
  /** The stage whose function threw. */
  stage: string;
  /** A short description of the item (never the item itself, so big buffers are not kept alive). */
  item: string;
  /** What was thrown. */
  error: unknown;
}

/** A pipeline stage exceeded its `maxFailures`: carries per-stage failure counts and the first errors. */
export class PipelineFailure extends SluiceError {
  /** Per stage: tasks taken in and tasks that failed. */
  readonly counts: { stage: string; tasksIn: number; failed: number }[];
  /** The first errors seen (a few per stage), in the order they happened. */
  readonly errors: StageError[];
  /**
   * An error with the pipeline's failure counts and first errors.
   * @param message which stage exceeded its budget
   * @param counts per stage: tasks taken in and tasks that failed
   * @param errors the first errors seen
   * @param options `cause`: the error that ended the pipeline
   */
  constructor(
    message: string,
    counts: { stage: string; tasksIn: number; failed: number }[],
    errors: StageError[],
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.counts = counts;
    this.errors = errors;
  }
}

/** A Worker of a `WorkerPool` died (uncaught error, `self.close()`, `Deno.exit()`) while running a task. */
export class WorkerCrashedError extends SluiceError {
  /** The export the task was calling. */
  readonly exportName: string;
  /**
   * An error naming the export the Worker was running.
   * @param message how the Worker died
   * @param exportName the export the task was calling
   * @param options `cause`: the Worker's uncaught error, when that is what killed it
   */
  constructor(message: string, exportName: string, options?: ErrorOptions) {
    super(message, options);
    this.exportName = exportName;
  }
}

/** A task was given to a `WorkerPool` or a pipeline that is stopped. */
export class PipelineStoppedError extends SluiceError {}

/**
 * A subprocess backend failed as a whole; its subclasses say how (it exited, it stalled). What a backend's
 * pipeline throws arrives with its own class instead (see `docs/protocol.md`).
 */
export class BackendError extends SluiceError {
  /** The backend module and export, e.g. `file:///…/my_backend.ts#buildBackend`. */
  readonly backend: string;
  /**
   * An error naming the backend.
   * @param message what happened to the backend
   * @param backend the backend module and export
   * @param options `cause`: the underlying error
   */
  constructor(message: string, backend: string, options?: ErrorOptions) {
    super(message, options);
    this.backend = backend;
  }
}

/** A subprocess backend exited (non-zero status or a signal) while its items were still expected. */
export class BackendExitedError extends BackendError {
  /** Exit code (`null` when it was killed by a signal). */
  readonly code: number | null;
  /** The signal that killed it, e.g. `"SIGKILL"`, or `null`. */
  readonly signal: string | null;
  /** The last lines the child wrote to stderr (oldest first). */
  readonly stderrTail: string[];
  /**
   * An error with the child's exit status and last stderr lines.
   * @param message how the child exited
   * @param backend the backend module and export
   * @param exit how the child ended and what it last wrote to stderr
   * @param options `cause`: the underlying error
   */
  constructor(
    message: string,
    backend: string,
    exit: { code: number | null; signal: string | null; stderrTail: string[] },
    options?: ErrorOptions,
  ) {
    super(message, backend, options);
    this.code = exit.code;
    this.signal = exit.signal;
    this.stderrTail = exit.stderrTail;
  }
}

/**
 * A subprocess backend sent nothing, not even a heartbeat, for longer than its `stallTimeoutMs` (stopped with
 * SIGSTOP, hung in uninterruptible I/O, or starved of CPU): it was killed rather than left to block the loop.
 */
export class BackendStalledError extends BackendError {
  /** Milliseconds the child had been silent when it was given up. */
  readonly silentMs: number;
  /**
   * An error with the silence that ended the backend.
   * @param message how long the child was silent, and what was done
   * @param backend the backend module and export
   * @param silentMs how long the child had been silent
   * @param options `cause`: the underlying error
   */
  constructor(message: string, backend: string, silentMs: number, options?: ErrorOptions) {
    super(message, backend, options);
    this.silentMs = silentMs;
  }
}

/**
 * Where a fetch failed: `"connect"` (before the response headers arrived: connection, request, the server's first
 * answer), `"status"` (an HTTP error status), `"body"` (while the body arrived), `"deadline"` (the item's total
 * time ran out between attempts), `"read"` (a local file).
 */
export type FetchPhase = "connect" | "status" | "body" | "deadline" | "read";

/** A dataset item could not be fetched (missing file, HTTP 4xx, or 5xx/timeouts/dropped connections after retries). */
export class FetchError extends SluiceError {
  /** The path or URL. */
  readonly source: string;
  /** The HTTP status of the last attempt (0 for network errors, timeouts and local files). */
  readonly status: number;
  /** Attempts made. */
  readonly attempts: number;
  /** Where the last attempt failed. */
  readonly phase: FetchPhase;
  /** The time limit that ended it, e.g. `{ name: "idleTimeoutMs", ms: 5000 }`; undefined when none did. */
  readonly limit: { name: string; ms: number } | undefined;
  /**
   * An error whose message is `<source>: fetch failed after <attempts> attempt(s): <reason>`.
   * @param source the path or URL
   * @param status the HTTP status of the last attempt (0 for none)
   * @param attempts attempts made
   * @param reason why the last attempt failed
   * @param options `phase` (default "connect") and `limit` fill those fields; `cause`: the underlying error
   */
  constructor(
    source: string,
    status: number,
    attempts: number,
    reason: string,
    options?: ErrorOptions & { phase?: FetchPhase; limit?: { name: string; ms: number } },
  ) {
    super(`${source}: fetch failed after ${attempts} attempt(s): ${reason}`, options);
    this.source = source;
    this.status = status;
    this.attempts = attempts;
    this.phase = options?.phase ?? "connect";
    this.limit = options?.limit;
  }
}

/** A dataset (directory tree or manifest) is malformed: names the file, the line and the problem. */
export class DatasetError extends SluiceError {}

/** A CUDA driver or NVDEC call failed: carries the call, the `CUresult` and the driver's name for it. */
export class CudaError extends SluiceError {
  /** The driver function that failed, e.g. `"cuMemAlloc_v2"`. */
  readonly call: string;
  /** The `CUresult` code. */
  readonly code: number;
  /** The driver's name for the code, e.g. `"CUDA_ERROR_OUT_OF_MEMORY"`. */
  readonly errorName: string;
  /**
   * An error whose message is `[<context>: ]<call> failed: <errorName> (<code>): <description>`.
   * @param call the driver function that failed
   * @param code the `CUresult` code
   * @param errorName the driver's name for the code
   * @param description the driver's description of the code
   * @param context what sluice was doing (the file, the decode)
   * @param options `cause`: the underlying error
   */
  constructor(
    call: string,
    code: number,
    errorName: string,
    description: string,
    context = "",
    options?: ErrorOptions,
  ) {
    super(`${context ? `${context}: ` : ""}${call} failed: ${errorName} (${code}): ${description}`, options);
    this.call = call;
    this.code = code;
    this.errorName = errorName;
  }
}

/** The GPU's video decoder cannot decode this stream (codec, bit depth, chroma format or size out of its limits). */
export class NvdecUnsupportedError extends SluiceError {
  /** The limit that was exceeded, e.g. `"max coded width 4096"` or `"bit depth 10"`. */
  readonly limit: string;
  /**
   * An error naming the decoder's limit.
   * @param message which stream cannot be decoded, and why
   * @param limit the limit that was exceeded
   * @param options `cause`: the underlying error
   */
  constructor(message: string, limit: string, options?: ErrorOptions) {
    super(message, options);
    this.limit = limit;
  }
}

/**
 * Serving batches to another process (`sluice serve`, `serveLoader`) failed: shared memory could not be
 * created, a peer broke the protocol or speaks another version, or the server is busy.
 */
export class ServeError extends SluiceError {
  /** What went wrong, one of the codes of docs/serve_protocol.md (e.g. `"protocol-version"`, `"busy"`). */
  readonly code: string;
  /**
   * An error with its protocol code.
   * @param code what went wrong, a code of docs/serve_protocol.md
   * @param message the explanation
   * @param options `cause`: the underlying error
   */
  constructor(code: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
  }
}

/** Seconds in a message, to the millisecond: `0.4`, not `0.40020886589772997`; `25`, not `25.000`. */
export function fmtSec(sec: number): string {
  return String(Number(sec.toFixed(3)));
}

/**
 * A thrown value as one line of a log: `Name: message`, line breaks folded to "; ". When the caller prints
 * `subject` (the file or item) in front of it and the message starts with that same subject, the message's copy
 * is left out, so the line names it once.
 */
export function errorText(e: unknown, subject?: string): string {
  let text = e instanceof Error ? e.message : String(e);
  if (subject !== undefined && subject !== "" && text.startsWith(`${subject}: `)) {
    text = text.slice(subject.length + 2);
  }
  text = text.trim().replace(/\s*\n\s*/g, "; ");
  return e instanceof Error ? `${e.name}: ${text}` : text;
}

// ---------------------------------------------------------------- dataset preparation (src/prep)

/** No encoder for the codec asked for is built into the loaded FFmpeg: names each one tried and its package. */
export class EncoderNotFoundError extends SluiceError {
  /** The codec asked for, e.g. "av1". */
  readonly codec: string;
  /** The encoders tried, in order. */
  readonly tried: string[];
  /**
   * An error whose message names the encoders tried and how to get one.
   * @param codec the codec asked for
   * @param tried the encoders tried, each with the Debian package and the `./configure` flag that provide it
   * @param ffmpegDir where the FFmpeg libraries were loaded from
   * @param options `cause`: the underlying error
   */
  constructor(
    codec: string,
    tried: readonly { name: string; debianPackage: string; configure: string }[],
    ffmpegDir: string,
    options?: ErrorOptions,
  ) {
    super(
      `no ${codec} encoder in the FFmpeg loaded from ${ffmpegDir} (tried ${
        tried.map((t) => t.name).join(", ")
      }). ` +
        `Debian/Ubuntu's FFmpeg has it: sudo apt-get install ${
          tried.map((t) => t.debianPackage).join(" ")
        } ` +
        `(pulled in by libavcodec59/60); a self-built FFmpeg needs ./configure ${
          tried.map((t) => t.configure).join(" or ")
        }`,
      options,
    );
    this.codec = codec;
    this.tried = tried.map((t) => t.name);
  }
}

/** A tar shard or its index is damaged, truncated or does not match: names the shard and the member. */
export class ShardError extends SluiceError {
  /** The shard file or URL. */
  readonly shard: string;
  /** The member concerned (its tar name), or "" when the problem is the shard or index as a whole. */
  readonly member: string;
  /**
   * An error whose message is `<shard>: member <member>: <problem>` (the member part only when there is one).
   * @param shard the shard file or URL
   * @param member the member concerned, or ""
   * @param problem what is wrong
   * @param options `cause`: the underlying error
   */
  constructor(shard: string, member: string, problem: string, options?: ErrorOptions) {
    super(`${shard}${member ? `: member ${member}` : ""}: ${problem}`, options);
    this.shard = shard;
    this.member = member;
  }
}
