/**
 * Options as Python writes them (`src/python_options.ts`): snake_case paths and the table's flat aliases, groups
 * as dicts, unknown keywords refused at every depth with the closest valid one, an option given twice refused,
 * None as not given, and each option named back as the user wrote it.
 */
import assert from "node:assert/strict";
import {
  fromPython,
  parsePythonJson,
  PythonFloat,
  pythonKeywords,
  pythonName,
  snake,
} from "../src/python_options.ts";
import { LOADER_OPTIONS } from "../src/loader/loader_options.ts";
import { InvalidArgumentError } from "../src/errors.ts";

const read = (kw: Record<string, unknown>, also: string[] = []) =>
  fromPython(LOADER_OPTIONS, kw, "sluice.Loader: ", also);

function refused(kw: Record<string, unknown>, message: string, also: string[] = []) {
  assert.throws(
    () => read(kw, also),
    (e: Error) => e instanceof InvalidArgumentError && e.message === message,
    message,
  );
}

Deno.test("python options: flat aliases and groups' snake_case keys land on the options' paths", () => {
  const { options, vocabulary } = read({
    dataset: "d",
    batch_size: 4,
    num_frames: 8,
    clip: { dtype: "float32", max_pad_fraction: 0.2 },
    clips_per_video: 3,
    sampler: { shuffle_buffer: 0 },
    concurrency: { decode: "auto" },
    decode_less: { once_memory: 0 },
    max_failures: { rate: 0.1, after: 5 },
    on_clip_error: "skip",
    frame_rate: null,
  });
  assert.deepEqual(options, {
    dataset: "d",
    batchSize: 4,
    clip: { numFrames: 8, dtype: "float32", maxPadFraction: 0.2 },
    sampler: { clipsPerVideo: 3, shuffleBuffer: 0 },
    concurrency: { decode: "auto" },
    decodeLess: { onceMemory: 0 },
    maxFailures: { rate: 0.1, after: 5 },
    onClipError: "skip",
  });
  assert.equal(vocabulary.name("clip.numFrames"), "num_frames");
  assert.equal(vocabulary.name("clip.dtype"), 'clip["dtype"]');
  assert.equal(vocabulary.name("clip.width"), "width", "not written: the flat alias");
  assert.equal(vocabulary.name("clip.stride"), 'clip["stride"]');
  assert.equal(vocabulary.show(true), "True");
  assert.equal(read({ clip: { num_frames: 8 } }).vocabulary.name("clip.numFrames"), 'clip["num_frames"]');
});

Deno.test("python options: an unknown keyword at any depth is named with the closest valid one", () => {
  refused(
    { clips_per_vidoe: 4 },
    "sluice.Loader: unknown option clips_per_vidoe (did you mean clips_per_video?)",
  );
  refused(
    { on_clip_eror: "fail" },
    "sluice.Loader: unknown option on_clip_eror (did you mean on_clip_error?)",
  );
  refused(
    { clip: { num_frame: 4 } },
    'sluice.Loader: unknown option clip["num_frame"] (did you mean clip["num_frames"]?)',
  );
  refused(
    { concurrency: { decod: 1 } },
    'sluice.Loader: unknown option concurrency["decod"] (did you mean concurrency["decode"]?)',
  );
  refused(
    { max_failures: { aftr: 1 } },
    'sluice.Loader: unknown option max_failures["aftr"] (did you mean max_failures["after"]?)',
  );
  refused({ batchSize: 4 }, "sluice.Loader: unknown option batchSize (did you mean batch_size?)");
  refused({ log: 1 }, "sluice.Loader: unknown option log", ["copy"]); // TypeScript-only options are not keywords
  refused({ pin_memroy: true }, "sluice.Loader: unknown option pin_memroy (did you mean pin_memory?)", [
    "pin_memory",
  ]);
  refused(
    { num_frames: 4, clip: { num_frames: 5 } },
    'sluice.Loader: num_frames and clip["num_frames"] set the same option: give one of them',
  );
});

Deno.test("python options: every keyword of the table, and its name back", () => {
  const keywords = pythonKeywords(LOADER_OPTIONS);
  for (const [kw, path] of keywords) {
    assert.ok(kw === snake(kw), kw);
    assert.equal(pythonName(LOADER_OPTIONS, path), kw);
  }
  for (
    const k of [
      "batch_size",
      "num_frames",
      "width",
      "height",
      "frame_rate",
      "clips_per_video",
      "clip_duration",
      "seed",
      "layout",
      "decode",
      "backend",
      "shuffle",
      "group_by_video",
      "placement",
      "keyframe_aligned",
      "remainder",
      "rank",
      "world_size",
    ]
  ) {
    assert.ok(keywords.has(k), `the keyword ${k} (a contract)`);
  }
  for (const k of ["log", "on_report", "slots", "first_epoch", "report_interval"]) {
    assert.ok(!keywords.has(k), k);
  }
});

Deno.test("python options: a float (8.0, as json.dumps writes it) is refused where integers go, a number elsewhere", () => {
  const config = parsePythonJson(
    '{"slots": 4.0, "python": {"batch_size": 8.0, "frame_rate": 12.0, "clip": {"mean": [0.5, 1.0, 0]}, "seed": 3}}',
  ) as { slots: unknown; python: Record<string, unknown> };
  assert.equal(config.slots, 4, "outside python, numbers are numbers");
  assert.ok(config.python.batch_size instanceof PythonFloat);
  assert.equal(config.python.seed, 3);
  refused(config.python, "sluice.Loader: batch_size must be an integer from 1 to 65536, got 8.0 (a float)");
  const { batch_size: _, ...rest } = config.python;
  assert.deepEqual(read(rest).options, { clip: { frameRate: 12, mean: [0.5, 1, 0] }, sampler: { seed: 3 } });
  refused(
    (parsePythonJson('{"python": {"max_failures": {"rate": 0.5, "after": 1e1}}}') as typeof config).python,
    'sluice.Loader: max_failures["after"] must be an integer >= 0, got 1e1 (a float)',
  );
});
