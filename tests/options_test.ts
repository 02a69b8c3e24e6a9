/**
 * The option schema (`src/options.ts`): the closest-name helper, the one range wording, the checker's order
 * (unknown names, then what is missing, then values), defaults declared once.
 */
import assert from "node:assert/strict";
import {
  checkOptions,
  closest,
  defaultsOf,
  describe,
  type OptionTable,
  tsVocabulary,
  withDefaults,
} from "../src/options.ts";
import { InvalidArgumentError } from "../src/errors.ts";

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
