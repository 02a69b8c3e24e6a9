/**
 * Options declared once: an {@link OptionTable} says, for each option of an API, its kind, valid range, default
 * and a line of docs, and (where they exist) its command-line flag and its Python keyword. The one checker
 * ({@link checkOptions}) reads the table, so a range is written in one place; the command line, `--help`, the
 * Python client's keywords and the docs' tables are made from the same tables.
 *
 * Options are resolved once, at the door they enter by: {@link resolveTable} checks a value against its table and
 * fills every default in one walk, and what it returns is never checked again. Its errors carry the option, the
 * value and what the option accepts (`OptionProblem`), worded in TypeScript; each door words them in its caller's
 * language (a {@link Vocabulary}, {@link rewordOptionError}): `clip.numFrames` to TypeScript and JSON callers,
 * `num_frames` or `clip["num_frames"]` to Python, `--frames` on the command line. An option nobody declared is
 * an error that names it and the closest declared one.
 * @module
 */

import { InvalidArgumentError, type OptionMessagePart, type OptionProblem } from "./errors.ts";
import type { Defaults, ResolvedOf, WithDefaults } from "./option_types.ts";

/** What every option declares. */
export interface OptionBase {
  /** One line for `--help` and the docs' tables. */
  doc: string;
  /** The value used when the option is not given. */
  default?: unknown;
  /** The default in words, where it is not a constant ("the number of cores"). */
  defaultText?: string;
  /** The option must be given. */
  required?: boolean;
  /** Its command-line flag (without the dashes), where the CLI commands that take these options expose it. */
  flag?: string;
  /**
   * Its Python keyword when that is a flat alias of a nested option (`num_frames` for `clip.numFrames`) or a
   * rename; `false`: Python cannot set it. Otherwise Python writes the path in snake_case
   * (`buffer_size`, `clip={"dtype": …}`).
   */
  python?: string | false;
}

/** A whole number in a range, or one of a few words (`"auto"`). */
export interface IntegerOption extends OptionBase {
  /** The kind of value. */
  kind: "integer";
  /** Smallest valid value (inclusive). */
  min?: number;
  /** Largest valid value (inclusive). */
  max?: number;
  /** Valid values must be a multiple of this (2 for the even sizes 4:2:0 video needs). */
  multipleOf?: number;
  /** Words accepted besides the numbers. */
  words?: readonly string[];
}

/** A finite number in a range. */
export interface NumberOption extends OptionBase {
  /** The kind of value. */
  kind: "number";
  /** Smallest valid value (inclusive). */
  min?: number;
  /** Valid values are greater than this. */
  above?: number;
  /** Largest valid value (inclusive). */
  max?: number;
  /** Valid values are smaller than this. */
  below?: number;
  /** `Infinity` is valid too (e.g. "the whole video"). */
  infinity?: boolean;
}

/** `true` or `false`. */
export interface BooleanOption extends OptionBase {
  /** The kind of value. */
  kind: "boolean";
}

/** One of a fixed list of words. */
export interface EnumOption extends OptionBase {
  /** The kind of value. */
  kind: "enum";
  /** The words accepted. */
  values: readonly string[];
}

/** A non-empty string. */
export interface StringOption extends OptionBase {
  /** The kind of value. */
  kind: "string";
}

/** A fixed number of finite numbers: a `[min, max]` range, per-channel values. */
export interface NumbersOption extends OptionBase {
  /** The kind of value. */
  kind: "numbers";
  /** How many. */
  length: number;
  /** Each is at least this. */
  min?: number;
  /** Each is greater than this. */
  above?: number;
  /** Each is at most this. */
  max?: number;
  /** A `[min, max]` range: the first is at most the second. */
  range?: boolean;
}

/** Options of their own, in an object (`clip`, `sampler`, `concurrency`). */
export interface GroupOption extends OptionBase {
  /** The kind of value. */
  kind: "group";
  /** The options it holds. */
  options: OptionTable;
  /**
   * Giving the group asks for something (`audio`): left out, it stays out when resolved. Otherwise a group left
   * out resolves to its options' defaults.
   */
  presence?: boolean;
}

