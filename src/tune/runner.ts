/**
 * Trial runners. The search asks a {@link TrialRunner} for one trial at a time; {@link SubprocessRunner} runs
 * each in a fresh Deno subprocess (`trial_main.ts`), so a crash, a hang or a leak costs one trial, not the
 * search: a trial past its time limit or over its memory limit (RSS of its whole process tree, polled) is
 * killed with its children and recorded as failed, its stderr kept.
 * @module
 */

import { InvalidArgumentError } from "../errors.ts";
import type { TrialMetrics } from "./measure.ts";
import { killTree, treeRss } from "./proc.ts";
import type { Config } from "./space.ts";
import type { TrialJob, TrialReply } from "./trial_main.ts";

/** One trial the search wants run. */
export interface TrialRequest {
  /** Sequence number in the search (names its log file). */
  id: number;
  /** `"ceiling"`: the headspace trial (batches replayed from memory). */
  kind: "measure" | "ceiling";
  /** The configuration to measure. */
  config: Config;
  /** Warm-up from the first batch, seconds. */
  warmupSec: number;
  /** Measured window, seconds. */
  measureSec: number;
}

/** What came of a trial. */
export interface TrialOutcome {
  /** Whether it measured. */
  status: "ok" | "failed";
  /** What it measured (null when it failed). */
  metrics: TrialMetrics | null;
  /** Why it failed: "crashed: …", "hung: …", "exceeded the memory limit …", or the module's error. */
  reason: string | null;
  /** Wall time the trial took, start-up included, seconds (what it cost the budget). */
  wallSec: number;
  /** The end of its stderr (at most {@link STDERR_TAIL} bytes). */
  stderrTail: string;
  /** Highest RSS of its process tree seen while it ran, bytes (null when unknown). */
  peakTreeRssBytes: number | null;
}

/** Runs trials for the search. */
export interface TrialRunner {
  /** Runs one trial; a failure is an outcome, never a rejection. */
  run(req: TrialRequest): Promise<TrialOutcome>;
}

/** Bytes of a trial's stderr kept in its record. */
export const STDERR_TAIL = 4096;
const LOG_CAP = 4 << 20;
const POLL_MS = 200;

/** Options of {@link SubprocessRunner}. */
export interface SubprocessRunnerOptions {
  /** The module's URL. */
  module: string;
  /** `ctx.args` of the module's `create`. */
  args: readonly string[];
  /** Seconds a trial may take beyond its warm-up and window (start-up, indexing) before it counts as hung. */
  graceSec: number;
  /** RSS limit of a trial's process tree, bytes. */
  memoryLimitBytes: number;
  /** Directory for each trial's full output (`trial-<id>.log`) and reply files. */
  logDir: string;
  /** Aborting it kills the running trial (its outcome is then a failure the search discards). */
  signal?: AbortSignal;
}

/** Runs each trial in a fresh `deno run --allow-all` subprocess of `trial_main.ts`. */
export class SubprocessRunner implements TrialRunner {
  readonly #opts: SubprocessRunnerOptions;

  constructor(opts: SubprocessRunnerOptions) {
    this.#opts = opts;
  }

  /** Imports the module in a subprocess and returns its search space and start configuration. */
  async describe(): Promise<Extract<TrialReply, { space: unknown }>> {
    const r = await this.#spawn("describe", { kind: "describe" }, 120);
    if (r.reply?.ok && "space" in r.reply) return r.reply;
    const why = r.reply && !r.reply.ok ? r.reply.reason : r.failure ?? "no answer";
    throw new InvalidArgumentError(
      `${this.#opts.module}: ${why}${r.stderrTail ? `\n${r.stderrTail.trimEnd()}` : ""}`,
    );
  }

  async run(req: TrialRequest): Promise<TrialOutcome> {
    const limitSec = req.warmupSec + req.measureSec + this.#opts.graceSec;
    const r = await this.#spawn(`trial-${req.id}`, {
      kind: req.kind,
      config: req.config,
      warmupSec: req.warmupSec,
      measureSec: req.measureSec,
    }, limitSec);
    const base = { wallSec: r.wallSec, stderrTail: r.stderrTail, peakTreeRssBytes: r.peakRss };
    if (r.failure === null && r.reply?.ok && "metrics" in r.reply) {
      return { status: "ok", metrics: r.reply.metrics, reason: null, ...base };
    }
    const reason = r.failure ?? (r.reply && !r.reply.ok ? `failed: ${r.reply.reason}` : "crashed: no result");
    return { status: "failed", metrics: null, reason, ...base };
  }

  /** Runs `trial_main.ts` on `job` in a subprocess, watched, with its output logged as `<name>.log`. */
  async #spawn(name: string, job: Partial<TrialJob>, limitSec: number): Promise<Spawned> {
    const resultPath = `${this.#opts.logDir}/${name}.reply.json`;
    await Deno.remove(resultPath).catch(() => {});
    const full: TrialJob = {
      module: this.#opts.module,
      args: [...this.#opts.args],
      kind: "describe",
      resultPath,
      ...job,
    };
    const t0 = performance.now();
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-all", "--quiet", new URL("./trial_main.ts", import.meta.url).href],
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
      env: { NO_COLOR: "1" }, // plain text in the kept stderr
    }).spawn();
    const output = await TrialOutput.open(`${this.#opts.logDir}/${name}.log`, child);
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(JSON.stringify(full))).catch(() => {});
    await writer.close().catch(() => {});

    const watch = new TrialWatch(child.pid, this.#opts.memoryLimitBytes, limitSec, this.#opts.signal);
    const status = await child.status;
    watch.stop();
    await output.close();
    const wallSec = (performance.now() - t0) / 1000;
    let reply: TrialReply | null = null;
    try {
      reply = JSON.parse(await Deno.readTextFile(resultPath)) as TrialReply;
    } catch {
      // no reply: it crashed or was killed
    }
    let failure = watch.failure;
    if (failure === null && reply === null) {
      const how = status.signal ? `killed by ${status.signal}` : `exit status ${status.code}`;
      const last = lastErrorLine(output.tail);
      failure = `crashed: ${how}${last ? `: ${last}` : ""}`;
    }
    return { reply, failure, wallSec, stderrTail: output.tail, peakRss: watch.peakRss };
  }
}

