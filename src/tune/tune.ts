/**
 * `tune()`: the whole of `sluice tune` as a function. It reads the module's search space (in a subprocess),
 * runs the search (`search.ts`) with each trial in a fresh subprocess (`runner.ts`), appends every trial to
 * `DIR/trials.jsonl` as it finishes, and at the end writes `DIR/report.md`, the SVG plots and `DIR/best.json`
 * (the best configuration, its mean samples/s and its measurements, for scripts).
 *
 * `resume: true` continues a search that was killed: the search is deterministic given its measurements, so it
 * is run again from the start, taking each trial it asks for from `trials.jsonl` when that trial was recorded
 * (same kind, same configuration, same occurrence) and running only the rest. The budget counts the recorded
 * trials' time too.
 * @module
 */

import { InvalidArgumentError } from "../errors.ts";
import { writePlots } from "./plots.ts";
import { reportMarkdown } from "./report.ts";
import { SubprocessRunner, type TrialOutcome, type TrialRequest, type TrialRunner } from "./runner.ts";
import {
  type Evaluated,
  meanOf,
  search,
  type SearchOptions,
  type SearchResult,
  type TrialRecord,
} from "./search.ts";
import { checkSpace, type Config, configKey, type SearchSpace, startConfig } from "./space.ts";

/**
 * Options of {@link tune}. The search options are required for a new search; when resuming, the recorded ones
 * apply, except `budgetSec` and `maxTrials` when given.
 */
export interface TuneOptions extends Partial<SearchOptions> {
  /** The module: a path (relative to the working directory) or a URL. */
  module: string;
  /** `ctx.args` for the module's `create`. */
  args?: readonly string[];
  /** Output directory (created). */
  out: string;
  /** Continue the search recorded in `out`. */
  resume?: boolean;
  /** Seconds a trial may take beyond warm-up and window before it counts as hung (default 60). */
  trialGraceSec?: number;
  /** RSS limit of a trial's process tree, bytes (default: half the machine's memory). */
  memoryLimitBytes?: number;
  /** Draw the SVG plots (default true). */
  plots?: boolean;
  /** Progress lines (default: none). */
  log?: (line: string) => void;
  /**
   * Runs the trials instead of subprocesses (tests, simulations); `space` (and `start`) must then be given, as
   * the module is not imported.
   */
  runner?: TrialRunner;
  /** The search space (with `runner` only). */
  space?: SearchSpace;
  /** Where the search starts (with `runner` only). */
  start?: Partial<Config>;
}

/** What {@link tune} produced. */
export interface TuneResult {
  /** What the search found. */
  result: SearchResult;
  /** The output directory and the files written there. */
  dir: string;
  /** The files written, relative to `dir`. */
  files: string[];
}

/** What `search.json` keeps so `--resume` runs the same search. */
interface SearchFile {
  module: string;
  args: string[];
  space: SearchSpace;
  start: Config;
  options: SearchOptions;
  startedAt: string;
}

/** One `tune()` call: its options, output directory and files, the module as a URL, and where progress goes. */
interface TuneRun {
  opts: TuneOptions;
  dir: string;
  module: string;
  trialsPath: string;
  searchPath: string;
  log: (line: string) => void;
}

/**
 * Runs a tuning search, `sluice tune` as a function. It reads the search space and start configuration of the
 * module's {@link defineTuning} target (in a subprocess, or `space` and `start` with a custom `runner`), runs
 * each trial in a fresh subprocess (its crash, hang or leak costs that trial only), measures the start, the
 * ceiling (batches replayed from memory), each stage's contention curve, then descends coordinate by coordinate,
 * keeping a change only when it beats the noise; it stops at the budget, at `maxTrials`, after `patience` trials
 * without a kept change, when a pass keeps nothing, or when `signal` aborts.
 *
 * Into `out` it writes `search.json` (what `resume` needs), `trials.jsonl` (every trial, appended as it
 * finishes), `logs/` (each trial's output), and at the end `report.md`, the SVG plots and `best.json` (the best
 * configuration, its mean samples/s and its measurements). With `resume: true` a killed search continues: it is
 * run again from the start, each trial it asks for taken from `trials.jsonl` when recorded (same kind,
 * configuration and occurrence), only the rest run; the budget counts the recorded trials' time too.
 * @param opts the module and its `args`, the output directory `out`, the budget, warm-up and measured window in
 * seconds (required for a new search), the search's limits and the trials' time and memory limits
 * ({@link TuneOptions})
 * @returns the search's result (best configuration, kept and rejected changes, curves, every trial), the output
 * directory and the files written there (relative to it)
 * @throws {InvalidArgumentError} when `out` already holds a search and `resume` is not set, when resuming finds
 * no readable `search.json` or one of another module, when a new search lacks `budgetSec`, `measureSec` or
 * `warmupSec`, when a custom `runner` comes without `space`, when the module's search space is malformed or
 * cannot be read, or when a line of `trials.jsonl` other than the last is not a trial record
 * @example Tune a module's loader for five minutes and keep the best configuration
 * ```ts
 * import { tune } from "@sluice/sluice/tune";
 *
 * const { result, dir, files } = await tune({
 *   module: "my_loader.ts", // exports `tune = defineTuning({...})`
 *   args: ["data/train.csv"], // the module's ctx.args
 *   out: "tune-run",
 *   budgetSec: 300,
 *   measureSec: 5,
 *   warmupSec: 2,
 *   log: console.log,
 * });
 * if (result.best !== null) console.log(result.best.config, `${dir}/report.md`, files);
 * ```
 */
