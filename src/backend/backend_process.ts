/**
 * A backend child as an operating-system process: a Deno subprocess running `child.ts`, with the permissions
 * asked for and glibc malloc settings that give big blocks back to the system; its stderr forwarded line by line
 * (the last lines kept for the error that reports its exit); how it ended, as a `BackendExitedError`; and
 * stopping it: stdin's end first, then SIGTERM (with SIGCONT, so a stopped child acts on it), then SIGKILL.
 * @module
 */

import { BackendExitedError } from "../errors.ts";

const DEFAULT_PERMISSIONS = ["--allow-read", "--allow-env", "--allow-ffi"];
const CHILD_ENTRY = new URL("./child.ts", import.meta.url).href;
/** Stderr lines kept for the exit error. */
const STDERR_TAIL = 20;
/** How long a child gets to leave by itself once its stdin is closed, ms. */
const EXIT_GRACE_MS = 200;
/**
 * glibc malloc settings for the child, unless the caller's `env` sets them. By default glibc raises its mmap
 * threshold each time a big block is freed, after which frame payloads, packet buffers and pipe read buffers
 * come from the heap, where freed space fragments and is rarely given back. A fixed threshold keeps big blocks
 * in their own mappings, returned to the system as soon as they are freed; 32 KiB rather than glibc's initial
 * 128 KiB because a demuxed clip's packets (tens of KiB) are allocated in a demux Worker's arena and freed on
 * the main thread, and above 32 KiB they fragmented those arenas (docs/loader.md has figures).
 */
const CHILD_MALLOC_ENV: Record<string, string> = { MALLOC_MMAP_THRESHOLD_: "32768" };

/** Flags that keep a `deno.json`, `package.json` or lock file of the working directory (or above) out of the child. */
const ISOLATED = ["--no-config", "--no-lock", "--no-npm", "--no-remote"];

/** Options of {@link BackendProcess}. */
export interface BackendProcessOptions {
  /** Deno permission flags (default `["--allow-read", "--allow-env", "--allow-ffi"]`). */
  permissions?: string[];
  /** Extra environment variables (added to this process's environment). */
  env?: Record<string, string>;
  /** Run the child with no configuration, lock file, npm or remote imports (see `SpawnOptions.isolated`). */
  isolated?: boolean;
  /** Where its stderr lines go, each prefixed with `[backend PID]`. */
  log: (line: string) => void;
}

/** A running backend child process. */
export class BackendProcess {
  readonly #child: Deno.ChildProcess;
  readonly #stdin: WritableStreamDefaultWriter<Uint8Array>;
  readonly #log: (line: string) => void;
  readonly #stderrTail: string[] = [];
  /** Resolves once its stderr has been read to the end (it exited, or closed stderr). */
  readonly stderrDone: Promise<void>;

  /** Starts the child. */
  constructor(opts: BackendProcessOptions) {
    this.#child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--quiet",
        ...(opts.isolated ? ISOLATED : []),
        ...(opts.permissions ?? DEFAULT_PERMISSIONS),
        CHILD_ENTRY,
      ],
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
      env: { ...CHILD_MALLOC_ENV, ...opts.env },
    }).spawn();
    this.#stdin = this.#child.stdin.getWriter();
    this.#log = opts.log;
    this.stderrDone = this.#pumpStderr();
  }

  /** The child's process id. */
  get pid(): number {
    return this.#child.pid;
  }

  /** What the child writes to its stdout (the frames). */
  get stdout(): ReadableStream<Uint8Array> {
    return this.#child.stdout;
  }

  /** Resolves with its exit status. */
  get status(): Promise<Deno.CommandStatus> {
    return this.#child.status;
  }

  /** Writes to its stdin; rejects once the child is gone. */
  write(bytes: Uint8Array): Promise<void> {
    return this.#stdin.write(bytes);
  }

  /** Sends a signal, unless it has exited already. */
  kill(signal: Deno.Signal): void {
    try {
      this.#child.kill(signal);
    } catch {
      // Already exited.
    }
  }

  /**
   * How it ended, as the error the backend fails with: its exit code or signal and its last stderr lines.
   * @param name the backend, `module#export`
   * @param cause what else went wrong (its stdout ended inside a frame), if anything
   */
  exitError(name: string, status: Deno.CommandStatus, cause: unknown): BackendExitedError {
    const how = status.signal !== null
      ? `was killed by ${status.signal}`
      : status.success
      ? "exited (code 0)"
      : `exited with code ${status.code}`;
    const tail = this.#stderrTail.length > 0
      ? `; last stderr lines:\n  ${this.#stderrTail.join("\n  ")}`
      : "";
    return new BackendExitedError(
      `backend ${name} (pid ${this.pid}) ${how}${tail}`,
      name,
      {
        code: status.signal !== null ? null : status.code,
        signal: status.signal,
        stderrTail: [...this.#stderrTail],
      },
      { cause },
    );
  }

  /**
   * Stops the child: closes its stdin (a child leaves by itself then), sends SIGTERM and SIGCONT if it is still
   * there after a moment, and SIGKILL after `killGraceMs` more. Resolves once it has exited.
   */
  async stop(killGraceMs: number): Promise<void> {
    this.#stdin.close().catch(() => {});
    if (!(await this.#exitWithin(EXIT_GRACE_MS))) {
      this.kill("SIGTERM");
      this.kill("SIGCONT"); // a stopped child acts on SIGTERM only once it runs
      if (!(await this.#exitWithin(killGraceMs))) this.kill("SIGKILL");
    }
    await this.#child.status;
  }

  async #exitWithin(ms: number): Promise<boolean> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<false>((resolve) => timer = setTimeout(() => resolve(false), ms));
    try {
      return await Promise.race([this.#child.status.then(() => true), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  async #pumpStderr(): Promise<void> {
    let rest = "";
    const decoder = new TextDecoder();
    const line = (text: string) => {
      this.#stderrTail.push(text);
      if (this.#stderrTail.length > STDERR_TAIL) this.#stderrTail.shift();
      this.#log(`[backend ${this.pid}] ${text}`);
    };
    try {
      for await (const chunk of this.#child.stderr) {
        rest += decoder.decode(chunk, { stream: true });
        const lines = rest.split("\n");
        rest = lines.pop()!;
        for (const l of lines) line(l);
      }
    } catch { /* the pipe broke: the child is gone */ }
    rest += decoder.decode();
    if (rest.length > 0) line(rest);
  }
}
