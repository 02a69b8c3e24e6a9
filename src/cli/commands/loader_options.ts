/**
 * Command-line flags made from the tables that declare the options (`LOADER_OPTIONS`, `SERVER_OPTIONS`): each
 * option that names a `flag` becomes `--flag` with the table's kind, range, default and doc, for every command
 * that builds a loader (`sluice load`, `sluice preview`, `sluice serve`). A flag that is not given leaves its
 * option unset, so the library's own default applies; `--help` shows that default. The options the flags make
 * are resolved once, by the library's door; its errors are worded back in flags ({@link asUsageError}).
 * @module
 */

import { type OptionSpec as FlagSpec, type OptionSpecs, UsageError } from "../args.ts";
import { InvalidArgumentError } from "../../errors.ts";
import {
  defaultText,
  flagVocabulary,
  optionEntries,
  type OptionSpec,
  type OptionTable,
  rewordOptionError,
  type Vocabulary,
} from "../../options.ts";
import { LOADER_OPTIONS, type LoaderOptions } from "../../loader/loader_options.ts";
import { SERVER_OPTIONS } from "../../serve/options.ts";

/**
 * The flag of an option: its kind and range, its doc as help, the library's default as text. An option of
 * several kinds (`either`) takes the first of them that a flag can spell (a failure budget: its count).
 */
export function flagOf(spec: OptionSpec): FlagSpec {
  if (spec.kind === "either") {
    const one = spec.of.find((s) => s.kind !== "group");
    if (one === undefined) throw new Error(`no command-line flag for an option of groups only`);
    const { doc, default: dflt, defaultText: text, required } = spec;
    return flagOf({ ...one, doc, default: dflt, defaultText: text, required });
  }
  const dflt = defaultText(spec);
  const base = {
    help: spec.doc,
    ...(dflt === null ? {} : { defaultText: dflt }),
    ...(spec.required ? { required: true } : {}),
  };
  switch (spec.kind) {
    case "integer":
      return {
        ...base,
        type: "integer",
        min: spec.min,
        max: spec.max,
        multipleOf: spec.multipleOf,
        words: spec.words,
      };
    case "number":
      return { ...base, type: "number", min: spec.min, above: spec.above, max: spec.max, below: spec.below };
    case "enum":
      return { ...base, type: "enum", values: spec.values };
    case "string":
      return { ...base, type: "string" };
    case "boolean":
      // A flag can only say "true": an option that is true by default needs another spelling first.
      if (spec.default !== false) throw new Error(`a flag for a boolean option needs the default false`);
      return { help: spec.doc, type: "boolean" };
    default:
      throw new Error(`no command-line flag for an option of kind ${spec.kind}`);
  }
}

/** The flags of every option of `table` that names one, keyed by flag. */
export function flagsOf(table: OptionTable): OptionSpecs {
  return Object.fromEntries(
    optionEntries(table).flatMap(({ spec }) => (spec.flag ? [[spec.flag, flagOf(spec)]] : [])),
  );
}

/** The options that the flags of `table` given in `values` set, nested as the table nests them. */
export function optionsOfFlags(table: OptionTable, values: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const { path, spec } of optionEntries(table)) {
    const v = spec.flag ? values[spec.flag] : undefined;
    if (v === undefined || (spec.kind === "boolean" && v === false)) continue;
    const keys = path.split(".");
    let o = out;
    for (const k of keys.slice(0, -1)) o = (o[k] ??= {}) as Record<string, unknown>;
    o[keys[keys.length - 1]] = v;
  }
  return out;
}

/** The loader's flags (`--batch-size`, `--frames`, `--decode-concurrency`, …). */
export const LOADER_FLAGS: OptionSpecs = flagsOf(LOADER_OPTIONS);

/**
 * The loader's and the server's options as the command line names them (`--max-failures`, `--slots`; an option
 * without a flag by its path), in the errors of the options' door and of the loader they build.
 */
export const FLAG_WORDS: Vocabulary = flagVocabulary({ ...LOADER_OPTIONS, ...SERVER_OPTIONS });

/** The `LoaderOptions` that the loader flags given in `values` describe, for `dataset` (resolved by the loader). */
export function loaderOptionsOf(
  dataset: string,
  values: Record<string, unknown>,
): Omit<LoaderOptions, "log" | "hooks"> {
  return { ...optionsOfFlags(LOADER_OPTIONS, values), dataset } as unknown as LoaderOptions;
}

/**
 * `e` worded in flags ({@link FLAG_WORDS}): an `InvalidArgumentError` about an option becomes a
 * {@link UsageError} (exit status 2, with a pointer to `--help`); any other error keeps its class, an error about
 * an option (an exceeded `--max-failures`) its wording in flags.
 */
export function asUsageError(e: unknown): unknown {
  const worded = rewordOptionError(e, FLAG_WORDS, { ...LOADER_OPTIONS, ...SERVER_OPTIONS });
  const about = worded instanceof InvalidArgumentError && worded.option !== undefined;
  return about ? new UsageError(worded.message, { cause: e }) : worded;
}
