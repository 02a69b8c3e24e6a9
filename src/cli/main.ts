/**
 * `sluice`, the command-line tool (`deno task sluice …`, or `deno install --global -A -n sluice src/cli/main.ts`).
 * Each command is declared once in `src/cli/commands/` with its options, defaults, ranges and an example (the
 * loader's options come from the loader's own table, so `sluice load` and `sluice serve` take the ranges and
 * defaults the library does); `sluice --help` lists them and `sluice COMMAND --help` shows each one's options.
 * This entry point exports {@link main} only: the argument framework behind it is internal.
 *
 * ```
 * sluice probe FILE...
 * sluice make-dataset DIR --videos N --classes K
 * sluice load DATASET --batch-size B --frames T --width W --height H [options]
 * sluice serve DATASET --socket PATH --batch-size B --frames T --width W --height H [options]
 * sluice bench-decode FILE...
 * sluice transcode SRC_DIR|MANIFEST OUT_DIR [--height 128 --fps 15 --codec h264 --gop 15] [--jobs N] [--shard I/N]
 * sluice manifest merge OUT_DIR
 * sluice pack MANIFEST OUT_DIR [--shard-size 1GiB]
 * sluice verify SHARD...
 * sluice bench-io DATASET... [--cold]
 * sluice tune MODULE [--budget 10m] [--out DIR | --resume DIR]
 * sluice doctor [--json]
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

import { runCli } from "./args.ts";
import { COMMANDS } from "./commands/all.ts";

/**
 * Runs the CLI as the shell would.
 * @param args the words after `sluice`
 * @returns the exit status: 0 on success, 2 for a usage error, 1 for a failure
 */
export function main(args: readonly string[]): Promise<number> {
  return runCli(COMMANDS, args, {
    program: "sluice",
    summary: "video data loading for GPUs: probe media, make a test dataset, run, measure and serve the " +
      "loader, prepare datasets (transcode, shards, cold-cache I/O)",
  });
}

if (import.meta.main) Deno.exit(await main(Deno.args));
