/**
 * The fuzzer: `deno task fuzz [--cases N] [--seed S] [--start K] [--case I,J,...] [--workers W]
 * [--deadline-ms MS] [--memory-mib MIB] [--save DIR] [--quiet]`.
 *
 * Runs cases `K .. K+N-1` of run `S` (see cases.ts) over the real files of ../shared/media (when present) and
 * generated clips in every container the dataset accepts, in a pool of `W` long-lived child processes
 * (child.ts). Each case has its own deadline and its process a memory cap (an RSS watchdog: `ulimit -v` cannot
 * be used, V8 reserves tens of GiB of address space up front); a case whose process crashes, outlives the
 * deadline or outgrows the cap fails, the process is replaced, and the run goes on. A case passes when it
 * returns frames (or packets, or stream info) or throws a typed `SluiceError`; an untyped JS error or a broken
 * invariant of the result fails it. Failures print the command that replays them (with the cases the same
 * process ran just before, in case state carried over) and are saved under `--save` (default .cache/fuzz) as
 * JSON plus the mutated bytes: small ones become regression fixtures in tests/fixtures/fuzz/.
 * @module
 */
import { generateClip, hasFfmpegCliSync, SHARED_MEDIA_DIR, sharedMediaAvailable } from "../helpers/media.ts";
import { probe } from "../../src/media/probe.ts";
import { applyOps } from "./mutate.ts";
import { type FuzzCase, type FuzzInput, itemSource, makeCase, type Outcome, packetsSource } from "./cases.ts";
import { type ClipTally, firstBlob, withFirstBlob } from "./clip_cases.ts";
import { knownBug } from "./known.ts";

/** Options of {@link runFuzz}. */
export interface FuzzOptions {
  seed: number;
  /** Case indices to run, in order. */
  indices: number[];
  workers?: number;
  deadlineMs?: number;
  memoryMiB?: number;
  /** Where failures are saved (default `.cache/fuzz`); null to save nothing. */
  save?: string | null;
  /** Progress and failure lines (default console.error). */
  log?: (line: string) => void;
}

/** A failed case. */
export interface FuzzFailure {
  index: number;
  kind: "crash" | "hang" | "memory" | "untyped" | "invariant";
  detail: string;
  /** The command that replays it. */
  replay: string;
  /** The case, when it could be rebuilt. */
  fuzzCase?: FuzzCase;
}

/** What a run did. */
export interface FuzzSummary {
  seed: number;
  cases: number;
  ok: number;
  typed: number;
  failures: FuzzFailure[];
  /** Failures matching an open bug of known.ts: reported, not failing the run. */
  known: (FuzzFailure & { issue: string })[];
  /** Cases per operation and outcome ("decode ok", "probe typed", ...), and typed errors per class. */
  byKind: Record<string, number>;
  typedByClass: Record<string, number>;
  /**
   * The clip cases together: clips delivered (each checked: in order, in its window) and their frames, clips
   * failed, by error class.
   */
  clips: ClipTally;
  inputs: string[];
  elapsedMs: number;
}

/** Generated clips: every container the dataset accepts, small, with B-frames where the codec has them. */
const CLIPS = [
  { container: "mp4", codec: "libx264", bframes: 2 },
  { container: "mp4", codec: "libx265" },
  { container: "mov", codec: "libx264", pixFmt: "yuv422p" },
  { container: "mkv", codec: "libx264", pixFmt: "yuv420p10le", bframes: 2 },
  { container: "mkv", codec: "libvpx-vp9" },
  { container: "webm", codec: "libvpx-vp9" },
  { container: "webm", codec: "libvpx" },
  { container: "avi", codec: "mpeg4", bframes: 1 },
  { container: "avi", codec: "mjpeg", pixFmt: "yuvj420p" },
  { container: "ts", codec: "mpeg2video" },
  { container: "ts", codec: "libx264", bframes: 2 },
  { container: "flv", codec: "flv" },
  { container: "flv", codec: "libx264" },
  { container: "mpg", codec: "mpeg2video" },
  { container: "mpg", codec: "mpeg1video" },
];

