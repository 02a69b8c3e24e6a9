/** Every `sluice` command, in the order `sluice --help` lists them. @module */

import type { Command } from "../args.ts";
import { benchDecodeCommand } from "./bench_decode.ts";
import { loadCommand } from "./load.ts";
import { previewCommand } from "./preview.ts";
import { makeDatasetCommand } from "./make_dataset.ts";
import { probeCommand } from "./probe.ts";
import { serveCommand } from "./serve.ts";
import { transcodeCommand } from "./transcode.ts";
import { manifestMergeCommand } from "./manifest_merge.ts";
import { packCommand } from "./pack.ts";
import { verifyCommand } from "./verify.ts";
import { benchIoCommand } from "./bench_io.ts";
import { tuneCommand } from "./tune.ts";
import { doctorCommand } from "./doctor.ts";

/** Every `sluice` command, in the order `sluice --help` lists them. */
export const COMMANDS: readonly Command[] = [
  probeCommand,
  makeDatasetCommand,
  loadCommand,
  previewCommand,
  serveCommand,
  benchDecodeCommand,
  transcodeCommand,
  manifestMergeCommand,
  packCommand,
  verifyCommand,
  benchIoCommand,
  tuneCommand,
  doctorCommand,
];
