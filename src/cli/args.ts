/**
 * The command-line framework of `sluice` (internal: `@sluice/sluice/cli` exports `main` only). Each command
 * declares its positional arguments, its options (type, default, valid range, help text) and an example; this
 * module parses the command line against that declaration, prints `--help` and `--version`, and turns every bad
 * value into one usage error of one shape:
 *
 * ```
 * sluice load: --batch-size must be an integer from 1 to 65536, got "2.5"
 * ```
 *
 * The loader's options are not declared here but in the loader's table (`LOADER_OPTIONS`): `sluice load` and
 * `sluice serve` make their flags from it (`commands/loader_options.ts`), so the command line takes the ranges
 * and defaults the library does. Ranges are described, and misspelled names matched, by `src/options.ts`.
 *
 * Exit statuses: 0 success, 1 the command failed (a {@link SluiceError}: bad media, a failed run), 2 a usage
 * error, 130 interrupted (Ctrl-C). A command's `run` returns its status.
 *
 * The parser is a small one written here, not `node:util`'s `parseArgs`: an option that takes a value always
 * takes the next argument (so `--width -5` is a range error, not "argument is ambiguous"), and every value is
 * checked against its declared type and range in one place.
 *
 * ## Adding a command
 *
 * 1. Write `src/cli/commands/<name>.ts` exporting one `defineCommand({...})`. `name` may hold a space for a
 *    sub-command (`"manifest merge"`). Declare every option with `type`, `help` and, where it applies,
 *    `default`, `min`/`max` (inclusive), `above`/`below` (exclusive bounds), `values` (enum) or `defaultText`
 *    (a default that is not a constant, e.g. "the number of cores"). `run({ values, positionals })` receives
 *    the values typed from the declaration: an option with a default (and every boolean) is never undefined.
 * 2. Add it to `COMMANDS` in `src/cli/commands/all.ts`. `sluice --help`, `sluice <name> --help`, `--version`,
 *    the usage errors and their tests (`tests/cli/args_test.ts` walks `COMMANDS`) come with it.
 * 3. Checks that involve several options throw {@link UsageError} from `run`; failures of the work itself
 *    throw a {@link SluiceError} (printed as `sluice <name>: message`, exit 1). Print results to stdout,
 *    progress and log lines to stderr (see `tty.ts`).
 * @module
 */

import meta from "../../deno.json" with { type: "json" };
import { SluiceError } from "../errors.ts";
import { closest, describe } from "../options.ts";
import { type Out, print, wrapLine } from "./tty.ts";

/** The version of sluice, from `deno.json`. */
export const VERSION: string = meta.version;

/** A wrong command line: printed with a pointer to `--help`, exit status 2. */
export class UsageError extends SluiceError {}

/** What every option declares. */
export interface OptionBase {
  /** One line (or a few) for `--help`. */
  help: string;
  /** How the value is shown in `--help` (default: `N` for numbers, `X` for numbers with a fraction, `S`). */
  placeholder?: string;
  /** Shown as the default in `--help` when the option has no constant default ("native rate", "all"). */
  defaultText?: string;
  /** The command line must give it (for options with no sensible default). */
  required?: boolean;
}

/** An option that takes any non-empty string. */
export interface StringOption extends OptionBase {
  /** The kind of value. */
  type: "string";
  /** The value when the option is not given. */
  default?: string;
}

/** An option that takes a number (`"number"`) or a whole number (`"integer"`), within a range. */
export interface NumberOption extends OptionBase {
  /** The kind of value: any decimal number, or a whole one. */
  type: "number" | "integer";
  /** The value when the option is not given; must be within the range. */
  default?: number;
  /** Smallest valid value, inclusive. */
  min?: number;
  /** Values must be greater than this (an exclusive lower bound, e.g. 0 for durations). */
  above?: number;
  /** Largest valid value, inclusive. */
  max?: number;
  /** Values must be smaller than this (an exclusive upper bound). */
  below?: number;
  /** Values must be a multiple of this (2 for the even sizes 4:2:0 video needs). */
  multipleOf?: number;
  /** Words accepted besides the numbers (`auto`). */
  words?: readonly string[];
}