/** One of several kinds (a failure budget: a count, or a rate). */
export interface EitherOption extends OptionBase {
  /** The kind of value. */
  kind: "either";
  /** The kinds accepted; at most one of them a group. */
  of: readonly OptionSpec[];
}

/** A value only TypeScript callers can give (a function, a dataset object, an `AbortSignal`). */
export interface CustomOption extends OptionBase {
  /** The kind of value. */
  kind: "custom";
  /** What it is, for messages ("a function"). */
  what: string;
  /** Whether `value` is one (a type guard gives the resolved options' type, {@link ResolvedOf}). */
  test(value: unknown): boolean;
}

/** The declaration of one option. */
export type OptionSpec =
  | IntegerOption
  | NumberOption
  | BooleanOption
  | EnumOption
  | StringOption
  | NumbersOption
  | GroupOption
  | EitherOption
  | CustomOption;

/** Options by name, as the TypeScript API spells them. */
export type OptionTable = Readonly<Record<string, OptionSpec>>;

/** How options and values are called in messages: the caller's own spelling. */
export interface Vocabulary {
  /** Leads each message (`"loader: "`, `"sluice.Loader: "`). */
  readonly prefix: string;
  /** The option at `path` (dot-separated, as TypeScript spells it), as the caller writes it. */
  name(path: string): string;
  /** A value, as the caller writes it. */
  show(value: unknown): string;
  /** What an object of options is called ("a dict"; default "an object"). */
  readonly object?: string;
  /** A key of an object of options, as the caller writes it (`max_pad_fraction`). */
  key?(name: string): string;
}

/** TypeScript's (and JSON's) own spelling: `clip.numFrames`. */
export function tsVocabulary(prefix: string): Vocabulary {
  return { prefix, name: (path) => path, show: showJson };
}

/** The command line's: `--frames` where an option has a flag; its path otherwise. */
export function flagVocabulary(table: OptionTable, prefix = ""): Vocabulary {
  return {
    prefix,
    name: (path) => {
      const flag = find(table, path)?.flag;
      return flag ? `--${flag}` : path;
    },
    show: showJson,
  };
}

/**
 * Checks `raw` against `table` (as {@link checkOptions}) and fills in every declared default in the same walk,
 * groups included: the one call a door makes. Throws `InvalidArgumentError` with the {@link OptionProblem} fields,
 * worded in `words`.
 * @param at the path of `table` inside the caller's options ("" at the top)
 */
export function resolveTable<const Tab extends OptionTable>(
  table: Tab,
  raw: unknown,
  words: Vocabulary,
  at = "",
): ResolvedOf<Tab> {
  checkOptions(table, raw, words, at);
  return filled(table, raw as Record<string, unknown>) as ResolvedOf<Tab>;
}

/** `value` (checked) with every default of `table` filled in, groups' included; absent options left out. */
function filled(table: OptionTable, value: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, spec] of Object.entries(table)) {
    const v = value[k];
    const group = groupOf(spec);
    if (!absent(v)) out[k] = group !== undefined && isPlainObject(v) ? filled(group.options, v) : v;
    else if (spec.default !== undefined) out[k] = spec.default;
    else if (spec.kind === "group" && !spec.presence) out[k] = filled(spec.options, {});
  }
  return out;
}

/**
 * The message `says` makes in `words`' vocabulary: options named as its caller writes them, values shown so, and
 * what an option accepts described from `table` (the door's own) where it declares the option.
 */
export function sayOption(
  says: readonly OptionMessagePart[],
  words: Vocabulary,
  table?: OptionTable | ((path: string) => OptionSpec | undefined),
): string {
  const specAt = typeof table === "function" ? table : (path: string) => table && find(table, path);
  return says.map((p) => {
    if (typeof p === "string") return p;
    if ("door" in p) return words.prefix;
    if ("option" in p) return words.name(p.option);
    if ("value" in p) return words.show(p.value);
    if ("object" in p) return words.object ?? "an object";
    const spec = specAt(p.accepts);
    return spec === undefined ? p.text : describe(spec, words);
  }).join("");
}

