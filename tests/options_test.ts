/**
 * The option schema (`src/options.ts`): the closest-name helper, the one range wording, the checker's order
 * (unknown names, then what is missing, then values), defaults declared once, the one walk that checks and
 * fills them (`resolveTable`), and the errors' fields that let each door word them for its caller.
 */
import assert from "node:assert/strict";
import {
  checkOptions,
  closest,
  defaultsOf,
  describe,
  flagVocabulary,
  optionEntries,
  type OptionTable,
  resolveTable,
  rewordOptionError,
  tsVocabulary,
  withDefaults,
} from "../src/options.ts";
import type { OptionsDisagreement } from "../src/option_types.ts";
import { InvalidArgumentError } from "../src/errors.ts";
import { deserializeError, serializeError } from "../src/error_wire.ts";
import { fromPython } from "../src/python_options.ts";

Deno.test("closest: swaps, one or two edits, other case or separators, a prefix; nothing when far", () => {
  const names = ["clips_per_video", "clip_duration", "on_clip_error", "num_frames", "batch_size", "decode"];
  assert.equal(closest("clips_per_vidoe", names), "clips_per_video"); // two letters swapped: one edit
  assert.equal(closest("on_clip_eror", names), "on_clip_error");
  assert.equal(closest("num_frame", names), "num_frames");
  assert.equal(closest("decod", names), "decode");
  assert.equal(closest("batchSize", names), "batch_size"); // the same name in another spelling
  assert.equal(closest("BATCH-SIZE", names), "batch_size");
  assert.equal(closest("clip_dur", names), "clip_duration"); // a prefix
  assert.equal(closest("colour", names), null);
  assert.equal(closest("xyz", []), null);
});

Deno.test("describe: one wording for every range", () => {
  const d = (s: object) => describe({ doc: "", ...s } as Parameters<typeof describe>[0]);
  assert.equal(d({ kind: "integer", min: 1, max: 65536 }), "an integer from 1 to 65536");
  assert.equal(d({ kind: "integer", min: 0 }), "an integer >= 0");
  assert.equal(
    d({ kind: "integer", min: 1, max: 256, words: ["auto"] }),
    'an integer from 1 to 256 or "auto"',
  );
  assert.equal(d({ kind: "integer", min: 16, max: 4096, multipleOf: 2 }), "an even integer from 16 to 4096");
  assert.equal(d({ kind: "number", above: 0, max: 1000 }), "a number > 0 and <= 1000");
  assert.equal(d({ kind: "number", above: 0, below: 1 }), "a number > 0 and < 1");
  assert.equal(d({ kind: "number" }), "a number");
  assert.equal(d({ kind: "enum", values: ["cpu", "nvdec"] }), "one of cpu, nvdec");
  assert.equal(
    d({ kind: "numbers", length: 2, above: 0, max: 1, range: true }),
    "[min, max] with 0 < min <= max <= 1",
  );
  assert.equal(d({ kind: "numbers", length: 3, above: 0 }), "3 numbers > 0");
});

const TABLE = {
  size: { kind: "integer", min: 1, required: true, doc: "size" },
  mode: { kind: "enum", values: ["a", "b"], default: "a", doc: "mode" },
  inner: {
    kind: "group",
    doc: "inner",
    options: {
      rate: { kind: "number", min: 0, max: 1, default: 0.5, doc: "rate" },
      name: { kind: "string", required: true, doc: "name" },
    },
  },
} as const satisfies OptionTable;

function fails(value: unknown, message: string) {
  assert.throws(
    () => checkOptions(TABLE, value, tsVocabulary("t: ")),
    (e: Error) => e instanceof InvalidArgumentError && e.message === message,
    message,
  );
}

Deno.test("checkOptions: unknown names first (with the closest), then what is missing (together), then values", () => {
  fails({ sise: 0 }, "t: unknown option sise (did you mean size?)");
  fails({ size: 0, inner: { nmae: "x" } }, "t: size must be an integer >= 1, got 0");
  fails({ size: 1, inner: { nmae: "x" } }, "t: unknown option inner.nmae (did you mean inner.name?)");
  fails({}, "t: size and inner.name are required");
  fails({ size: 1, inner: { name: "" } }, 't: inner.name must be a non-empty string, got ""');
  fails({ size: 1, mode: "c", inner: { name: "n" } }, 't: mode must be one of a, b, got "c"');
  fails({ size: 1, inner: [] }, "t: inner must be an object of options, got []");
  fails(null, "t: the options must be an object of options, got null");
  checkOptions(TABLE, { size: 1, mode: null, inner: { name: "n", rate: undefined } }, tsVocabulary("t: "));
});