/** The run's inputs, in a fixed order (a replay needs the same list: the shared media present or not). */
export async function prepareInputs(): Promise<FuzzInput[]> {
  const inputs: FuzzInput[] = [];
  const duration = async (path: string) => {
    try {
      return (await probe(path)).durationSec ?? 1;
    } catch {
      return 1;
    }
  };
  if (hasFfmpegCliSync()) {
    for (const c of CLIPS) {
      const path = await generateClip({ ...c, width: 96, height: 64, fps: 25, durationSec: 1, gop: 8 });
      inputs.push({ name: `clip:${c.container}-${c.codec}`, path, durationSec: await duration(path) });
    }
  }
  if (sharedMediaAvailable()) {
    for (const e of [...Deno.readDirSync(SHARED_MEDIA_DIR)].map((e) => e.name).sort()) {
      if (!/\.(mp4|mkv|mov|webm|avi|ts|flv|mpg)$/.test(e)) continue;
      const path = `${SHARED_MEDIA_DIR}${e}`;
      inputs.push({ name: `shared:${e}`, path, durationSec: await duration(path) });
    }
  }
  return inputs;
}

const CHILD = new URL("./child.ts", import.meta.url).pathname;
const STDERR_TAIL = 12;

interface Slot {
  proc: Deno.ChildProcess;
  writer: WritableStreamDefaultWriter<Uint8Array>;
  current: { index: number; timer: ReturnType<typeof setTimeout>; failed: boolean } | undefined;
  history: number[];
  stderr: string[];
  exited: Promise<void>;
}