export async function tune(opts: TuneOptions): Promise<TuneResult> {
  const dir = opts.out;
  const run: TuneRun = {
    opts,
    dir,
    module: moduleUrl(opts.module),
    trialsPath: `${dir}/trials.jsonl`,
    searchPath: `${dir}/search.json`,
    log: opts.log ?? (() => {}),
  };
  await Deno.mkdir(`${dir}/logs`, { recursive: true });
  const subprocess = opts.runner === undefined
    ? new SubprocessRunner({
      module: run.module,
      args: opts.args ?? [],
      graceSec: opts.trialGraceSec ?? 60,
      memoryLimitBytes: opts.memoryLimitBytes ?? defaultMemoryLimit(),
      logDir: `${dir}/logs`,
      signal: opts.signal,
    })
    : null;
  const { file, previous } = opts.resume
    ? await recordedSearch(run)
    : { file: await newSearch(run, subprocess), previous: [] };

  const runner = new ReplayRunner(previous, opts.runner ?? subprocess!, file.space);
  const result = await search(
    file.space,
    file.start,
    runner,
    { ...file.options, signal: opts.signal },
    (r, s) => {
      if (!runner.replayed(r.id)) {
        Deno.writeTextFileSync(run.trialsPath, JSON.stringify(r) + "\n", {
          append: true,
        });
      }
      run.log(progressLine(r, s.best, s.spentSec, file.options.budgetSec, runner.replayed(r.id)));
    },
  );
  return { result, dir, files: await writeResults(run, file, result) };
}

/**
 * The search recorded in the output directory, for `resume`: its `search.json` (with `budgetSec` and
 * `maxTrials` replaced when given) and the trials of its `trials.jsonl`.
 * @throws {InvalidArgumentError} when `search.json` is unreadable or belongs to another module
 */
async function recordedSearch(run: TuneRun): Promise<{ file: SearchFile; previous: TrialRecord[] }> {
  const { opts, module, dir } = run;
  const file = await readSearchFile(run.searchPath);
  if (file.module !== module) {
    throw new InvalidArgumentError(`${dir} holds a search of ${file.module}, not of ${module}`);
  }
  if (opts.budgetSec !== undefined) file.options.budgetSec = opts.budgetSec;
  if (opts.maxTrials !== undefined) file.options.maxTrials = opts.maxTrials;
  const previous = await readTrials(run.trialsPath);
  run.log(`resuming: ${previous.length} trial(s) recorded in ${run.trialsPath}`);
  return { file, previous };
}

/**
 * Starts a new search: reads the space and start (from the module through `subprocess`, else the options),
 * writes `search.json` and an empty `trials.jsonl`.
 * @throws {InvalidArgumentError} when the directory holds a search already, the space is missing or malformed,
 * or a required search option is missing
 */
async function newSearch(run: TuneRun, subprocess: SubprocessRunner | null): Promise<SearchFile> {
  const { opts, dir } = run;
  if (await exists(run.trialsPath) && (await Deno.readTextFile(run.trialsPath)).trim() !== "") {
    throw new InvalidArgumentError(
      `${dir} already holds a search (trials.jsonl): resume it or choose another --out`,
    );
  }
  let space: SearchSpace, start: Config;
  if (subprocess !== null) {
    run.log(`reading the search space of ${opts.module}`);
    ({ space, start } = await subprocess.describe());
  } else {
    if (opts.space === undefined) throw new InvalidArgumentError("tune: a custom runner needs `space`");
    space = opts.space;
    start = startConfig(space, opts.start);
  }
  checkSpace(space);
  const { budgetSec, measureSec, warmupSec, maxTrials, patience, minGain, repeats, curvePoints, ceiling } =
    opts;
  if (budgetSec === undefined || measureSec === undefined || warmupSec === undefined) {
    throw new InvalidArgumentError(
      "tune: budgetSec, measureSec and warmupSec are required for a new search",
    );
  }
  const file: SearchFile = {
    module: run.module,
    args: [...(opts.args ?? [])],
    space,
    start,
    options: {
      budgetSec,
      measureSec,
      warmupSec,
      maxTrials,
      patience,
      minGain,
      repeats,
      curvePoints,
      ceiling,
    },
    startedAt: new Date().toISOString(),
  };
  await Deno.writeTextFile(run.searchPath, JSON.stringify(file, null, 2) + "\n");
  await Deno.writeTextFile(run.trialsPath, "");
  return file;
}

