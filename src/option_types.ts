/**
 * What an option table's options are as TypeScript types, worked out from the table itself (`as const`): the
 * value each option takes ({@link ValueOf}), what a door returns once every default is filled in
 * ({@link ResolvedOf}), what a caller may give ({@link InputOf}), the declared defaults ({@link Defaults}), and
 * where an options interface written for its readers and its table disagree ({@link OptionsDisagreement}).
 * Types only: the tables and their checker are `options.ts`.
 * @module
 */

/** The value an option of spec `S` takes, as its table declares it. */
export type ValueOf<S> = S extends { kind: "integer"; words: readonly (infer W)[] } ? number | W
  : S extends { kind: "integer" | "number" } ? number
  : S extends { kind: "boolean" } ? boolean
  : S extends { kind: "enum"; values: readonly (infer V)[] } ? V
  : S extends { kind: "string" } ? string
  : S extends { kind: "numbers"; length: 2 } ? [number, number]
  : S extends { kind: "numbers"; length: 3 } ? [number, number, number]
  : S extends { kind: "numbers" } ? number[]
  : S extends { kind: "group"; options: infer T } ? ResolvedOf<T>
  : S extends { kind: "either"; of: readonly (infer O)[] } ? ValueOf<O>
  : S extends { kind: "custom"; test: (v: unknown) => v is infer T } ? T
  : unknown;

/** Whether an option of spec `S` always has a value once resolved: a default, required, or a group filled in. */
type Filled<S> = S extends { default: unknown } ? true
  : S extends { required: true } ? true
  : S extends { kind: "group"; presence: true } ? false
  : S extends { kind: "group" } ? true
  : false;

/**
 * What `resolveTable` returns for table `Tab`: every option with a default (and every group not marked
 * `presence`) filled in, the others optional.
 */
export type ResolvedOf<Tab> =
  & { -readonly [K in keyof Tab as Filled<Tab[K]> extends true ? K : never]: ValueOf<Tab[K]> }
  & { -readonly [K in keyof Tab as Filled<Tab[K]> extends true ? never : K]?: ValueOf<Tab[K]> };

/** Whether a caller must give an option of spec `S`: it is required, or a group (not `presence`) with a required option. */
type MustGive<S> = S extends { required: true } ? true
  : S extends { kind: "group"; presence: true } ? false
  : S extends { kind: "group"; options: infer T }
    ? true extends { [K in keyof T]: MustGive<T[K]> }[keyof T] ? true : false
  : false;

/** The value a caller may give an option of spec `S`: as {@link ValueOf}, with groups as {@link InputOf}. */
export type InputValueOf<S> = S extends { kind: "group"; options: infer T } ? InputOf<T>
  : S extends { kind: "either"; of: readonly (infer O)[] } ? InputValueOf<O>
  : ValueOf<S>;

/** The options a caller may give for table `Tab`: those it must give required, the others optional. */
export type InputOf<Tab> =
  & { -readonly [K in keyof Tab as MustGive<Tab[K]> extends true ? K : never]: InputValueOf<Tab[K]> }
  & { -readonly [K in keyof Tab as MustGive<Tab[K]> extends true ? never : K]?: InputValueOf<Tab[K]> };

/** Whether `X` and `Y` are the same type. */
type Same<X, Y> = (<T>() => T extends X ? 1 : 2) extends (<T>() => T extends Y ? 1 : 2) ? true : false;

/** `T` with its objects' intersections and `readonly` flattened, so that {@link Same} compares shapes. */
type Flat<T> = T extends (...args: never[]) => unknown ? T
  : T extends readonly unknown[] ? T
  : T extends object ? { -readonly [K in keyof T]: Flat<T[K]> }
  : T;

/**
 * The options on which interface `I`, written for its readers (a doc on each field), and table `Tab` disagree: a
 * key only one has, or a different type (required or optional, kind, values, groups compared whole); `never` when
 * they agree. An options interface declares `const _agrees: Record<OptionsDisagreement<I, typeof TABLE>, never> =
 * {}`, so that `deno task check` names any option the two do not write the same.
 */
export type OptionsDisagreement<I, Tab> = {
  [K in keyof I | keyof InputOf<Tab>]-?: K extends keyof I
    ? K extends keyof InputOf<Tab>
      ? Same<Flat<Pick<I, K>>, Flat<Pick<InputOf<Tab>, K>>> extends true ? never : K
    : K
    : K;
}[keyof I | keyof InputOf<Tab>];

/** The keys of `Tab` whose option declares a `default`. */
export type DefaultKeys<Tab> = {
  [K in keyof Tab]: Tab[K] extends { default: unknown } ? K : never;
}[keyof Tab];

/** `T` with the options that have a default filled in. */
export type WithDefaults<T, Tab> = T & { [K in keyof T & DefaultKeys<Tab>]-?: Exclude<T[K], undefined> };

/** The declared defaults of a table, by name. */
export type Defaults<Tab> = {
  -readonly [K in DefaultKeys<Tab>]: Tab[K] extends { default: infer D } ? D : never;
};