/** Runs the cases; see the module docs. Resolves with the summary; never throws for a failing case. */
export async function runFuzz(opts: FuzzOptions): Promise<FuzzSummary> {
  const log = opts.log ?? ((l: string) => console.error(l));
  const workers = opts.workers ?? Math.max(1, navigator.hardwareConcurrency);
  const deadlineMs = opts.deadlineMs ?? 20_000;
  const memoryBytes = (opts.memoryMiB ?? 2048) * 1024 * 1024;
  const save = opts.save === undefined ? ".cache/fuzz" : opts.save;
  const inputs = await prepareInputs();
  if (inputs.length === 0) throw new Error("fuzz: no inputs (neither the ffmpeg CLI nor ../shared/media)");
  const config = await Deno.makeTempFile({ prefix: "sluice-fuzz-", suffix: ".json" });
  await Deno.writeTextFile(config, JSON.stringify({ seed: opts.seed, inputs }));
  const t0 = performance.now();
  const summary: FuzzSummary = {
    seed: opts.seed,
    cases: 0,
    ok: 0,
    typed: 0,
    failures: [],
    known: [],
    byKind: {},
    typedByClass: {},
    clips: { delivered: 0, frames: 0, failed: 0, failedBy: {} },
    inputs: inputs.map((i) => i.name),
    elapsedMs: 0,
  };
  const queue = [...opts.indices];
  const saving: Promise<void>[] = [];
  const slots = new Set<Slot>();
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => finish = resolve);

  const fail = (slot: Slot, kind: FuzzFailure["kind"], detail: string) => {
    const index = slot.current!.index;
    const before = slot.history.slice(-6, -1);
    const replay = `deno task fuzz --seed ${opts.seed} --case ${[...before, index].join(",")}` +
      (before.length > 0 ? ` (or --case ${index} alone)` : "");
    const f: FuzzFailure = { index, kind, detail, replay, fuzzCase: rebuild(index) };
    const known = knownBug(detail, kind, f.fuzzCase);
    if (known !== undefined) {
      summary.known.push({ ...f, issue: known.issue });
      log(`fuzz: case ${index} hit a known bug (${known.issue})\n  replay: ${replay}`);
    } else {
      summary.failures.push(f);
      log(`fuzz: FAILED case ${index} (${kind}): ${detail.split("\n")[0]}\n  replay: ${replay}`);
    }
    saving.push(saveFailure(f));
  };

  // The parent rebuilds a failed case (the same pure function of seed and index) to report and save it.
  const bytesOf = (i: FuzzInput) => Deno.readFileSync(i.path);
  const src = { inputs, bytesOf, packetsOf: packetsSource(bytesOf), itemOf: itemSource(bytesOf) };
  const rebuild = (index: number): FuzzCase | undefined => {
    try {
      return makeCase(opts.seed, index, src);
    } catch (e) {
      log(`fuzz: could not rebuild case ${index}: ${e}`);
      return undefined;
    }
  };

  const saveFailure = async (f: FuzzFailure) => {
    try {
      if (save === null || f.fuzzCase === undefined) return;
      await Deno.mkdir(save, { recursive: true });
      const input = inputs.find((i) => i.name === f.fuzzCase!.input)!;
      const c = f.fuzzCase;
      // What the ops damage: the file, its serialized packets, or the packets blob of a clip item.
      let bytes: Uint8Array;
      if (c.kind === "clip-packets") {
        const item = src.itemOf(input, c.clip!);
        bytes = withFirstBlob(item, applyOps(firstBlob(item), c.ops));
      } else bytes = applyOps(c.kind === "packets" ? src.packetsOf(input, c.demux!) : bytesOf(input), c.ops);
      const base = `${save}/${opts.seed}-${f.index}`;
      await Deno.writeFile(`${base}.bin`, bytes);
      await Deno.writeTextFile(`${base}.json`, JSON.stringify({ ...f, inputs: summary.inputs }, null, 2));
    } catch (e) {
      log(`fuzz: could not save case ${f.index}: ${e}`);
    }
  };

  /** The slot's current case is over (counted); the slot takes no new case here. */
  const settle = (slot: Slot) => {
    clearTimeout(slot.current?.timer);
    slot.current = undefined;
    summary.cases++;
    if (summary.cases % 500 === 0) {
      const s = (performance.now() - t0) / 1000;
      log(
        `fuzz: ${summary.cases}/${opts.indices.length} cases, ${summary.failures.length} failed, ${
          s.toFixed(0)
        } s`,
      );
    }
  };

  const dispatch = (slot: Slot) => {
    const index = queue.shift();
    if (index === undefined) {
      slot.writer.close().catch(() => {});
      return;
    }
    const timer = setTimeout(() => {
      if (slot.current?.index !== index) return;
      slot.current.failed = true;
      fail(slot, "hang", `no outcome within ${deadlineMs} ms`);
      kill(slot);
    }, deadlineMs);
    slot.current = { index, timer, failed: false };
    slot.history.push(index);
    slot.writer.write(new TextEncoder().encode(`${index}\n`)).catch(() => {});
  };

  const kill = (slot: Slot) => {
    try {
      slot.proc.kill("SIGKILL");
    } catch { /* already gone */ }
  };

  const onResult = (slot: Slot, line: string) => {
    const r = JSON.parse(line) as Outcome & { index: number; kind: string };
    if (slot.current?.index !== r.index) return;
    const key = `${r.kind} ${r.status}`;
    summary.byKind[key] = (summary.byKind[key] ?? 0) + 1;
    if (r.clips !== undefined) {
      const t = summary.clips;
      t.delivered += r.clips.delivered;
      t.frames += r.clips.frames;
      t.failed += r.clips.failed;
      for (const [k, v] of Object.entries(r.clips.failedBy)) t.failedBy[k] = (t.failedBy[k] ?? 0) + v;
    }
    if (r.status === "ok") summary.ok++;
    else if (r.status === "typed") {
      summary.typed++;
      const cls = r.detail.split(":")[0];
      summary.typedByClass[cls] = (summary.typedByClass[cls] ?? 0) + 1;
    } else fail(slot, r.status, r.detail);
    settle(slot);
    dispatch(slot);
  };

  const start = () => {
    const proc = new Deno.Command(Deno.execPath(), {
      args: ["run", "--quiet", "-A", "--v8-flags=--max-old-space-size=1024", CHILD, config],
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const slot: Slot = {
      proc,
      writer: proc.stdin.getWriter(),
      current: undefined,
      history: [],
      stderr: [],
      exited: Promise.resolve(),
    };
    slots.add(slot);
    const lines = async (stream: ReadableStream<Uint8Array>, each: (l: string) => void) => {
      let rest = "";
      for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
        rest += chunk;
        let nl;
        while ((nl = rest.indexOf("\n")) >= 0) {
          each(rest.slice(0, nl));
          rest = rest.slice(nl + 1);
        }
      }
      if (rest) each(rest);
    };
    const out = lines(proc.stdout, (l) => {
      if (l.startsWith("R ")) onResult(slot, l.slice(2));
    });
    const err = lines(proc.stderr, (l) => {
      slot.stderr.push(l);
      if (slot.stderr.length > STDERR_TAIL) slot.stderr.shift();
    });
    slot.exited = Promise.all([out, err, proc.status]).then(([, , status]) => {
      slots.delete(slot);
      if (slot.current !== undefined) {
        if (!slot.current.failed) {
          const how = status.signal ? `killed by ${status.signal}` : `exited with code ${status.code}`;
          fail(slot, "crash", `the process ${how}; stderr: ${slot.stderr.join(" | ")}`);
        }
        settle(slot);
      }
      if (queue.length > 0) dispatch(start()); // a fresh process takes the next case
      else if (slots.size === 0) finish();
    });
    return slot;
  };

  // Memory: an RSS watchdog on every process.
  const watchdog = setInterval(() => {
    for (const slot of slots) {
      if (slot.current === undefined || slot.current.failed) continue;
      const rss = rssBytes(slot.proc.pid);
      if (rss > memoryBytes) {
        slot.current.failed = true;
        fail(
          slot,
          "memory",
          `RSS ${(rss / 2 ** 20).toFixed(0)} MiB over the cap of ${memoryBytes / 2 ** 20} MiB`,
        );
        kill(slot);
      }
    }
  }, 100);

  try {
    if (queue.length === 0) finish();
    for (let w = 0; w < Math.min(workers, queue.length); w++) dispatch(start());
    await finished;
  } finally {
    clearInterval(watchdog);
    for (const slot of slots) kill(slot);
    await Promise.all([...slots].map((s) => s.exited));
    await Promise.all(saving);
    await Deno.remove(config).catch(() => {});
  }
  summary.elapsedMs = performance.now() - t0;
  return summary;
}

