/**
 * A tuning search space: named parameters, each an integer range ({@link int}) or a list of values
 * ({@link choice}). A parameter that is a stage's concurrency says so (`int(1, 16, { stage: "demux" })`), which
 * makes `sluice tune` measure that stage's contention curve and report its per-item latency.
 *
 * Spaces are plain data (JSON), so the tuner reads them from a trial subprocess without importing the module.
 *
 * @example
 * ```ts
 * import { choice, int } from "@sluice/sluice/tune";
 *
 * const space = {
 *   demuxConcurrency: int(1, 16, { stage: "demux" }),
 *   subclipSec: choice([0.5, 1, 2]),
 * };
 * ```
 * @module
 */

import { InvalidArgumentError } from "../errors.ts";

/** What every parameter may say about itself. */
export interface ParamOptions<T> {
  /** The value a search starts from when the module gives no `start` (default: an int's `min`, a choice's first). */
  default?: T;
  /** How the report names it ("demux concurrency"); default: the stage's, or the key split into words. */
  label?: string;
}

/** An integer from `min` to `max`, inclusive. */
export interface IntParam extends ParamOptions<number> {
  /** Discriminates the parameter kinds. */
  readonly kind: "int";
  /** Smallest value (inclusive). */
  readonly min: number;
  /** Largest value (inclusive). */
  readonly max: number;
  /** The pipeline stage whose concurrency this is (its contention curve is measured). */
  readonly stage?: string;
}

/** A value JSON can carry. */
export type ChoiceValue = number | string | boolean;

/** One of a list of values. */
export interface ChoiceParam<T extends ChoiceValue = ChoiceValue> extends ParamOptions<T> {
  /** Discriminates the parameter kinds. */
  readonly kind: "choice";
  /** The values, in the order the search tries them. */
  readonly values: readonly T[];
}

/** A parameter of a search space. */
export type Param = IntParam | ChoiceParam;

/** A search space: parameter name → parameter. */
export type SearchSpace = Record<string, Param>;

/** The value type of a parameter. */
export type ValueOfParam<P> = P extends IntParam ? number : P extends ChoiceParam<infer T> ? T : never;

/** One configuration of a space: a value for every parameter. */
export type ConfigOf<S extends SearchSpace> = { [K in keyof S]: ValueOfParam<S[K]> };

/** A configuration of an unknown space. */
export type Config = Record<string, ChoiceValue>;

/**
 * An integer parameter from `min` to `max`, both inclusive. With `stage`, it is that pipeline stage's
 * concurrency (tasks run at once): the search then measures the stage's contention curve (the values 1, 2, 4,
 * 8, 16 within the range), and prefers fewer tasks when they are as fast within the noise.
 * @param min the smallest value (a safe integer)
 * @param max the largest value (a safe integer, at least `min`)
 * @param opts `stage`: the name of the stage whose concurrency this is (as its statistics name it, e.g.
 * `"demux"`); `default`: the value a search starts from when the target gives no `start` (default `min`);
 * `label`: how the report names it (default: the stage's, or the key split into words)
 * @returns the parameter, plain JSON data, to put in a {@link SearchSpace}
 * @throws {InvalidArgumentError} when `min` or `max` is not a safe integer, `min > max`, or `default` is
 * outside the range
 * @example A stage's concurrency and a plain integer
 * ```ts
 * import { int } from "@sluice/sluice/tune";
 *
 * const space = {
 *   decodeConcurrency: int(1, 16, { stage: "decode", default: 2 }),
 *   prefetchBatches: int(1, 8, { label: "batches prefetched" }),
 * };
 * ```
 */
export function int(
  min: number,
  max: number,
  opts: ParamOptions<number> & { stage?: string } = {},
): IntParam {
  if (!Number.isSafeInteger(min) || !Number.isSafeInteger(max) || min > max) {
    throw new InvalidArgumentError(`int(${min}, ${max}): need integers with min <= max`);
  }
  const p: IntParam = { kind: "int", min, max, ...opts };
  if (p.default !== undefined) checkValue("int()", p, p.default);
  return p;
}

