/**
 * `sluice`, the command-line tool (`deno task sluice …`, or `deno install --global -A -n sluice src/cli/main.ts`).
 * Each command is declared once in `src/cli/commands/` with its options, defaults, ranges and an example
 * (see `args.ts`, which also says how to add one); `sluice --help` lists them and `sluice COMMAND --help`
 * shows each one's options.
 *
 * ```
 * sluice probe FILE...
 * sluice make-dataset DIR --videos N --classes K
 * sluice load DATASET [options]
 * sluice serve DATASET --socket PATH [options]
 * sluice bench-decode FILE...
 * ```
 *
 * @example Run a command from code (as the tests do)
 * ```ts
 * import { main } from "@sluice/sluice/cli";
 *
 * const status = await main(["probe", "--help"]);
 * ```
 * @module
 */

import { type Command, runCli } from "./args.ts";
import { benchDecodeCommand } from "./commands/bench_decode.ts";
import { loadCommand } from "./commands/load.ts";
import { makeDatasetCommand } from "./commands/make_dataset.ts";
import { probeCommand } from "./commands/probe.ts";
import { serveCommand } from "./commands/serve.ts";

export {
  type BooleanOption,
  type Command,
  type CommandSpec,
  defineCommand,
  type EnumOption,
  type NumberOption,
  type OptionBase,
  type OptionSpec,
  type OptionSpecs,
  type OptionValues,
  type ParsedArgs,
  type PositionalSpec,
  runCommand,
  type RunContext,
  type StringOption,
  UsageError,
  type ValueOf,
  VERSION,
} from "./args.ts";
export type { Out } from "./tty.ts";
export { SluiceError } from "../errors.ts";

/** Every `sluice` command, in the order `sluice --help` lists them. */
export const COMMANDS: readonly Command[] = [
  probeCommand,
  makeDatasetCommand,
  loadCommand,
  serveCommand,
  benchDecodeCommand,
];

/** Runs the CLI with `args` (the words after `sluice`); returns the exit status. */
export function main(args: readonly string[]): Promise<number> {
  return runCli(COMMANDS, args, {
    program: "sluice",
    summary:
      "video data loading for GPUs: probe media, make a test dataset, run, measure and serve the loader",
  });
}

if (import.meta.main) Deno.exit(await main(Deno.args));