/** A flag: present means true. */
export interface BooleanOption extends OptionBase {
  /** The kind of option. */
  type: "boolean";
}

/** An option that takes one of a fixed list of words. */
export interface EnumOption<V extends string = string> extends OptionBase {
  /** The kind of value. */
  type: "enum";
  /** The words accepted. */
  values: readonly V[];
  /** The value when the option is not given. */
  default?: V;
}

/** The declaration of one option. */
export type OptionSpec = StringOption | NumberOption | BooleanOption | EnumOption;

/** A command's options, keyed by their long name without the dashes (`"batch-size"`). */
export type OptionSpecs = Record<string, OptionSpec>;

/** A positional argument. */
export interface PositionalSpec {
  /** Upper case, as shown in the usage line (`FILE`, `DATASET`). */
  name: string;
  /** What it is, for `--help`. */
  help: string;
  /** Takes one or more (`FILE...`). */
  variadic?: boolean;
  /** May be left out (`[NAME]`); only the last positionals may be optional. */
  optional?: boolean;
}

/** The type of an option's value, from its declaration. */
export type ValueOf<S> = S extends NumberOption
  ? (S extends { words: readonly (infer W)[] } ? number | W : number)
  : S extends BooleanOption ? boolean
  : S extends EnumOption<infer V> ? V
  : string;

/** Parsed option values, typed from their declaration: undefined only for an option with no default. */
export type OptionValues<O extends OptionSpecs> = {
  [K in keyof O]: O[K] extends BooleanOption ? boolean
    : O[K] extends { default: unknown } | { required: true } ? ValueOf<O[K]>
    : ValueOf<O[K]> | undefined;
};

/** What a command's `run` receives. */
export interface ParsedArgs<O extends OptionSpecs> {
  /** Every declared option, keyed by its name, defaults filled in. */
  values: OptionValues<O>;
  /** The arguments that are not options, in order. */
  positionals: string[];
}

/** The declaration of a command; see the module docs. */
export interface CommandSpec<O extends OptionSpecs> {
  /** As typed after `sluice`; a space separates a sub-command (`"manifest merge"`). */
  name: string;
  /** One line for `sluice --help`. */
  summary: string;
  /** Paragraphs for `sluice <name> --help`, after the summary. */
  description?: string;
  /** Its positional arguments; the last may be variadic. */
  positionals: readonly PositionalSpec[];
  /** Its options (`--help`, `--version` come with every command). */
  options: O;
  /** Command lines without the program name, at least one; shown by `--help`. */
  examples: readonly string[];
  /** Does the work; returns the exit status. */
  run(args: ParsedArgs<O>): number | Promise<number>;
}

/** A declared command with its option types erased, as `COMMANDS` holds it. */
export type Command = CommandSpec<OptionSpecs>;

/** Declares a command; the option values `run` receives are typed from `options`. */
export function defineCommand<const O extends OptionSpecs>(spec: CommandSpec<O>): Command {
  for (const [name, o] of Object.entries(spec.options)) {
    if (o.type === "boolean" || o.default === undefined) continue;
    const bad = validate(name, o, String(o.default));
    if (bad !== null) throw new Error(`command "${spec.name}": the default of ${bad}`);
  }
  if (spec.examples.length === 0) throw new Error(`command "${spec.name}" needs an example`);
  const firstOptional = spec.positionals.findIndex((p) => p.optional);
  if (firstOptional >= 0 && spec.positionals.slice(firstOptional).some((p) => !p.optional)) {
    throw new Error(`command "${spec.name}": a required positional follows an optional one`);
  }
  return spec as unknown as Command;
}

/** How a program is named in help and error messages, and where it writes. */
export interface RunContext {
  /** Shown in usage lines and messages, e.g. `"sluice"` or `"deno task demo"`. */
  program: string;
  /** Where help, version and results go (default `Deno.stdout`). */
  stdout?: Out;
  /** Where usage errors and failures go (default `Deno.stderr`). */
  stderr?: Out;
}

