/**
 * `sluice load` and `sluice serve` take the library's options as the library declares them: each flag is made
 * from its option's entry in the table (kind, range, default, doc), so the command line accepts exactly the
 * values the library accepts and, when a flag is not given, the library's own default applies.
 */
import assert from "node:assert/strict";
import { COMMANDS } from "../../src/cli/commands/all.ts";
import { parseCommandLine, UsageError } from "../../src/cli/args.ts";
import { loaderOptionsOf, optionsOfFlags } from "../../src/cli/commands/loader_options.ts";
import { LOADER_OPTIONS, resolveLoaderOptions } from "../../src/loader/loader_options.ts";
import { resolveServerConfig, SERVER_OPTIONS } from "../../src/serve/options.ts";
import {
  defaultText,
  describe,
  isPlainObject,
  optionEntries,
  type OptionSpec,
  type OptionTable,
} from "../../src/options.ts";
import { InvalidArgumentError } from "../../src/errors.ts";

const SHAPE = ["--batch-size", "2", "--frames", "4", "--width", "32", "--height", "32"];
/** Each command's flag tables, each walked whole (the server's `slots` is a flag, the loader's is not). */
const TABLES: Record<string, OptionTable[]> = {
  load: [LOADER_OPTIONS],
  preview: [LOADER_OPTIONS],
  serve: [SERVER_OPTIONS, LOADER_OPTIONS],
};
const base = (name: string) => name === "serve" ? ["d", "--socket", "/tmp/s", ...SHAPE] : ["d", ...SHAPE];
const VALID_LOADER = { dataset: "d", batchSize: 2, clip: { numFrames: 4, width: 4, height: 4 } };

/** `a` with `b` laid over it, group by group (a flag's `{clip: {numFrames}}` keeps the clip's others). */
function over(a: Record<string, unknown>, b: Record<string, unknown>): Record<string, unknown> {
  const out = { ...a };
  for (const [k, v] of Object.entries(b)) {
    out[k] = isPlainObject(v) && isPlainObject(a[k]) ? over(a[k], v) : v;
  }
  return out;
}

/** The library's own check of `options` (of `table`) over a valid loader: the loader's, or the server's. */
function libraryCheck(table: OptionTable, options: Record<string, unknown>): void {
  if (table === LOADER_OPTIONS) resolveLoaderOptions(over(VALID_LOADER, options));
  else resolveServerConfig({ socket: "/tmp/s", ...options, loader: VALID_LOADER });
}

/** The kind a flag spells: the option's own, or an `either`'s first that is not a group (a failure budget's count). */
function spelled(spec: OptionSpec): OptionSpec {
  return spec.kind === "either" ? spec.of.find((s) => s.kind !== "group")! : spec;
}

/** Text of values at and one step past the bounds the table declares for `spec`. */
function edges(spec: OptionSpec): { valid: string[]; invalid: string[] } {
  if (spec.kind === "enum") return { valid: [...spec.values], invalid: ["bogus"] };
  if (spec.kind === "integer") {
    const valid = [
      String(spec.min ?? 0),
      ...spec.max !== undefined ? [String(spec.max)] : [],
      ...spec.words ?? [],
    ];
    const invalid = ["1.5", "x"];
    if (spec.min !== undefined) invalid.push(String(spec.min - 1));
    if (spec.max !== undefined) invalid.push(String(spec.max + 1));
    return { valid, invalid };
  }
  if (spec.kind === "number") {
    const valid = [String(spec.above !== undefined ? spec.above + 0.001 : spec.min ?? 0)];
    if (spec.max !== undefined) valid.push(String(spec.max));
    const invalid = ["x"];
    if (spec.above !== undefined) invalid.push(String(spec.above));
    if (spec.min !== undefined) invalid.push(String(spec.min - 0.001));
    if (spec.max !== undefined) invalid.push(String(spec.max + 0.001));
    return { valid, invalid };
  }
  return { valid: [], invalid: [] };
}

