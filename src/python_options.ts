/**
 * Options as Python writes them: the keywords of `sluice.Loader(...)`, read against an {@link OptionTable}. A
 * Python keyword is an option's path in snake_case (`buffer_size`, `clip={"dtype": …}`,
 * `concurrency={"decode": 2}`) or the flat alias the table declares (`num_frames` for `clip.numFrames`). The
 * client sends what the user passed, as given; {@link fromPython} turns it into the TypeScript spelling and
 * gives the {@link Vocabulary} that names each option as the user wrote it.
 * @module
 */

import { InvalidArgumentError } from "./errors.ts";
import {
  absent,
  closest,
  describe,
  groupOf,
  isPlainObject,
  optionEntries,
  type OptionSpec,
  type OptionTable,
  type Vocabulary,
} from "./options.ts";

/** `clipsPerVideo` → `clips_per_video`. */
export function snake(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** The Python keywords `table` accepts at the top level, each with the path of its option. */
export function pythonKeywords(table: OptionTable): Map<string, string> {
  const out = new Map<string, string>();
  for (const [k, spec] of Object.entries(table)) {
    if (spec.python !== false) out.set(typeof spec.python === "string" ? spec.python : snake(k), k);
  }
  for (const { path, spec } of optionEntries(table)) {
    if (typeof spec.python === "string") out.set(spec.python, path);
  }
  return out;
}

/**
 * How Python writes the option at `path`: its flat keyword (`num_frames`), the keyword of a top-level option
 * (`buffer_size`), or its group's with the key (`clip["dtype"]`).
 */
export function pythonName(table: OptionTable, path: string): string {
  const keys = path.split(".");
  let name = "";
  let t: OptionTable | undefined = table;
  for (const [i, k] of keys.entries()) {
    const spec: OptionSpec | undefined = t !== undefined && Object.hasOwn(t, k) ? t[k] : undefined;
    if (typeof spec?.python === "string") name = spec.python;
    else name = i === 0 ? snake(k) : `${name}["${snake(k)}"]`;
    t = spec === undefined ? undefined : groupOf(spec)?.options;
  }
  return name;
}

/**
 * A number Python sent as a float (`8.0`, `1e3`: what `json.dumps` writes for a `float`), kept apart from an
 * integer of the same value, which JSON cannot tell from it: a float is no integer (`batch_size=8.0`).
 * {@link parsePythonJson} makes them; {@link fromPython} refuses one where the option takes integers only and
 * gives every other its number.
 */
export class PythonFloat {
  /** @param value the number; @param text how the JSON wrote it (as Python shows it) */
  constructor(readonly value: number, readonly text: string) {}
}

/**
 * Parses JSON whose numbers written as floats (with a `.` or an exponent) under the top-level key `python`
 * become {@link PythonFloat}s; every other number, and everything outside `python`, parses as `JSON.parse`
 * gives it. Throws `SyntaxError` as `JSON.parse` does.
 */
export function parsePythonJson(text: string): unknown {
  type Reviver = (this: unknown, key: string, value: unknown, context?: { source?: string }) => unknown;
  const reviver: Reviver = (_key, value, context) =>
    typeof value === "number" && context?.source !== undefined && /[.eE]/.test(context.source)
      ? new PythonFloat(value, context.source)
      : value;
  const parsed = JSON.parse(text, reviver as (key: string, value: unknown) => unknown);
  if (!isPlainObject(parsed)) return plainNumbers(parsed);
  return Object.fromEntries(
    Object.entries(parsed).map(([k, v]) => [k, k === "python" ? v : plainNumbers(v)]),
  );
}

/** `value` with every {@link PythonFloat} in it replaced by its number. */
function plainNumbers(value: unknown): unknown {
  if (value instanceof PythonFloat) return value.value;
  if (Array.isArray(value)) return value.map(plainNumbers);
  if (isPlainObject(value)) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plainNumbers(v)]));
  }
  return value;
}

/** Whether `spec` takes integers and no other number (a float is refused, not rounded). */
function integersOnly(spec: OptionSpec): boolean {
  if (spec.kind === "integer") return true;
  return spec.kind === "either" && spec.of.every((s) => s.kind === "integer" || s.kind === "group");
}

/** Options read from Python's keywords: in TypeScript's spelling, and how to name them back. */
export interface PythonOptions {
  /** The options, spelled as the TypeScript API spells them (groups as objects). */
  options: Record<string, unknown>;
  /** Names each option as the user wrote it (`clip["num_frames"]` or `num_frames`), values as Python shows them. */
  vocabulary: Vocabulary;
}