/**
 * An `InvalidArgumentError` about one option, its message worded in `words` (see {@link sayOption}; `table`
 * describes what an option accepts).
 */
export function optionError(
  words: Vocabulary,
  problem: OptionProblem,
  table?: OptionTable | ((path: string) => OptionSpec | undefined),
  options?: ErrorOptions,
): InvalidArgumentError {
  return new InvalidArgumentError(sayOption(problem.says, words, table), { ...options, problem });
}

/**
 * Words an error about an option (one that carries `says`, {@link OptionProblem}) in `words`' vocabulary, for
 * the door the option came in by: its message is rewritten in place. Any other error is returned as it is.
 * @param table the door's table, to describe what an option accepts in the caller's words
 */
export function rewordOptionError<E>(e: E, words: Vocabulary, table?: OptionTable): E {
  if (e instanceof Error && Array.isArray((e as { says?: unknown }).says)) {
    e.message = sayOption((e as unknown as OptionProblem).says, words, table);
  }
  return e;
}

/** The declared defaults of `table` (its options that have one). */
export function defaultsOf<const Tab extends OptionTable>(table: Tab): Defaults<Tab> {
  const out: Record<string, unknown> = {};
  for (const [k, spec] of Object.entries(table)) if (spec.default !== undefined) out[k] = spec.default;
  return out as Defaults<Tab>;
}

/** `value` with each option it lacks (undefined or null) that has a declared default set to it. */
export function withDefaults<T extends object, const Tab extends OptionTable>(
  table: Tab,
  value: T,
): WithDefaults<T, Tab> {
  const out = { ...value } as Record<string, unknown>;
  for (const [k, spec] of Object.entries(table)) {
    if (out[k] === undefined || out[k] === null) {
      if (spec.default !== undefined) out[k] = spec.default;
      else delete out[k];
    }
  }
  return out as WithDefaults<T, Tab>;
}

/**
 * Every option of `table`, groups' options included (after their group), with its dot-separated path, as flags,
 * help and docs show it: an option required in a `presence` group is required only when its group is given, so
 * it shows as not required, its default `required with <group>`.
 */
export function optionEntries(table: OptionTable, at = ""): { path: string; spec: OptionSpec }[] {
  return Object.entries(table).flatMap(([k, spec]) => {
    const path = at === "" ? k : `${at}.${k}`;
    const group = groupOf(spec);
    const inner = group ? optionEntries(group.options, path) : [];
    const withGroup = (e: { path: string; spec: OptionSpec }) =>
      e.spec.required
        ? { path: e.path, spec: { ...e.spec, required: false, defaultText: `required with ${k}` } }
        : e;
    return [{ path, spec }, ...(spec.kind === "group" && spec.presence ? inner.map(withGroup) : inner)];
  });
}

/** The option at a dot-separated `path`, if the table declares one. */
export function find(table: OptionTable, path: string): OptionSpec | undefined {
  let spec: OptionSpec | undefined;
  let t: OptionTable | undefined = table;
  for (const k of path.split(".")) {
    spec = t !== undefined && Object.hasOwn(t, k) ? t[k] : undefined;
    if (spec === undefined) return undefined;
    t = groupOf(spec)?.options;
  }
  return spec;
}

/**
 * Throws {@link InvalidArgumentError} for the first thing wrong with `value` against `table`: an option the table
 * does not declare (named with the closest declared one), required options missing, or a value of the wrong
 * kind or out of range, each named in `vocabulary`. Undefined and null count as not given.
 * @param at the path of `table` inside the caller's options ("" at the top)
 */