for (const name of ["load", "preview", "serve"]) {
  const command = COMMANDS.find((c) => c.name === name)!;
  const flagged = TABLES[name].flatMap((table) =>
    optionEntries(table).filter(({ spec }) => spec.flag !== undefined).map((e) => ({
      ...e,
      kind: spelled(e.spec),
      table,
    }))
  );

  Deno.test(`sluice ${name}: every flagged option is a flag with the table's range, default and doc`, () => {
    assert.ok(flagged.length >= 16, `${flagged.length} flags`);
    for (const { path, spec, kind } of flagged) {
      const flag = command.options[spec.flag!];
      assert.ok(flag !== undefined, `--${spec.flag} (${path}) is missing`);
      assert.equal(flag.help, spec.doc, path);
      assert.equal(flag.required ?? false, spec.required ?? false, path);
      if (flag.type === "boolean") {
        assert.equal(spec.kind, "boolean");
        continue;
      }
      assert.equal(flag.defaultText ?? null, defaultText(spec), `${path}: the default shown`);
      assert.equal(
        "default" in flag && flag.default !== undefined,
        false,
        `${path}: the CLI keeps no default`,
      );
      if (flag.type === "enum") {
        assert.deepEqual(flag.values, kind.kind === "enum" ? kind.values : null, path);
      }
      if (flag.type === "integer" || flag.type === "number") {
        assert.equal(flag.type, kind.kind, path);
        const s = kind as { min?: number; max?: number; above?: number; below?: number; words?: string[] };
        assert.deepEqual([flag.min, flag.max, flag.above, flag.below, flag.words], [
          s.min,
          s.max,
          s.above,
          s.below,
          s.words,
        ], path);
      }
    }
  });

  Deno.test(`sluice ${name}: a flag accepts what the library accepts and refuses one step past it`, () => {
    for (const { path, spec, kind, table } of flagged) {
      if (spec.required) continue; // given in every command line below
      const { valid, invalid } = edges(kind);
      // what the option needs beside it (the audio group's rate)
      const needs = path === "audio.channels" ? ["--audio-rate", "16000"] : path === "cpuBudget" // a node server's budget
        ? ["--node"]
        : [];
      for (const text of valid) {
        const parsed = parseCommandLine(command, [...base(name), ...needs, `--${spec.flag}`, text]);
        assert.ok(typeof parsed === "object", `${path} ${text}`);
        const options = optionsOfFlags(table, parsed.values as Record<string, unknown>);
        const got = path.split(".").reduce(
          (o: Record<string, unknown>, k) => o?.[k] as Record<string, unknown>,
          options,
        );
        assert.equal(String(got), text, `--${spec.flag} ${text} sets ${path}`);
        if (name === "load") {
          resolveLoaderOptions(loaderOptionsOf("d", parsed.values as Record<string, unknown>));
        }
        libraryCheck(table, path === "cpuBudget" ? { ...options, node: true } : options);
      }
      for (const text of invalid) {
        assert.throws(
          () => parseCommandLine(command, [...base(name), `--${spec.flag}`, text]),
          (e: Error) =>
            e instanceof UsageError &&
            e.message === `--${spec.flag} must be ${describe(kind)}, got "${text}"`,
          `--${spec.flag} ${text}`,
        );
        if (kind.kind === "integer" || kind.kind === "number") {
          // ... and so does the library, for the same value, naming that option
          const n = Number(text);
          if (!Number.isNaN(n)) {
            // with what it needs beside it: a group's missing option is reported before a wrong value
            const beside = path === "audio.channels" ? { "audio-rate": 16000 } : {};
            const options = optionsOfFlags(table, { ...beside, [spec.flag!]: n });
            assert.throws(
              () => libraryCheck(table, options),
              (e: Error) => e instanceof InvalidArgumentError && e.message.includes(`${path} must be`),
              `the library refuses ${path} = ${text} too`,
            );
          }
        }
      }
    }
  });

  Deno.test(`sluice ${name}: a flag not given leaves its option unset, so the library's default applies`, () => {
    const parsed = parseCommandLine(command, base(name));
    assert.ok(typeof parsed === "object");
    const loader = loaderOptionsOf("d", parsed.values as Record<string, unknown>);
    assert.deepEqual(loader, { dataset: "d", batchSize: 2, clip: { numFrames: 4, width: 32, height: 32 } });
    if (name === "serve") {
      assert.deepEqual(optionsOfFlags(SERVER_OPTIONS, parsed.values as Record<string, unknown>), {
        socket: "/tmp/s",
      });
    }
  });
}