/** Writes the plots, `report.md` and `best.json` (when a trial succeeded); returns every file of the run. */
async function writeResults(run: TuneRun, file: SearchFile, result: SearchResult): Promise<string[]> {
  const { opts, dir } = run;
  const files = ["search.json", "trials.jsonl"];
  const plots = opts.plots === false ? [] : await writePlots(dir, result);
  const report = reportMarkdown(result, {
    module: opts.module,
    space: file.space,
    budgetSec: file.options.budgetSec,
    warmupSec: file.options.warmupSec,
    measureSec: file.options.measureSec,
    plots,
    startedAt: file.startedAt,
  });
  await Deno.writeTextFile(`${dir}/report.md`, report);
  files.push("report.md", ...plots);
  if (result.best !== null) {
    const best = {
      config: result.best.config,
      samplesPerSec: meanOf(result.best),
      measurements: result.best.samples,
    };
    await Deno.writeTextFile(`${dir}/best.json`, JSON.stringify(best, null, 2) + "\n");
    files.push("best.json");
  }
  return files;
}

/** Takes each trial from a previous run's records when there is one, else runs it. */
class ReplayRunner implements TrialRunner {
  readonly #recorded = new Map<string, TrialRecord[]>();
  readonly #inner: TrialRunner;
  readonly #space: SearchSpace;
  readonly #replayed = new Set<number>();

  constructor(records: TrialRecord[], inner: TrialRunner, space: SearchSpace) {
    for (const r of records) {
      const k = `${r.kind}|${r.key}`;
      this.#recorded.set(k, [...(this.#recorded.get(k) ?? []), r]);
    }
    this.#inner = inner;
    this.#space = space;
  }

  replayed(id: number): boolean {
    return this.#replayed.has(id);
  }

  run(req: TrialRequest): Promise<TrialOutcome> {
    const r = this.#recorded.get(`${req.kind}|${configKey(this.#space, req.config)}`)?.shift();
    if (r === undefined) return this.#inner.run(req);
    this.#replayed.add(req.id);
    const { status, metrics, reason, wallSec, stderrTail, peakTreeRssBytes } = r;
    return Promise.resolve({ status, metrics, reason, wallSec, stderrTail, peakTreeRssBytes });
  }
}

/** The records of `trials.jsonl`; a line cut short by a kill (the last) is dropped and the file trimmed. */
export async function readTrials(path: string): Promise<TrialRecord[]> {
  if (!await exists(path)) return [];
  const lines = (await Deno.readTextFile(path)).split("\n").filter((l) => l.trim() !== "");
  const records: TrialRecord[] = [];
  for (const [i, line] of lines.entries()) {
    try {
      records.push(JSON.parse(line) as TrialRecord);
    } catch {
      if (i !== lines.length - 1) throw new InvalidArgumentError(`${path}:${i + 1}: not a JSON trial record`);
      await Deno.writeTextFile(path, records.map((r) => JSON.stringify(r) + "\n").join(""));
    }
  }
  return records;
}

async function readSearchFile(path: string): Promise<SearchFile> {
  try {
    return JSON.parse(await Deno.readTextFile(path)) as SearchFile;
  } catch (e) {
    throw new InvalidArgumentError(
      `cannot resume: ${path} is missing or unreadable (${(e as Error).message})`,
    );
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}

/** A path (relative to the working directory) or URL, as a URL. */
export function moduleUrl(module: string): string {
  if (/^(https?|file):\/\//.test(module)) return module;
  const abs = module.startsWith("/") ? module : `${Deno.cwd()}/${module}`;
  return new URL(`file://${abs.split("/").map(encodeURIComponent).join("/")}`).href;
}

/** Half the machine's memory (8 GiB when unknown). */
function defaultMemoryLimit(): number {
  try {
    const m = Deno.readTextFileSync("/proc/meminfo").match(/^MemTotal:\s+(\d+) kB/m);
    if (m) return Number(m[1]) * 1024 / 2;
  } catch {
    // not Linux
  }
  return 8 * 2 ** 30;
}

function progressLine(
  r: TrialRecord,
  best: Evaluated | null,
  spent: number,
  budget: number,
  replayed: boolean,
) {
  const what = `${String(r.id).padStart(3)} ${r.phase.padEnd(7)} ${r.note.padEnd(28)}`;
  const clock = `${fmtClock(spent)}/${fmtClock(budget)}`;
  const tag = replayed ? " (recorded)" : "";
  if (r.status !== "ok") return `trial ${what} FAILED ${r.reason}  ${clock}${tag}`;
  const bestText = best === null ? "" : `  best ${Math.round(meanOf(best))}`;
  return `trial ${what} ${
    r.metrics!.samplesPerSec.toFixed(1).padStart(9)
  } samples/s${bestText}  ${clock}${tag}`;
}

function fmtClock(sec: number): string {
  const s = Math.round(sec);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
}