/** Parses `args` for `command` (help, version and usage errors included) and runs it; returns the exit status. */
export async function runCommand(
  command: Command,
  args: readonly string[],
  ctx: RunContext,
): Promise<number> {
  const stdout = ctx.stdout ?? Deno.stdout, stderr = ctx.stderr ?? Deno.stderr;
  const full = command.name === "" ? ctx.program : `${ctx.program} ${command.name}`;
  let parsed: ParsedArgs<OptionSpecs> | "help" | "version";
  try {
    parsed = parseCommandLine(command, args);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    print(stderr, `${full}: ${e.message}\nRun '${full} --help' for the options.`);
    return 2;
  }
  if (parsed === "help") {
    print(stdout, commandHelp(command, ctx.program));
    return 0;
  }
  if (parsed === "version") {
    print(stdout, versionLine());
    return 0;
  }
  try {
    return await command.run(parsed);
  } catch (e) {
    if (e instanceof UsageError) {
      print(stderr, `${full}: ${e.message}\nRun '${full} --help' for the options.`);
      return 2;
    }
    if (e instanceof SluiceError) {
      print(stderr, `${full}: ${e.message}`);
      return 1;
    }
    throw e;
  }
}

/**
 * Runs the command named by the first argument(s) of `args` among `commands`, or prints the program's help
 * (`--help`, `help`, `help COMMAND`) or version (`--version`); returns the exit status.
 */
export function runCli(
  commands: readonly Command[],
  args: readonly string[],
  ctx: RunContext & { summary: string },
): Promise<number> {
  const stdout = ctx.stdout ?? Deno.stdout, stderr = ctx.stderr ?? Deno.stderr;
  const [first, ...rest] = args;
  if (first === "--version") return Promise.resolve(printed(stdout, versionLine(), 0));
  if (first === "--help" || first === "-h" || (first === "help" && rest.length === 0)) {
    return Promise.resolve(printed(stdout, programHelp(commands, ctx), 0));
  }
  if (first === undefined) return Promise.resolve(printed(stderr, programHelp(commands, ctx), 2));
  const helpFor = first === "help";
  const words = helpFor ? rest : args;
  const command = findCommand(commands, words);
  if (command === undefined) {
    // A sub-command is named with its group ("manifest frob"), a command alone ("lod").
    const group = commands.some((c) => c.name.startsWith(`${words[0]} `));
    const typed = words.slice(0, group && words[1] !== undefined ? 2 : 1).join(" ");
    const near = closest(typed, commands.map((c) => c.name));
    return Promise.resolve(printed(
      stderr,
      `${ctx.program}: unknown command "${typed}"${near ? `; did you mean "${near}"?` : ""}\n` +
        `Run '${ctx.program} --help' for the commands.`,
      2,
    ));
  }
  const tail = words.slice(command.name.split(" ").length);
  return runCommand(command, helpFor ? ["--help"] : tail, ctx);
}

function printed(out: Out, text: string, status: number): number {
  print(out, text);
  return status;
}

function findCommand(commands: readonly Command[], words: readonly string[]): Command | undefined {
  // The longest name wins, so "manifest merge" is found before a command named "manifest".
  const byLength = [...commands].sort((a, b) => b.name.split(" ").length - a.name.split(" ").length);
  return byLength.find((c) => c.name.split(" ").every((w, i) => words[i] === w));
}

/**
 * Parses `args` (the words after the command's name) against the command's declaration: `"help"` or
 * `"version"` when asked for, else the typed values (defaults filled in) and the positionals.
 * Throws {@link UsageError} on an unknown option, a missing or invalid value, or a wrong number of positionals.
 */
