/**
 * `sluice tune MODULE`: searches a pipeline's configuration space for the most samples/s, each trial in a fresh
 * subprocess, and writes `trials.jsonl`, `report.md` and SVG plots (see `src/tune/`). Ctrl-C stops the search
 * and writes the report so far (exit 130); `--resume DIR` continues it.
 * @module
 */

import { defineCommand, UsageError } from "../args.ts";
import { print } from "../tty.ts";
import { parseDuration, parseSize } from "../values.ts";

const DEFAULT_BUDGET_SEC = 600;
const MAX_TRIAL_SEC = 20;
/** Trials the default trial length leaves room for: the contention curves and a descent. */
const TRIALS_IN_BUDGET = 24;
/** A trial's cost besides its window: start-up and warm-up, seconds (a guess for the default window). */
const TRIAL_OVERHEAD_SEC = 4;

/** The `tune` command. */
export const tuneCommand = defineCommand({
  name: "tune",
  summary: "find the pipeline configuration with the most samples/s; report, contention curves and plots",
  description: "MODULE exports `tune = defineTuning({ space, create, ... })` (see docs/tuning.md). Each " +
    "trial runs in a fresh subprocess: warm-up, then a measured window. The search measures the start, the " +
    "ceiling (batches replayed from memory), each stage's contention curve (concurrency 1, 2, 4, 8, 16), then " +
    "descends coordinate by coordinate. Writes DIR/trials.jsonl as it goes, and DIR/report.md, DIR/trials.svg " +
    "and DIR/curve-<stage>.svg at the end. Words after -- go to the module's create() as ctx.args.",
  positionals: [{
    name: "MODULE",
    help: "the module to tune (a path or URL), then -- and arguments for it",
    variadic: true,
  }],
  options: {
    budget: {
      type: "string",
      placeholder: "T",
      defaultText: "10m (with --resume: as recorded)",
      help: "time for all trials (10m, 90s, 1h), the recorded ones included when resuming",
    },
    "trial-seconds": {
      type: "number",
      above: 0,
      max: 3600,
      defaultText:
        `${MAX_TRIAL_SEC}, shorter so about ${TRIALS_IN_BUDGET} trials fit the budget (at least 3)`,
      help: "measured window of each trial",
    },
    "warmup-seconds": {
      type: "number",
      min: 0,
      max: 3600,
      defaultText: "a quarter of the trial, 1 to 5",
      help: "warm-up before each window (from the first batch)",
    },
    out: {
      type: "string",
      placeholder: "DIR",
      defaultText: "tune-<module>-<time>",
      help: "output directory",
    },
    resume: { type: "string", placeholder: "DIR", help: "continue the search recorded in DIR" },
    "max-trials": {
      type: "integer",
      min: 1,
      max: 10_000,
      defaultText: "100 (with --resume: as recorded)",
      help: "stop after this many trials",
    },
    patience: {
      type: "integer",
      default: 12,
      min: 1,
      max: 10_000,
      help: "stop after this many trials in a row keep no change",
    },
    repeats: {
      type: "integer",
      default: 2,
      min: 1,
      max: 20,
      help: "measurements of a promising configuration (spread reported)",
    },
    "trial-timeout": {
      type: "number",
      default: 60,
      above: 0,
      max: 86_400,
      help: "seconds a trial may run beyond warm-up and window before it counts as hung",
    },
    "memory-limit": {
      type: "string",
      placeholder: "SIZE",
      defaultText: "half the machine's memory",
      help: "a trial whose processes hold more (RSS) is killed and fails",
    },
  },
  examples: [
    "tune examples/video_classification.ts --budget 5m",
    "tune my_loader.ts --budget 30m --out tune-run -- data/train.csv",
    "tune my_loader.ts --resume tune-run",
  ],
  async run({ values, positionals }) {
    const [module, ...args] = positionals;
    if (values.resume !== undefined && values.out !== undefined && values.out !== values.resume) {
      throw new UsageError("give --out or --resume, not both (--resume DIR writes into DIR)");
    }
    const resume = values.resume !== undefined;
    const given = values.budget === undefined ? undefined : parseDuration("budget", values.budget);
    const budgetSec = given ?? DEFAULT_BUDGET_SEC;
    const measureSec = values["trial-seconds"] ??
      Math.round(Math.min(MAX_TRIAL_SEC, Math.max(3, budgetSec / TRIALS_IN_BUDGET - TRIAL_OVERHEAD_SEC)));
    const warmupSec = values["warmup-seconds"] ?? Math.min(5, Math.max(1, Math.round(measureSec / 4)));
    const memoryLimitBytes = values["memory-limit"] === undefined
      ? undefined
      : parseSize("memory-limit", values["memory-limit"]);
    const out = values.resume ?? values.out ?? defaultOut(module);

    const ac = new AbortController();
    let sigints = 0;
    const onSigint = () => sigints++ === 0 ? ac.abort() : Deno.exit(130);
    Deno.addSignalListener("SIGINT", onSigint);
    try {
      const { tune } = await import("../../tune/tune.ts");
      const { configText } = await import("../../tune/report.ts");
      const { meanOf } = await import("../../tune/search.ts");
      print(
        Deno.stderr,
        resume
          ? `sluice tune: resuming ${out}/`
          : `sluice tune: ${module} → ${out}/ (budget ${values.budget ?? "10m"}, trials of ${warmupSec} s ` +
            `warm-up + ${measureSec} s)`,
      );
      const { result, files } = await tune({
        module,
        args,
        out,
        resume,
        budgetSec: resume ? given : budgetSec,
        measureSec,
        warmupSec,
        maxTrials: values["max-trials"] ?? (resume ? undefined : 100),
        patience: values.patience,
        repeats: values.repeats,
        trialGraceSec: values["trial-timeout"],
        memoryLimitBytes,
        signal: ac.signal,
        log: (line) => print(Deno.stderr, line),
      });
      const best = result.best;
      const lines = [
        best === null
          ? "no trial succeeded"
          : `best: ${configText(result.space, best.config)}: ${meanOf(best).toFixed(1)} samples/s` +
            (result.start.samples.length > 0
              ? ` (start ${meanOf(result.start).toFixed(1)}: ${
                (meanOf(best) / meanOf(result.start)).toFixed(2)
              }×)`
              : ""),
        `stopped: ${result.stopReason}`,
        `wrote ${files.map((f) => `${out}/${f}`).join(", ")}`,
      ];
      print(Deno.stdout, lines.join("\n"));
      if (ac.signal.aborted) return 130;
      return best === null ? 1 : 0;
    } finally {
      Deno.removeSignalListener("SIGINT", onSigint);
    }
  },
});

function defaultOut(module: string): string {
  const name = module.replace(/[?#].*$/, "").split("/").pop()!.replace(/\.[a-z]+$/i, "") || "module";
  const stamp = new Date().toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15);
  return `tune-${name}-${stamp}`;
}