Deno.test("defaults: declared once, filled in where a value is missing", () => {
  assert.deepEqual(defaultsOf(TABLE), { mode: "a" });
  assert.deepEqual(withDefaults(TABLE, { size: 3, mode: undefined }), { size: 3, mode: "a" });
  assert.deepEqual(withDefaults(TABLE.inner.options, { name: "n" }), { name: "n", rate: 0.5 });
  assert.deepEqual(withDefaults(TABLE, { size: 3, mode: "b" as const }), { size: 3, mode: "b" });
});

const WITH_FLAGS = {
  size: { kind: "integer", min: 1, required: true, doc: "size", flag: "size" },
  fast: { kind: "boolean", default: false, doc: "fast", flag: "fast" },
  inner: {
    kind: "group",
    doc: "inner",
    options: {
      rate: { kind: "number", min: 0, max: 1, default: 0.5, doc: "rate", flag: "inner-rate" },
      on: { kind: "boolean", default: true, doc: "on" },
    },
  },
  extra: {
    kind: "group",
    presence: true,
    doc: "extra (giving it asks for it)",
    options: { level: { kind: "integer", min: 0, default: 2, doc: "level" } },
  },
} as const satisfies OptionTable;

Deno.test("resolveTable: checks and fills every default in one walk; a presence group left out stays out", () => {
  const t = tsVocabulary("t: ");
  assert.deepEqual(resolveTable(WITH_FLAGS, { size: 2 }, t), {
    size: 2,
    fast: false,
    inner: { rate: 0.5, on: true },
  });
  const r = resolveTable(WITH_FLAGS, { size: 2, inner: { on: false }, extra: {} }, t);
  assert.deepEqual(r, { size: 2, fast: false, inner: { rate: 0.5, on: false }, extra: { level: 2 } });
  // typed from the table: defaults are there, a presence group may not be
  const rate: number = r.inner.rate;
  const level: number | undefined = r.extra?.level;
  assert.equal(rate + (level ?? 0), 2.5);
  assert.throws(() => resolveTable(WITH_FLAGS, { size: 0 }, t), /t: size must be an integer >= 1, got 0/);
});

Deno.test("checkOptions: an option required in a presence group is required only when the group is given", () => {
  const table = {
    audio: {
      kind: "group",
      presence: true,
      doc: "audio",
      options: { rate: { kind: "integer", min: 1, required: true, doc: "rate" } },
    },
    clip: {
      kind: "group",
      doc: "clip",
      options: { frames: { kind: "integer", min: 1, required: true, doc: "frames" } },
    },
  } as const satisfies OptionTable;
  const t = tsVocabulary("t: ");
  assert.deepEqual(resolveTable(table, { clip: { frames: 2 } }, t), { clip: { frames: 2 } });
  assert.throws(
    () => resolveTable(table, { clip: { frames: 2 }, audio: {} }, t),
    /^InvalidArgumentError: t: audio\.rate is required$/,
  );
  assert.throws(() => resolveTable(table, {}, t), /^InvalidArgumentError: t: clip\.frames is required$/);
  // flags, help and docs show it as its group's
  const shown = optionEntries(table).find((e) => e.path === "audio.rate")!.spec;
  assert.deepEqual([shown.required, shown.defaultText], [false, "required with audio"]);
});

