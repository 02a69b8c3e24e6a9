/**
 * The side-by-side harness shared by `bench/clip_workload.ts` and `bench/compare.ts`: it runs each contender
 * (sluice, PyTorch + PyAV, node-av, the ffmpeg CLI, ...) as a child process over the same clip list, measures it
 * from the outside the same way for all, and checks its frames against a reference before it is timed.
 *
 * Contender contract (every script in `bench/contenders/` follows it, whatever its language):
 * - `--clips FILE`: a {@link ClipList} (JSON). A clip is `numFrames` consecutive frames at the video's own rate,
 *   sluice's rule (docs/clips.md): the frame on screen at `start` (the latest presented at or before it, which
 *   may lie in an earlier GOP; the first frame when `start` precedes it), then the frames presented after it
 *   (every window holds more than `numFrames` of them; a video ending inside repeats its last frame). Each is
 *   resized to `width`×`height` RGB24 (bilinear); clips are grouped into batches of `batchSize` in list order.
 * - `--mode verify --out DIR`: decode `passes[0]` once and write `DIR/frames.bin` (the clips' frames in list
 *   order, `numFrames × height × width × 3` bytes each) and `DIR/pts.json` (each clip's frame times, seconds).
 * - `--mode time`: decode every pass of the list in order; on stdout print one JSON line
 *   `{"event":"start","pass":p}` just before pass `p` starts and `{"event":"end","pass":p,"wall":s,"clips":n,
 *   "frames":f,"decoded":d}` when its last batch is complete (`decoded`: frames the decoder produced, `null`
 *   when the contender cannot tell). A sluice contender may end with `{"event":"stats","bottleneck":b}`, its
 *   loader's verdict. Other output goes to stderr. Exit status 0 on success.
 *
 * Measurement (here, identical for every contender): wall time per pass as the contender reports it (its own
 * monotonic clock); CPU time of the whole process tree (the contender and every descendant — worker processes,
 * a backend child, spawned ffmpegs; a reaped child's time is in its parent's `cutime`), sampled from `/proc` the
 * moment each `start`/`end` line arrives; peak memory of the tree, sampled every 100 ms: the sum of the
 * processes' RSS (shared pages counted once per process) and of their PSS (shared pages split between them).
 * @module
 */

import { parseArgs } from "node:util";
import { psnr } from "../../tests/helpers/decode_oracles.ts";

/** One clip: a time window of one video. */
export interface Clip {
  /** Absolute path of the video. */
  path: string;
  /** The window, seconds: frames start with the one on screen at `start`. */
  start: number;
  end: number;
  label: number;
}

/** The clip list every contender decodes; see the module docs. */
export interface ClipList {
  /** The workload shape that made it (`bench/workload_sets.ts`). */
  shape: string;
  seed: number;
  numFrames: number;
  width: number;
  height: number;
  batchSize: number;
  /** `passes[p]` is the clip list of pass `p` (pass 0 is the warm-up and the verified pass). */
  passes: Clip[][];
  /** How sluice's loader is configured to load exactly these clips (`LoaderOptions` minus per-config options). */
  sluice: Record<string, unknown>;
}

/** The key a contender finds a delivered clip by in the list. */
export function clipKey(path: string, start: number): string {
  return `${path}@${start.toFixed(6)}`;
}

/**
 * Parses a Deno contender's command line: `--clips`, `--mode`, `--out` and the contender's own string options
 * (with defaults); reads the clip list.
 */
export function contenderArgs<K extends string>(
  args: string[],
  own: Record<K, string>,
): { list: ClipList; verify: boolean; out: string | undefined; opts: Record<K, string> } {
  const options: Record<string, { type: "string"; default?: string }> = {
    clips: { type: "string" },
    mode: { type: "string", default: "time" },
    out: { type: "string" },
  };
  for (const [k, v] of Object.entries(own)) options[k] = { type: "string", default: v as string };
  const { values } = parseArgs({ args, options });
  const v = values as Record<string, string | undefined>;
  if (v.clips === undefined) throw new Error("--clips FILE is required");
  if (v.mode !== "time" && v.mode !== "verify") {
    throw new Error(`--mode must be time or verify, got ${v.mode}`);
  }
  if (v.mode === "verify" && v.out === undefined) throw new Error("--mode verify needs --out DIR");
  const opts = Object.fromEntries(Object.keys(own).map((k) => [k, v[k]!])) as Record<K, string>;
  return { list: JSON.parse(Deno.readTextFileSync(v.clips)), verify: v.mode === "verify", out: v.out, opts };
}