export function checkOptions(table: OptionTable, value: unknown, vocabulary: Vocabulary, at = ""): void {
  const v = vocabulary;
  const path = (k: string) => (at === "" ? k : `${at}.${k}`);
  if (!isPlainObject(value)) {
    const what: OptionMessagePart = at === "" ? "the options" : { option: at };
    throw optionError(v, {
      option: at,
      value,
      says: [{ door: v.prefix }, what, " must be ", { object: true }, " of options, got ", { value }],
    });
  }
  for (const k of Object.keys(value)) {
    if (Object.hasOwn(table, k)) continue;
    const near = closest(k, Object.keys(table));
    throw optionError(v, {
      option: path(k),
      says: [
        { door: v.prefix },
        "unknown option ",
        { option: path(k) },
        ...(near === null ? [] : [" (did you mean ", { option: path(near) }, "?)"]),
      ],
    });
  }
  const missing = Object.entries(table).filter(([k, s]) => s.required && absent(value[k])).map(([k]) =>
    path(k)
  );
  // a group left out misses its required options, unless leaving it out asks for nothing (`presence`)
  const groups = Object.entries(table).filter(([k, s]) =>
    s.kind === "group" && !s.presence && absent(value[k])
  );
  for (const [k, s] of groups) {
    for (const [m, ms] of Object.entries((s as GroupOption).options)) {
      if (ms.required) missing.push(`${path(k)}.${m}`);
    }
  }
  if (missing.length > 0) {
    const list = missing.flatMap((p, i): OptionMessagePart[] => [
      ...(i === 0 ? [] : [i === missing.length - 1 ? " and " : ", "]),
      { option: p },
    ]);
    throw optionError(v, {
      option: missing[0],
      says: [{ door: v.prefix }, ...list, missing.length === 1 ? " is required" : " are required"],
    });
  }
  for (const [k, spec] of Object.entries(table)) {
    if (!absent(value[k])) checkOption(spec, value[k], v, path(k));
  }
}

/** Throws {@link InvalidArgumentError} unless `value` (given) is valid for `spec`; see {@link checkOptions}. */
export function checkOption(spec: OptionSpec, value: unknown, vocabulary: Vocabulary, path: string): void {
  if (spec.kind === "group") return checkOptions(spec.options, value, vocabulary, path);
  if (spec.kind === "either") {
    const group = groupOf(spec);
    if (group && isPlainObject(value)) return checkOptions(group.options, value, vocabulary, path);
    if (spec.of.some((s) => s.kind !== "group" && valid(s, value))) return;
  } else if (valid(spec, value)) return;
  throw notAccepted(vocabulary, path, spec, value);
}

/** "`path` must be <what `spec` accepts>, got `value`", in `words`. */
export function notAccepted(
  words: Vocabulary,
  path: string,
  spec: OptionSpec,
  value: unknown,
): InvalidArgumentError {
  const accepts = describe(spec);
  const says: OptionMessagePart[] = [{ door: words.prefix }, { option: path }, " must be "];
  says.push({ accepts: path, text: accepts }, ", got ", { value });
  return optionError(words, { option: path, value, accepts, says }, (p) => p === path ? spec : undefined);
}

/** Whether `value` is valid for a spec that is not a group. */
function valid(spec: OptionSpec, value: unknown): boolean {
  switch (spec.kind) {
    case "integer":
      if (typeof value === "string") return spec.words?.includes(value) ?? false;
      return Number.isSafeInteger(value) && inBounds(spec, value as number) &&
        (spec.multipleOf === undefined || (value as number) % spec.multipleOf === 0);
    case "number":
      return typeof value === "number" &&
        (Number.isFinite(value) || (spec.infinity === true && value === Infinity)) &&
        inBounds(spec, value);
    case "boolean":
      return typeof value === "boolean";
    case "enum":
      return typeof value === "string" && spec.values.includes(value);
    case "string":
      return typeof value === "string" && value !== "";
    case "numbers":
      return Array.isArray(value) && value.length === spec.length &&
        value.every((x) => typeof x === "number" && Number.isFinite(x) && inBounds(spec, x)) &&
        (!spec.range || value[0] <= value[1]);
    case "custom":
      return spec.test(value);
    default:
      return false;
  }
}

function inBounds(s: { min?: number; above?: number; max?: number; below?: number }, x: number): boolean {
  return !(x < (s.min ?? -Infinity)) && !(s.above !== undefined && x <= s.above) &&
    !(x > (s.max ?? Infinity)) &&
    !(s.below !== undefined && x >= s.below);
}

/**
 * What `spec` accepts, in the words of every message: "an integer from 1 to 65536", "a number > 0 and <= 1000",
 * "one of cpu, nvdec, auto", "[min, max] with 0 < min <= max <= 1"; booleans and objects as `vocabulary` writes
 * them.
 */