export function parseCommandLine(
  command: Command,
  args: readonly string[],
): ParsedArgs<OptionSpecs> | "help" | "version" {
  // --help and --version win wherever they stand (before `--`), even after a bad value.
  const end = args.indexOf("--") < 0 ? args.length : args.indexOf("--");
  const flags = args.slice(0, end);
  if (flags.includes("-h") || flags.includes("--help")) return "help";
  if (flags.includes("--version")) return "version";
  const values: Record<string, unknown> = {};
  const positionals: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === "--") {
      positionals.push(...args.slice(i + 1));
      break;
    }
    if (!arg.startsWith("-") || arg === "-" || /^-\d/.test(arg)) {
      positionals.push(arg);
      continue;
    }
    if (!arg.startsWith("--")) throw new UsageError(`unknown option ${arg}${suggest(arg, command)}`);
    const eq = arg.indexOf("=");
    const name = arg.slice(2, eq < 0 ? undefined : eq);
    const spec = Object.hasOwn(command.options, name) ? command.options[name] : undefined;
    if (spec === undefined) throw new UsageError(`unknown option --${name}${suggest(name, command)}`);
    if (spec.type === "boolean") {
      if (eq >= 0) throw new UsageError(`--${name} is a flag and takes no value, got "${arg.slice(eq + 1)}"`);
      values[name] = true;
      continue;
    }
    let text: string | undefined;
    if (eq >= 0) text = arg.slice(eq + 1);
    else if (i + 1 < args.length && !args[i + 1].startsWith("--")) text = args[++i];
    if (text === undefined) throw new UsageError(`--${name} must be ${describeRange(spec)}, got nothing`);
    const bad = validate(name, spec, text);
    if (bad !== null) throw new UsageError(bad);
    const number = (spec.type === "number" || spec.type === "integer") && !spec.words?.includes(text);
    values[name] = number ? Number(text) : text;
  }
  checkPositionals(command, positionals);
  const missing = Object.entries(command.options).filter(([n, s]) => s.required && !(n in values));
  if (missing.length === 1 && missing[0][1].type !== "boolean") {
    throw new UsageError(
      `--${missing[0][0]} must be ${describeRange(missing[0][1])}, got nothing (it is required)`,
    );
  }
  if (missing.length > 1) {
    const names = missing.map(([n]) => `--${n}`);
    throw new UsageError(`${names.slice(0, -1).join(", ")} and ${names[names.length - 1]} are required`);
  }
  for (const [name, spec] of Object.entries(command.options)) {
    if (!(name in values)) values[name] = spec.type === "boolean" ? false : spec.default;
  }
  return { values: values as OptionValues<OptionSpecs>, positionals };
}

function checkPositionals(command: Command, got: string[]): void {
  const want = command.positionals;
  const variadic = want.length > 0 && want[want.length - 1].variadic === true;
  const names = want.map((p) => p.name).join(" ");
  const required = want.filter((p) => !p.optional);
  if (got.length < required.length) {
    const missing = required.slice(got.length).map((p) => p.name).join(" ");
    throw new UsageError(`missing ${missing}`);
  }
  if (!variadic && got.length > want.length) {
    const extra = got.slice(want.length).map((a) => JSON.stringify(a)).join(" ");
    throw new UsageError(
      want.length === 0 ? `takes no arguments, got ${extra}` : `takes ${names} only; unexpected ${extra}`,
    );
  }
}

/** Null when `text` is a valid value of option `name`, else the one-line message that says why not. */
function validate(name: string, spec: Exclude<OptionSpec, BooleanOption>, text: string): string | null {
  const ok = (() => {
    switch (spec.type) {
      case "string":
        return text !== "";
      case "enum":
        return spec.values.includes(text);
      case "number":
      case "integer": {
        if (spec.words?.includes(text)) return true;
        // Number("") is 0 and Number("0x10") is 16: only plain decimal notation counts.
        if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text.trim())) return false;
        const v = Number(text);
        if (!Number.isFinite(v) || (spec.type === "integer" && !Number.isSafeInteger(v))) return false;
        return (spec.min === undefined || v >= spec.min) && (spec.above === undefined || v > spec.above) &&
          (spec.max === undefined || v <= spec.max) && (spec.below === undefined || v < spec.below) &&
          (spec.multipleOf === undefined || v % spec.multipleOf === 0);
      }
    }
  })();
  return ok ? null : `--${name} must be ${describeRange(spec)}, got ${JSON.stringify(text)}`;
}

/** "an integer from 1 to 65536", "a number > 0", "one of cpu, nvdec, auto", ... (`src/options.ts`'s words). */
export function describeRange(spec: Exclude<OptionSpec, BooleanOption>): string {
  if (spec.type === "string") return describe({ kind: "string", doc: "" });
  if (spec.type === "enum") return describe({ kind: "enum", values: spec.values, doc: "" });
  const { type, help: _, ...bounds } = spec;
  return describe({ ...bounds, kind: type, doc: "" });
}