Deno.test("OptionsDisagreement: names the options an interface and its table do not write the same", () => {
  const table = {
    size: { kind: "integer", min: 1, default: 1, doc: "size" },
    mode: { kind: "enum", values: ["a", "b"], doc: "mode" },
    clip: {
      kind: "group",
      doc: "clip",
      options: { frames: { kind: "integer", required: true, doc: "frames" } },
    },
  } as const satisfies OptionTable;
  interface Agrees {
    size?: number;
    mode?: "a" | "b";
    clip: { frames: number };
  }
  interface Disagrees {
    size?: string; // another type
    mode?: "a" | "b";
    clip?: { frames: number }; // optional, where the table requires a frame count
    extra?: number; // not in the table
  }
  // each line compiles only with exactly these keys: `deno task check` is the assertion
  const none: Record<OptionsDisagreement<Agrees, typeof table>, never> = {};
  const named: Record<OptionsDisagreement<Disagrees, typeof table>, true> = {
    size: true,
    clip: true,
    extra: true,
  };
  assert.deepEqual([Object.keys(none), Object.keys(named)], [[], ["size", "clip", "extra"]]);
});

Deno.test("option errors carry {option, value, accepts} and cross a Worker or a process with them", () => {
  let caught: unknown;
  try {
    resolveTable(WITH_FLAGS, { size: 2, inner: { on: "yes" } }, tsVocabulary("t: "));
  } catch (e) {
    caught = e;
  }
  const e = caught as InvalidArgumentError;
  assert.ok(e instanceof InvalidArgumentError);
  assert.equal(e.message, 't: inner.on must be true or false, got "yes"');
  assert.equal(e.option, "inner.on");
  assert.equal(e.value, "yes");
  assert.equal(e.accepts, "true or false");
  const back = deserializeError(JSON.parse(JSON.stringify(serializeError(e)))) as InvalidArgumentError;
  assert.ok(back instanceof InvalidArgumentError);
  assert.deepEqual([back.message, back.option, back.value, back.accepts], [
    e.message,
    "inner.on",
    "yes",
    e.accepts,
  ]);
  // worded again after the trip, as a door does
  const py = fromPython(WITH_FLAGS, {}, "sluice.Loader: ").vocabulary;
  assert.equal(
    rewordOptionError(back, py, WITH_FLAGS).message,
    'sluice.Loader: inner["on"] must be True or False, got "yes"',
  );
});

Deno.test("rewordOptionError: each door words the same error in its caller's vocabulary", () => {
  const err = (raw: unknown) => {
    try {
      resolveTable(WITH_FLAGS, raw, tsVocabulary("loader: "));
    } catch (e) {
      return e as InvalidArgumentError;
    }
    throw new Error("no error");
  };
  const py = (keywords: Record<string, unknown>) =>
    fromPython(WITH_FLAGS, keywords, "sluice.Loader: ").vocabulary;
  const flags = flagVocabulary(WITH_FLAGS);
  const cases: [unknown, string, string, string][] = [
    [
      { size: 1, inner: { rate: 2 } },
      "loader: inner.rate must be a number from 0 to 1, got 2",
      'sluice.Loader: inner["rate"] must be a number from 0 to 1, got 2',
      "--inner-rate must be a number from 0 to 1, got 2",
    ],
    [{ fast: true }, "loader: size is required", "sluice.Loader: size is required", "--size is required"],
    [
      { size: 1, fast: 1 },
      "loader: fast must be true or false, got 1",
      "sluice.Loader: fast must be True or False, got 1",
      "--fast must be true or false, got 1",
    ],
    [
      { size: 1, inner: 5 },
      "loader: inner must be an object of options, got 5",
      "sluice.Loader: inner must be a dict of options, got 5",
      "inner must be an object of options, got 5",
    ],
  ];
  for (const [raw, ts, python, cli] of cases) {
    assert.equal(err(raw).message, ts);
    assert.equal(rewordOptionError(err(raw), py({}), WITH_FLAGS).message, python);
    assert.equal(rewordOptionError(err(raw), flags, WITH_FLAGS).message, cli);
  }
  // the keyword as the user wrote it: flat or in its group
  assert.equal(
    rewordOptionError(err({ size: 1, inner: { rate: 2 } }), py({ inner: { rate: 2 } }), WITH_FLAGS).message,
    'sluice.Loader: inner["rate"] must be a number from 0 to 1, got 2',
  );
  // an error about no option is left as it is
  const plain = new InvalidArgumentError("loader: something else");
  assert.equal(rewordOptionError(plain, py({}), WITH_FLAGS).message, "loader: something else");
});