export function describe(spec: OptionSpec, vocabulary?: Vocabulary): string {
  switch (spec.kind) {
    case "integer": {
      const what = spec.multipleOf === 2
        ? "an even integer"
        : spec.multipleOf !== undefined
        ? `a multiple of ${spec.multipleOf}`
        : "an integer";
      const words = spec.words?.length ? ` or ${spec.words.map((w) => `"${w}"`).join(" or ")}` : "";
      return bounded(what, spec) + words;
    }
    case "number":
      return bounded("a number", spec);
    case "boolean":
      return vocabulary ? `${vocabulary.show(true)} or ${vocabulary.show(false)}` : "true or false";
    case "enum":
      return `one of ${spec.values.join(", ")}`;
    case "string":
      return "a non-empty string";
    case "numbers": {
      if (spec.range && spec.length === 2) {
        const low = spec.above !== undefined
          ? `${spec.above} < `
          : spec.min !== undefined
          ? `${spec.min} <= `
          : "";
        const high = spec.max !== undefined ? ` <= ${spec.max}` : "";
        return `[min, max] with ${low}min <= max${high}`;
      }
      return bounded(`${spec.length} numbers`, spec);
    }
    case "group":
      return `${vocabulary?.object ?? "an object"} of ${
        Object.keys(spec.options).map(vocabulary?.key ?? String).join(", ")
      }`;
    case "either":
      return spec.of.map((s) => describe(s, vocabulary)).join(", or ");
    case "custom":
      return spec.what;
  }
}

function bounded(what: string, s: { min?: number; above?: number; max?: number; below?: number }): string {
  const low = s.above !== undefined ? `> ${s.above}` : s.min !== undefined ? `>= ${s.min}` : null;
  const high = s.below !== undefined ? `< ${s.below}` : s.max !== undefined ? `<= ${s.max}` : null;
  if (high === null) return low === null ? what : `${what} ${low}`;
  if (s.min !== undefined && s.above === undefined && s.max !== undefined && s.below === undefined) {
    return `${what} from ${s.min} to ${s.max}`;
  }
  return low === null ? `${what} ${high}` : `${what} ${low} and ${high}`;
}

/** The declared default of `spec` in words, or null when it has none. */
export function defaultText(spec: OptionSpec): string | null {
  if (spec.defaultText !== undefined) return spec.defaultText;
  if (spec.default === undefined) return null;
  return typeof spec.default === "string" ? spec.default : showJson(spec.default);
}

/**
 * The candidate closest to `typed` (a misspelled option or command), or null when none is close: the same
 * letters in another case or with other separators (`batchSize` for `batch_size`), a prefix of at least 3
 * letters, or at most 2 edits (insert, delete, replace, swap two neighbours); the first of the closest wins.
 */
export function closest(typed: string, candidates: readonly string[]): string | null {
  const norm = (s: string) => s.toLowerCase().replace(/[-_]/g, "");
  let best: string | null = null, bestD = 3;
  for (const c of candidates) {
    const d = norm(c) === norm(typed)
      ? 0
      : c.startsWith(typed) && typed.length >= 3
      ? 1
      : editDistance(typed, c);
    if (d < bestD) [best, bestD] = [c, d];
  }
  return best;
}

/** Optimal-string-alignment distance: insertions, deletions, substitutions and swaps of neighbours. */
function editDistance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.length][b.length];
}

/** The group a spec holds options in: itself, or the group among an `either`'s kinds. */
export function groupOf(spec: OptionSpec): GroupOption | undefined {
  if (spec.kind === "group") return spec;
  if (spec.kind === "either") return spec.of.find((s): s is GroupOption => s.kind === "group");
  return undefined;
}

/** Not given: undefined or null (JSON and Python have no undefined). */
export function absent(v: unknown): v is undefined | null {
  return v === undefined || v === null;
}

/** A plain object (not an array, not null). */
export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** `"x"`, `[1, 2]`, `{"a":1}`, `5`. */
function showJson(v: unknown): string {
  if (typeof v === "number") return String(v);
  if (typeof v === "function") return "a function";
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}