function suggest(typed: string, command: Command): string {
  const near = closest(typed.replace(/^-+/, ""), Object.keys(command.options));
  return near === null ? ` (see ${command.name} --help)` : `; did you mean --${near}?`;
}

// ------------------------------------------------------------------------------------------------ help

const HELP_WIDTH = 100;

function versionLine(): string {
  return `sluice ${VERSION} (deno ${Deno.version.deno}, ${Deno.build.os} ${Deno.build.arch})`;
}

function positionalText(p: PositionalSpec): string {
  const name = p.variadic ? `${p.name}...` : p.name;
  return p.optional ? `[${name}]` : name;
}

function usageArgs(command: Command): string {
  const pos = command.positionals.map(positionalText).join(" ");
  return Object.keys(command.options).length > 0 ? `${pos} [options]`.trim() : pos;
}

function placeholder(spec: Exclude<OptionSpec, BooleanOption>): string {
  if (spec.placeholder !== undefined) return spec.placeholder;
  if (spec.type === "enum") return spec.values.join("|");
  if (spec.type === "string") return "S";
  return [spec.type === "integer" ? "N" : "X", ...spec.words ?? []].join("|");
}

/** `--help` of one command: summary, usage, arguments, each option with its default and range, examples. */
export function commandHelp(command: Command, program: string): string {
  const full = command.name === "" ? program : `${program} ${command.name}`;
  const lines = [`${full}: ${command.summary}`, "", `Usage: ${full} ${usageArgs(command)}`.trimEnd()];
  if (command.description) lines.push("", ...wrap(command.description, HELP_WIDTH, ""));
  const rows: [string, string][] = [];
  for (const p of command.positionals) rows.push([positionalText(p), p.help]);
  if (rows.length > 0) lines.push("", "Arguments:", ...twoColumns(rows));
  const opts: [string, string][] = Object.entries(command.options).map(([name, spec]) => {
    if (spec.type === "boolean") return [`--${name}`, spec.help];
    const dflt = spec.defaultText ?? (spec.default === undefined ? null : String(spec.default));
    const range = spec.type === "enum" ? null : describeRange(spec);
    const first = spec.required ? "required" : dflt === null ? null : `default: ${dflt}`;
    const notes = [first, range].filter((x) => x !== null).join("; ");
    return [`--${name} ${placeholder(spec)}`, notes === "" ? spec.help : `${spec.help} [${notes}]`];
  });
  opts.push(["-h, --help", "print this help and exit"], ["--version", "print the version and exit"]);
  lines.push("", "Options:", ...twoColumns(opts));
  lines.push("", command.examples.length > 1 ? "Examples:" : "Example:");
  for (const ex of command.examples) lines.push(`  ${program} ${ex}`);
  return lines.join("\n");
}

function programHelp(commands: readonly Command[], ctx: RunContext & { summary: string }): string {
  const p = ctx.program;
  return [
    `${p} ${VERSION}: ${ctx.summary}`,
    "",
    `Usage: ${p} COMMAND [arguments] [options]`,
    "",
    "Commands:",
    ...twoColumns(commands.map((c) => [c.name, c.summary])),
    "",
    `Run '${p} COMMAND --help' (or '${p} help COMMAND') for a command's options, defaults and an example.`,
    `Exit status: 0 success, 1 the command failed, 2 usage error, 130 interrupted.`,
  ].join("\n");
}

function twoColumns(rows: [string, string][]): string[] {
  const left = Math.min(28, Math.max(...rows.map(([l]) => l.length)) + 2);
  const out: string[] = [];
  for (const [l, r] of rows) {
    const body = wrap(r, HELP_WIDTH - left - 2, " ".repeat(left + 2));
    if (l.length + 2 > left) out.push(`  ${l}`, " ".repeat(left + 2) + body[0].trimStart(), ...body.slice(1));
    else out.push(`  ${l.padEnd(left)}${body[0].trimStart()}`, ...body.slice(1));
  }
  return out;
}

/** Word-wraps `text` (paragraphs split by newlines) to `width` columns, each line after `indent`. */
function wrap(text: string, width: number, indent: string): string[] {
  return text.split("\n").flatMap((para) => wrapLine(para.trim(), width).map((l) => indent + l));
}