/** One pass as a contender reported it, with the harness's CPU samples. */
export interface PassRecord {
  pass: number;
  wall: number;
  clips: number;
  frames: number;
  /** Frames decoded (null: unknown). */
  decoded: number | null;
  /** Process-tree CPU seconds at the pass's start and end lines. */
  cpuStart: number;
  cpuEnd: number;
}

/** What one run of a contender gave. */
export interface RunResult {
  ok: boolean;
  /** Why it failed (exit status, stderr tail), when not ok. */
  error?: string;
  passes: PassRecord[];
  /** Peak over the run, bytes: sum of the tree's RSS, and of its PSS. */
  peakRss: number;
  peakPss: number;
  /** Whole run wall seconds, including start-up. */
  wall: number;
  /** Last lines of stderr (for reports). */
  stderrTail: string;
  /** The loader's bottleneck verdict at the end of the run (sluice contenders), else null. */
  verdict: string | null;
}

/** A sample of a process tree from /proc. */
export interface TreeSample {
  /** utime + stime + cutime + cstime of every live process of the tree, seconds. */
  cpu: number;
  rss: number;
  pss: number;
  processes: number;
}

const CLK_TCK = 100;

function procStat(pid: number): { ppid: number; cpuTicks: number } | null {
  let text: string;
  try {
    text = Deno.readTextFileSync(`/proc/${pid}/stat`);
  } catch {
    return null;
  }
  // Fields after the command name, which may itself hold spaces and parentheses.
  const f = text.slice(text.lastIndexOf(")") + 2).split(" ");
  // f[0] is field 3 (state): ppid is field 4, utime..cstime fields 14..17.
  const n = (i: number) => Number(f[i - 3]);
  return { ppid: n(4), cpuTicks: n(14) + n(15) + n(16) + n(17) };
}

function kbField(text: string, name: string): number {
  const m = text.match(new RegExp(`^${name}:\\s+(\\d+) kB`, "m"));
  return m ? Number(m[1]) * 1024 : 0;
}

/** The pids of `root` and all its live descendants. */
export function processTree(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const e of Deno.readDirSync("/proc")) {
    const pid = Number(e.name);
    if (!Number.isInteger(pid)) continue;
    const s = procStat(pid);
    if (s === null) continue;
    const list = children.get(s.ppid);
    if (list) list.push(pid);
    else children.set(s.ppid, [pid]);
  }
  const out: number[] = [];
  const todo = [root];
  while (todo.length > 0) {
    const p = todo.pop()!;
    out.push(p);
    todo.push(...(children.get(p) ?? []));
  }
  return out;
}

/** CPU and memory of `root`'s process tree now; `memory: false` skips RSS/PSS (cheaper). */
export function sampleTree(root: number, memory = true): TreeSample {
  let ticks = 0, rss = 0, pss = 0, processes = 0;
  for (const pid of processTree(root)) {
    const s = procStat(pid);
    if (s === null) continue;
    processes++;
    ticks += s.cpuTicks;
    if (!memory) continue;
    try {
      rss += kbField(Deno.readTextFileSync(`/proc/${pid}/status`), "VmRSS");
      pss += kbField(Deno.readTextFileSync(`/proc/${pid}/smaps_rollup`), "Pss");
    } catch {
      // exited meanwhile
    }
  }
  return { cpu: ticks / CLK_TCK, rss, pss, processes };
}

/** Options of {@link runContender}. */
export interface RunOptions {
  /** Kill the contender after this long (default 20 minutes). */
  timeoutMs?: number;
  env?: Record<string, string>;
  /** Called with each stderr line (progress); default: kept for the report only. */
  onStderr?: (line: string) => void;
}

