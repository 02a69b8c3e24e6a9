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

/** Runs a tuning search; see the module docs. */
export async function tune(opts: TuneOptions): Promise<TuneResult> {
  const log = opts.log ?? (() => {});
  const dir = opts.out;
  const module = moduleUrl(opts.module);
  await Deno.mkdir(`${dir}/logs`, { recursive: true });
  const trialsPath = `${dir}/trials.jsonl`, searchPath = `${dir}/search.json`;
  let previous: TrialRecord[] = [];
  let file: SearchFile;
  const subprocess = opts.runner === undefined
    ? new SubprocessRunner({
      module,
      args: opts.args ?? [],
      graceSec: opts.trialGraceSec ?? 60,
      memoryLimitBytes: opts.memoryLimitBytes ?? defaultMemoryLimit(),
      logDir: `${dir}/logs`,
      signal: opts.signal,
    })
    : null;
  if (opts.resume) {
    file = await readSearchFile(searchPath);
    if (file.module !== module) {
      throw new InvalidArgumentError(`${dir} holds a search of ${file.module}, not of ${module}`);
    }
    if (opts.budgetSec !== undefined) file.options.budgetSec = opts.budgetSec;
    if (opts.maxTrials !== undefined) file.options.maxTrials = opts.maxTrials;
    previous = await readTrials(trialsPath);
    log(`resuming: ${previous.length} trial(s) recorded in ${trialsPath}`);
  } else {
    if (await exists(trialsPath) && (await Deno.readTextFile(trialsPath)).trim() !== "") {
      throw new InvalidArgumentError(
        `${dir} already holds a search (trials.jsonl): resume it or choose another --out`,
      );
    }
    let space: SearchSpace, start: Config;
    if (subprocess !== null) {
      log(`reading the search space of ${opts.module}`);
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
    file = {
      module,
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
    await Deno.writeTextFile(searchPath, JSON.stringify(file, null, 2) + "\n");
    await Deno.writeTextFile(trialsPath, "");
  }

  const runner = new ReplayRunner(previous, opts.runner ?? subprocess!, file.space);
  const result = await search(
    file.space,
    file.start,
    runner,
    { ...file.options, signal: opts.signal },
    (r, s) => {
      if (!runner.replayed(r.id)) {
        Deno.writeTextFileSync(trialsPath, JSON.stringify(r) + "\n", {
          append: true,
        });
      }
      log(progressLine(r, s.best, s.spentSec, file.options.budgetSec, runner.replayed(r.id)));
    },
  );

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
  return { result, dir, files };
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