/**
 * A parameter taking one of `values`: numbers, strings or booleans (values a trial subprocess receives as
 * JSON). The descent tries each value other than the best's in turn, in the order given.
 * @param values the values, at least one, none repeated; numbers must be finite
 * @param opts `default`: the value a search starts from when the target gives no `start` (default: the first
 * of `values`); `label`: how the report names it (default: the key split into words)
 * @returns the parameter, plain JSON data, to put in a {@link SearchSpace}; its value type is the union of
 * `values`, so `create` sees e.g. `"inprocess" | "subprocess"`
 * @throws {InvalidArgumentError} when `values` is empty, repeats a value, holds something other than a finite
 * number, a string or a boolean, or `default` is not one of them
 * @example
 * ```ts
 * import { choice } from "@sluice/sluice/tune";
 *
 * const space = {
 *   backend: choice(["inprocess", "subprocess"]),
 *   subclipSec: choice([0.5, 1, 2], { default: 1 }),
 * };
 * ```
 */
export function choice<const T extends ChoiceValue>(
  values: readonly T[],
  opts: ParamOptions<T> = {},
): ChoiceParam<T> {
  if (values.length === 0) throw new InvalidArgumentError("choice([]): need at least one value");
  for (const v of values) {
    if (
      !["number", "string", "boolean"].includes(typeof v) || (typeof v === "number" && !Number.isFinite(v))
    ) {
      throw new InvalidArgumentError(
        `choice(): ${JSON.stringify(v)} is not a finite number, a string or a boolean`,
      );
    }
  }
  if (new Set(values).size !== values.length) throw new InvalidArgumentError("choice(): values repeat");
  const p: ChoiceParam<T> = { kind: "choice", values: [...values], ...opts };
  if (p.default !== undefined) checkValue("choice()", p, p.default);
  return p;
}

/** Checks a space read from JSON (a module's, through a subprocess): every parameter well formed. */
export function checkSpace(space: unknown): SearchSpace {
  if (typeof space !== "object" || space === null || Object.keys(space).length === 0) {
    throw new InvalidArgumentError("the search space must be an object with at least one parameter");
  }
  for (const [name, p] of Object.entries(space as Record<string, Param>)) {
    try {
      if (p?.kind === "int") int(p.min, p.max, { default: p.default });
      else if (p?.kind === "choice") choice(p.values, { default: p.default });
      else throw new InvalidArgumentError(`not an int() or choice() parameter`);
    } catch (e) {
      throw new InvalidArgumentError(`search space parameter "${name}": ${(e as Error).message}`);
    }
  }
  return space as SearchSpace;
}

/** The starting configuration: `start`'s values, else each parameter's default (an int's min, a choice's first). */
export function startConfig(space: SearchSpace, start: Partial<Config> = {}): Config {
  for (const k of Object.keys(start)) {
    if (!(k in space)) throw new InvalidArgumentError(`start: "${k}" is not a parameter of the search space`);
  }
  const config: Config = {};
  for (const [name, p] of Object.entries(space)) {
    const v = start[name] ?? p.default ?? (p.kind === "int" ? p.min : p.values[0]);
    checkValue(`start.${name}`, p, v);
    config[name] = v;
  }
  return config;
}

/** Throws unless `v` is a value of `p`. */
export function checkValue(what: string, p: Param, v: unknown): void {
  const ok = p.kind === "int"
    ? Number.isSafeInteger(v) && (v as number) >= p.min && (v as number) <= p.max
    : (p.values as readonly unknown[]).includes(v);
  if (!ok) {
    const range = p.kind === "int"
      ? `an integer from ${p.min} to ${p.max}`
      : `one of ${JSON.stringify(p.values)}`;
    throw new InvalidArgumentError(`${what} must be ${range}, got ${JSON.stringify(v)}`);
  }
}

/** A stable text key of a configuration (parameters in the space's order). */
export function configKey(space: SearchSpace, config: Config): string {
  return Object.keys(space).map((k) => `${k}=${config[k]}`).join(",");
}

/** How the report names a parameter: its label, "`stage` concurrency", or its key split into words. */
export function paramLabel(name: string, p: Param): string {
  if (p.label !== undefined) return p.label;
  if (p.kind === "int" && p.stage !== undefined) return `${p.stage} concurrency`;
  return name.replace(/([a-z0-9])([A-Z])/g, "$1 $2").toLowerCase();
}

/** The parameters that are stage concurrencies, in the space's order. */
export function stageParams(space: SearchSpace): { name: string; param: IntParam }[] {
  return Object.entries(space).flatMap(([name, p]) =>
    p.kind === "int" && p.stage !== undefined ? [{ name, param: p }] : []
  );
}