/** Runs one contender command to completion; see the module docs for what is measured. */
export async function runContender(cmd: string[], opts: RunOptions = {}): Promise<RunResult> {
  const t0 = performance.now();
  const child = new Deno.Command(cmd[0], {
    args: cmd.slice(1),
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    env: opts.env,
  }).spawn();
  const pid = child.pid;
  let peakRss = 0, peakPss = 0;
  const sample = (memory: boolean) => {
    const s = sampleTree(pid, memory);
    if (memory) {
      peakRss = Math.max(peakRss, s.rss);
      peakPss = Math.max(peakPss, s.pss);
    }
    return s;
  };
  const timer = setInterval(() => sample(true), 100);
  const killer = setTimeout(() => {
    for (const p of processTree(pid).reverse()) {
      try {
        Deno.kill(p, "SIGKILL");
      } catch {
        // gone
      }
    }
  }, opts.timeoutMs ?? 20 * 60_000);
  const passes: PassRecord[] = [];
  const starts = new Map<number, number>();
  const stderrLines: string[] = [];
  let verdict: string | null = null;
  const readStdout = async () => {
    for await (const line of lines(child.stdout)) {
      let ev: Record<string, unknown>;
      try {
        ev = JSON.parse(line);
      } catch {
        stderrLines.push(`(stdout) ${line}`);
        continue;
      }
      if (ev.event === "stats") verdict = String(ev.bottleneck ?? "none stands out");
      else if (ev.event === "start") starts.set(ev.pass as number, sample(false).cpu);
      else if (ev.event === "end") {
        const cpuEnd = sample(false).cpu;
        passes.push({
          pass: ev.pass as number,
          wall: ev.wall as number,
          clips: ev.clips as number,
          frames: ev.frames as number,
          decoded: (ev.decoded as number | null | undefined) ?? null,
          cpuStart: starts.get(ev.pass as number) ?? NaN,
          cpuEnd,
        });
      }
    }
  };
  const readStderr = async () => {
    for await (const line of lines(child.stderr)) {
      stderrLines.push(line);
      if (stderrLines.length > 200) stderrLines.shift();
      opts.onStderr?.(line);
    }
  };
  const [status] = await Promise.all([child.status, readStdout(), readStderr()]);
  clearInterval(timer);
  clearTimeout(killer);
  const stderrTail = stderrLines.slice(-20).join("\n");
  const ok = status.success;
  const result: RunResult = {
    ok,
    passes,
    peakRss,
    peakPss,
    wall: (performance.now() - t0) / 1000,
    stderrTail,
    verdict,
  };
  if (!ok) {
    result.error = `exit ${status.code}${status.signal ? ` (${status.signal})` : ""}: ${
      stderrLines.slice(-8).join(" | ")
    }`;
  }
  return result;
}

async function* lines(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  let buf = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    buf += chunk;
    let nl: number;
    while ((nl = buf.indexOf("\n")) >= 0) {
      yield buf.slice(0, nl);
      buf = buf.slice(nl + 1);
    }
  }
  if (buf.length > 0) yield buf;
}