/** The resident memory of process `pid` in bytes (0 once it is gone). */
export function rssBytes(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(Deno.readTextFileSync(`/proc/${pid}/status`));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** The summary as a few lines of text. */
export function formatSummary(s: FuzzSummary): string {
  const rate = s.cases / (s.elapsedMs / 1000);
  const classes = Object.entries(s.typedByClass).map(([k, v]) => `${k} ${v}`).join(", ");
  return [
    `fuzz: seed ${s.seed}: ${s.cases} cases in ${(s.elapsedMs / 1000).toFixed(1)} s (${
      rate.toFixed(1)
    }/s) over ` +
    `${s.inputs.length} inputs`,
    `  frames/results ${s.ok}, typed errors ${s.typed} (${classes}), failures ${s.failures.length}, ` +
    `known open bugs hit ${s.known.length}`,
    `  by operation: ${Object.entries(s.byKind).sort().map(([k, v]) => `${k} ${v}`).join(", ")}`,
    `  loader clips: ${s.clips.delivered} delivered (${s.clips.frames} frames, each in order and in its ` +
    `window), ${s.clips.failed} failed (${
      Object.entries(s.clips.failedBy).sort().map(([k, v]) => `${k} ${v}`).join(", ")
    })`,
    ...s.failures.map((f) => `  FAILED case ${f.index} (${f.kind}): replay: ${f.replay}`),
    ...s.known.map((f) => `  known bug, case ${f.index}: ${f.issue}; replay: ${f.replay}`),
  ].join("\n");
}

function parseArgs(args: string[]): FuzzOptions & { quiet: boolean } {
  const get = (name: string) => {
    const i = args.indexOf(`--${name}`);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const seed = Number(get("seed") ?? Math.floor(Math.random() * 2 ** 31));
  const cases = Number(get("cases") ?? 1000);
  const first = Number(get("start") ?? 0);
  const list = get("case");
  const indices = list !== undefined
    ? list.split(",").map(Number)
    : Array.from({ length: cases }, (_, i) => first + i);
  const num = (name: string) => get(name) === undefined ? undefined : Number(get(name));
  const save = get("save");
  return {
    seed,
    indices,
    workers: num("workers"),
    deadlineMs: num("deadline-ms"),
    memoryMiB: num("memory-mib"),
    ...(save !== undefined ? { save } : {}),
    quiet: args.includes("--quiet"),
  };
}

if (import.meta.main) {
  const opts = parseArgs(Deno.args);
  if (opts.quiet) opts.log = () => {};
  console.error(`fuzz: seed ${opts.seed}, ${opts.indices.length} cases`);
  const summary = await runFuzz(opts);
  console.log(formatSummary(summary));
  Deno.exit(summary.failures.length === 0 ? 0 : 1);
}
