/**
 * The trial subprocess: reads one {@link TrialJob} (JSON) from stdin, imports the module, and writes a
 * {@link TrialReply} to `job.resultPath`. `"describe"` reports the module's search space and start; the other
 * kinds measure one configuration (see `measure.ts`). Its own stdout and stderr are the module's: the tuner
 * keeps them with the trial.
 * @module
 */

import { errorText, InvalidArgumentError } from "../errors.ts";
import { measureTrial, type TrialMetrics } from "./measure.ts";
import { checkSpace, checkValue, type Config, type SearchSpace, startConfig } from "./space.ts";
import type { TuneTarget } from "./target.ts";

/** What the tuner asks of a trial subprocess. */
export interface TrialJob {
  /** The module's URL. */
  module: string;
  /** Arguments for the module's `create` (`ctx.args`). */
  args: string[];
  kind: "describe" | "measure" | "ceiling";
  config?: Config;
  warmupSec?: number;
  measureSec?: number;
  /** Where the reply goes (stdout belongs to the module). */
  resultPath: string;
}

/** A trial subprocess's answer. */
export type TrialReply =
  | { ok: true; metrics: TrialMetrics }
  | { ok: true; space: SearchSpace; start: Config }
  | { ok: false; reason: string };

/** The module's tuning target: its `tune` export, else its default export, checked. */
export async function loadTarget(url: string): Promise<TuneTarget> {
  const mod = await import(url);
  const target = (mod.tune ?? mod.default) as TuneTarget | undefined;
  if (typeof target !== "object" || target === null || typeof target.create !== "function") {
    throw new InvalidArgumentError(
      `${url} exports no tuning target: export \`tune\` (or a default) made with defineTuning({ space, create })`,
    );
  }
  checkSpace(target.space);
  return target;
}

async function run(job: TrialJob): Promise<TrialReply> {
  const target = await loadTarget(job.module);
  if (job.kind === "describe") {
    const space = JSON.parse(JSON.stringify(target.space)) as SearchSpace;
    return { ok: true, space, start: startConfig(space, target.start as Partial<Config>) };
  }
  const config = job.config ?? {};
  for (const [name, p] of Object.entries(target.space)) checkValue(`config.${name}`, p, config[name]);
  const metrics = await measureTrial(target, config, {
    kind: job.kind,
    warmupSec: job.warmupSec ?? 2,
    measureSec: job.measureSec ?? 10,
    args: job.args,
  });
  return { ok: true, metrics };
}

/** The parent's pid now (0 when /proc cannot say): a trial whose tuner died is re-parented. */
function parentPid(): number {
  try {
    const stat = Deno.readTextFileSync("/proc/self/stat");
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    return 0;
  }
}

if (import.meta.main) {
  // A killed tuner leaves no trial behind to compete with the next one (or with a resumed search).
  const parent = parentPid();
  Deno.unrefTimer(setInterval(() => parent !== parentPid() && Deno.exit(1), 1000));
  const job = JSON.parse(await new Response(Deno.stdin.readable).text()) as TrialJob;
  let reply: TrialReply;
  try {
    reply = await run(job);
  } catch (e) {
    console.error(e); // the stack goes to the trial's kept stderr
    reply = { ok: false, reason: errorText(e) };
  }
  Deno.writeTextFileSync(job.resultPath, JSON.stringify(reply));
  Deno.exit(reply.ok ? 0 : 1); // a module's stray timers or handles must not keep the trial alive
}