/**
 * Reads `keywords` (what the user passed, None dropped) against `table`. Throws {@link InvalidArgumentError} for
 * a keyword the table does not declare, at any depth, naming it and the closest valid one (`also`: names valid
 * elsewhere, e.g. the client's own keywords, that count as suggestions), for one option given twice (flat
 * and in its group), and for a float ({@link PythonFloat}) given to an option that takes integers only. Values
 * are not checked otherwise: check the result with `checkOptions` and the vocabulary.
 */
export function fromPython(
  table: OptionTable,
  keywords: Record<string, unknown>,
  prefix: string,
  also: readonly string[] = [],
): PythonOptions {
  const options: Record<string, unknown> = {};
  const written = new Map<string, string>();
  const unknown = (name: string, typed: string, candidates: string[], nameOf: (k: string) => string) => {
    const near = closest(typed, candidates);
    return new InvalidArgumentError(
      `${prefix}unknown option ${name}${near === null ? "" : ` (did you mean ${nameOf(near)}?)`}`,
    );
  };
  const set = (path: string, value: unknown, name: string) => {
    const before = written.get(path);
    if (before !== undefined) {
      throw new InvalidArgumentError(`${prefix}${before} and ${name} set the same option: give one of them`);
    }
    written.set(path, name);
    const keys = path.split(".");
    objectAt(keys.slice(0, -1))[keys[keys.length - 1]] = value;
  };
  /** The object of the group at `keys`, made if not there yet. */
  const objectAt = (keys: string[]) => {
    let o = options;
    for (const [i, k] of keys.entries()) {
      if (o[k] === undefined) o[k] = {};
      if (!isPlainObject(o[k])) {
        const group = keys.slice(0, i + 1).join(".");
        throw new InvalidArgumentError(
          `${prefix}${written.get(group)} must be a dict of options, got ${showPython(o[k])}`,
        );
      }
      o = o[k];
    }
    return o;
  };
  const read = (path: string, spec: OptionSpec, value: unknown, name: string) => {
    const group = groupOf(spec);
    if (value instanceof PythonFloat && integersOnly(spec)) {
      throw new InvalidArgumentError(
        `${prefix}${name} must be ${describe(spec, PYTHON_WORDS)}, got ${value.text} (a float)`,
      );
    }
    if (group === undefined || !isPlainObject(value)) return set(path, plainNumbers(value), name);
    const keys = new Map<string, string>();
    for (const [k, s] of Object.entries(group.options)) if (s.python !== false) keys.set(snake(k), k);
    objectAt(path.split("."));
    for (const [k, v] of Object.entries(value)) {
      const key = keys.get(k);
      const inner = `${name}["${k}"]`;
      if (key === undefined) throw unknown(inner, k, [...keys.keys()], (n) => `${name}["${n}"]`);
      if (!absent(v)) read(`${path}.${key}`, group.options[key], v, inner);
    }
  };
  const top = pythonKeywords(table);
  for (const [k, v] of Object.entries(keywords)) {
    const path = top.get(k);
    if (path === undefined) throw unknown(k, k, [...top.keys(), ...also], (n) => n);
    if (absent(v)) continue;
    let spec: OptionSpec | undefined;
    for (const p of path.split(".")) spec = (spec === undefined ? table : groupOf(spec)!.options)[p];
    read(path, spec!, v, k);
  }
  return {
    options,
    vocabulary: {
      prefix,
      name: (path) => written.get(path) ?? pythonName(table, path),
      show: showPython,
      object: "a dict",
      key: snake,
    },
  };
}

/** Python's words for values and objects, for a description of an option (`pythonOptionList`). */
export const PYTHON_WORDS: Vocabulary = {
  prefix: "",
  name: (path) => path,
  show: (v) => showPython(v),
  object: "a dict",
  key: snake,
};

/** A value as Python prints it: `True`, `None`, `"fail"`, `[0.5, 0.2]`. */
function showPython(v: unknown): string {
  if (v === true) return "True";
  if (v === false) return "False";
  if (v === null || v === undefined) return "None";
  if (Array.isArray(v)) return `[${v.map(showPython).join(", ")}]`;
  if (isPlainObject(v)) {
    return `{${Object.entries(v).map(([k, x]) => `"${k}": ${showPython(x)}`).join(", ")}}`;
  }
  return typeof v === "string" ? JSON.stringify(v) : String(v);
}