/** What came of a trial subprocess. */
interface Spawned {
  /** The reply it wrote (null: none, it crashed or was killed). */
  reply: TrialReply | null;
  /** Why it failed (killed by the watch, or crashed without a reply); null when it did not. */
  failure: string | null;
  /** Wall time from its start to its end, seconds. */
  wallSec: number;
  /** The end of its stderr. */
  stderrTail: string;
  /** Highest RSS of its process tree seen, bytes (null when never read). */
  peakRss: number | null;
}

/** A trial's stdout and stderr copied into its log (up to {@link LOG_CAP} bytes), the end of stderr kept. */
class TrialOutput {
  /** The last {@link STDERR_TAIL} characters of stderr so far. */
  tail = "";
  #logged = 0;
  readonly #log: Deno.FsFile;
  readonly #pumps: Promise<unknown>;

  private constructor(log: Deno.FsFile, child: Deno.ChildProcess) {
    this.#log = log;
    this.#pumps = Promise.all([this.#pump(child.stdout, false), this.#pump(child.stderr, true)]);
  }

  /** Opens (truncates) the log at `path` and starts copying `child`'s output into it. */
  static async open(path: string, child: Deno.ChildProcess): Promise<TrialOutput> {
    const log = await Deno.open(path, { write: true, create: true, truncate: true });
    return new TrialOutput(log, child);
  }

  async #pump(stream: ReadableStream<Uint8Array>, keepTail: boolean): Promise<void> {
    const dec = new TextDecoder();
    for await (const chunk of stream) {
      if (this.#logged < LOG_CAP) {
        const part = chunk.subarray(0, LOG_CAP - this.#logged);
        this.#logged += part.length;
        await this.#log.write(part);
      }
      if (keepTail) this.tail = (this.tail + dec.decode(chunk, { stream: true })).slice(-STDERR_TAIL);
    }
  }

  /** Waits for both streams to end, then closes the log. */
  async close(): Promise<void> {
    await this.#pumps;
    this.#log.close();
  }
}

/**
 * Watches a running trial: kills its process tree when the tree's RSS passes the limit (polled), when it runs
 * past `limitSec`, or when `signal` aborts, and keeps the first reason and the highest RSS seen.
 */
class TrialWatch {
  /** Why the trial was killed (null: it was not). */
  failure: string | null = null;
  /** Highest RSS of the tree seen, bytes (null: never read). */
  peakRss: number | null = null;
  readonly #poll: ReturnType<typeof setInterval>;
  readonly #timer: ReturnType<typeof setTimeout>;
  readonly #signal: AbortSignal | undefined;
  readonly #onAbort: () => void;

  constructor(pid: number, limitBytes: number, limitSec: number, signal: AbortSignal | undefined) {
    this.#poll = setInterval(() => {
      const rss = treeRss(pid);
      if (rss === null) return;
      this.peakRss = Math.max(this.peakRss ?? 0, rss);
      if (rss > limitBytes && this.failure === null) {
        this.failure = `exceeded the memory limit (${fmtBytes(limitBytes)}): its processes held ${
          fmtBytes(rss)
        }`;
        killTree(pid);
      }
    }, POLL_MS);
    this.#timer = setTimeout(() => {
      if (this.failure !== null) return;
      this.failure = `hung: no result within ${limitSec.toFixed(0)} s (killed)`;
      killTree(pid);
    }, limitSec * 1000);
    this.#onAbort = () => {
      this.failure ??= "interrupted";
      killTree(pid);
    };
    this.#signal = signal;
    signal?.addEventListener("abort", this.#onAbort);
    if (signal?.aborted) this.#onAbort();
  }

  /** Stops watching (the trial ended). */
  stop(): void {
    this.#signal?.removeEventListener("abort", this.#onAbort);
    clearInterval(this.#poll);
    clearTimeout(this.#timer);
  }
}

/** The last line of stderr that looks like an error, else the last non-empty line. */
function lastErrorLine(text: string): string {
  const lines = text.split("\n").map((l) => l.trim()).filter((l) => l !== "" && !l.startsWith("at "));
  return lines.findLast((l) => /error|panic|fatal/i.test(l)) ?? lines.at(-1) ?? "";
}

/** Bytes as `1.5 GiB` / `300 MiB`. */
export function fmtBytes(n: number): string {
  return n >= 1 << 30 ? `${(n / (1 << 30)).toFixed(1)} GiB` : `${(n / (1 << 20)).toFixed(0)} MiB`;
}
