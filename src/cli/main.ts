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
 * sluice transcode SRC_DIR|MANIFEST OUT_DIR [--height 128 --fps 15 --codec h264 --gop 15] [--jobs N] [--shard I/N]
 * sluice manifest merge OUT_DIR
 * sluice pack MANIFEST OUT_DIR [--shard-size 1GiB]
 * sluice verify SHARD...
 * sluice bench-io DATASET... [--cold]
 * sluice tune MODULE [--budget 10m] [--out DIR | --resume DIR]
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
import { transcodeCommand } from "./commands/transcode.ts";
import { manifestMergeCommand } from "./commands/manifest_merge.ts";
import { packCommand } from "./commands/pack.ts";
import { verifyCommand } from "./commands/verify.ts";
import { benchIoCommand } from "./commands/bench_io.ts";
import { tuneCommand } from "./commands/tune.ts";

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
  transcodeCommand,
  manifestMergeCommand,
  packCommand,
  verifyCommand,
  benchIoCommand,
  tuneCommand,
];

/** Runs the CLI with `args` (the words after `sluice`); returns the exit status. */
export function main(args: readonly string[]): Promise<number> {
  return runCli(COMMANDS, args, {
    program: "sluice",
    summary: "video data loading for GPUs: probe media, make a test dataset, run, measure and serve the " +
      "loader, prepare datasets (transcode, shards, cold-cache I/O)",
  });
}

if (import.meta.main) Deno.exit(await main(Deno.args));