/** Throughput and cost over the timed passes (all but each run's first, unless it has only one). */
export interface Summary {
  /** Median over timed passes of clips / wall seconds. */
  clipsPerSec: number;
  /** Each timed pass's clips/s. */
  perPass: number[];
  /** Process-tree CPU seconds per clip over the timed passes. */
  cpuPerClip: number;
  /** Decoded / emitted frames over the timed passes (null when the contender cannot tell). */
  amplification: number | null;
  peakRss: number;
  peakPss: number;
  /** Each run's bottleneck verdict, where the contender reports one. */
  verdicts: string[];
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/**
 * Summarises the runs of one contender (one per round): in each, pass 0 is the warm-up and is left out when
 * there are more passes; the timed passes of all runs are pooled.
 */
export function summarise(runs: RunResult[]): Summary {
  const perPass: number[] = [];
  let clips = 0, cpu = 0, frames = 0, decoded = 0, known = true;
  for (const r of runs) {
    const sorted = [...r.passes].sort((a, b) => a.pass - b.pass);
    const timed = sorted.length > 1 ? sorted.slice(1) : sorted;
    if (timed.length === 0) continue;
    perPass.push(...timed.map((p) => p.clips / p.wall));
    clips += timed.reduce((a, p) => a + p.clips, 0);
    cpu += timed[timed.length - 1].cpuEnd - timed[0].cpuStart;
    frames += timed.reduce((a, p) => a + p.frames, 0);
    decoded += timed.reduce((a, p) => a + (p.decoded ?? 0), 0);
    known &&= timed.every((p) => p.decoded !== null);
  }
  return {
    clipsPerSec: perPass.length > 0 ? median(perPass) : NaN,
    perPass,
    cpuPerClip: cpu / clips,
    amplification: known && frames > 0 ? decoded / frames : null,
    peakRss: Math.max(...runs.map((r) => r.peakRss)),
    peakPss: Math.max(...runs.map((r) => r.peakPss)),
    verdicts: runs.flatMap((r) => r.verdict === null ? [] : [r.verdict]),
  };
}

/** The verdict of {@link verifyFrames} for one contender. */
export interface Verification {
  ok: boolean;
  clips: number;
  /** Clips whose frame times differ from the reference, or whose PSNR is below the bound. */
  badPts: number;
  badPsnr: number;
  minPsnr: number;
  medianPsnr: number;
  /** Up to 5 examples of what differed. */
  examples: string[];
}

/** PSNR (dB) a clip must reach against the reference, and the tolerance on frame times (seconds). */
export const PSNR_BOUND = 35;
export const PTS_TOLERANCE = 1e-4;

/** Compares a contender's verify output (`DIR/frames.bin`, `DIR/pts.json`) with the reference's. */
export function verifyFrames(list: ClipList, referenceDir: string, candidateDir: string): Verification {
  const clipBytes = list.numFrames * list.width * list.height * 3;
  const clips = list.passes[0];
  const refPts = JSON.parse(Deno.readTextFileSync(`${referenceDir}/pts.json`)) as number[][];
  const refData = Deno.readFileSync(`${referenceDir}/frames.bin`);
  const v: Verification = {
    ok: false,
    clips: clips.length,
    badPts: 0,
    badPsnr: 0,
    minPsnr: Infinity,
    medianPsnr: NaN,
    examples: [],
  };
  let pts: number[][], data: Uint8Array;
  try {
    pts = JSON.parse(Deno.readTextFileSync(`${candidateDir}/pts.json`)) as number[][];
    data = Deno.readFileSync(`${candidateDir}/frames.bin`);
  } catch (e) {
    v.examples.push(`no verify output: ${e instanceof Error ? e.message : e}`);
    return v;
  }
  if (data.length !== clipBytes * clips.length || pts.length !== clips.length) {
    v.examples.push(
      `expected ${clips.length} clips (${
        clipBytes * clips.length
      } bytes), got ${pts.length} (${data.length} bytes)`,
    );
    return v;
  }
  const psnrs: number[] = [];
  for (const [i, c] of clips.entries()) {
    const where = `${c.path.split("/").slice(-2).join("/")} @ ${c.start.toFixed(3)} s`;
    const a = pts[i], b = refPts[i];
    if (a.length !== b.length || a.some((t, k) => Math.abs(t - b[k]) > PTS_TOLERANCE)) {
      v.badPts++;
      if (v.examples.length < 5) {
        v.examples.push(`${where}: pts ${fmtPts(a)} vs reference ${fmtPts(b)}`);
      }
    }
    const p = psnr(
      data.subarray(i * clipBytes, (i + 1) * clipBytes),
      refData.subarray(i * clipBytes, (i + 1) * clipBytes),
    );
    psnrs.push(p);
    if (p < PSNR_BOUND) {
      v.badPsnr++;
      if (v.examples.length < 5) v.examples.push(`${where}: PSNR ${p.toFixed(1)} dB`);
    }
  }
  v.minPsnr = Math.min(...psnrs);
  v.medianPsnr = median(psnrs);
  v.ok = v.badPts === 0 && v.badPsnr === 0;
  return v;
}

function fmtPts(p: number[]): string {
  const s = (t: number) => t.toFixed(4);
  return p.length <= 3
    ? `[${p.map(s).join(", ")}]`
    : `[${s(p[0])}, ${s(p[1])}, …, ${s(p[p.length - 1])}] (${p.length})`;
}

/** `n` bytes as MiB with one decimal. */
export const mib = (n: number): string => (n / 2 ** 20).toFixed(0);
