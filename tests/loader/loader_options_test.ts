/**
 * The loader's options, declared once (`LOADER_OPTIONS`) and resolved at the door (`resolveLoaderOptions`): it
 * follows the table for every option (its bounds accepted, one step past them refused with one line naming the
 * option and its range), an option nobody declared is refused at every level with the closest declared name,
 * defaults are filled in, and the errors carry the option so that each door words them in its caller's language
 * (TypeScript's `clip.numFrames`, Python's `num_frames` / `clip["dtype"]`, the command line's `--frames`).
 */
import assert from "node:assert/strict";
import {
  LOADER_OPTIONS,
  type LoaderOptions,
  type ResolvedLoaderOptions,
  resolveLoaderOptions,
} from "../../src/loader/loader_options.ts";
import { CLIP_OPTIONS, defaultClipDuration } from "../../src/loader/clip_options.ts";
import type { BatchLayout } from "../../src/loader/batch/collate.ts";
import { InvalidArgumentError } from "../../src/errors.ts";
import {
  describe,
  flagVocabulary,
  optionEntries,
  type OptionSpec,
  rewordOptionError,
  type Vocabulary,
} from "../../src/options.ts";
import { fromPython } from "../../src/python_options.ts";

/** The loader's door; with `words`, its error worded as another door words it. */
function checkLoaderOptions(opts: LoaderOptions, words?: Vocabulary): ResolvedLoaderOptions {
  try {
    return resolveLoaderOptions(opts);
  } catch (e) {
    throw words === undefined ? e : rewordOptionError(e, words, LOADER_OPTIONS);
  }
}

/** The clip spec the door makes of `clip`. */
function resolveClipSpec(clip: LoaderOptions["clip"], layout?: BatchLayout) {
  return resolveLoaderOptions({ dataset: "d", batchSize: 1, clip, layout }).spec;
}

const BASE: LoaderOptions = { dataset: "unused", batchSize: 2, clip: { numFrames: 8, width: 4, height: 4 } };

/** `BASE` with the option at `path` set to `value` (and what its cross-option rules need around it). */
function withOption(path: string, value: unknown): LoaderOptions {
  const o = structuredClone(BASE) as unknown as Record<string, Record<string, unknown>>;
  const keys = path.split(".");
  let at: Record<string, unknown> = o;
  for (const k of keys.slice(0, -1)) at = (at[k] ??= {}) as Record<string, unknown>;
  at[keys[keys.length - 1]] = value;
  if (path === "clip.mean" || path === "clip.std") o.clip.dtype = "float32";
  if (path === "clip.sampling" && value === "rate") o.clip.frameRate = 10;
  if (path === "clip.sampling" && value === "stride") o.clip.stride = 2;
  if (path === "sampler.rank" && typeof value === "number") o.sampler.worldSize = value + 1;
  if (path === "maxFailures.rate") o.maxFailures.after = 1;
  if (path === "maxFailures.after") o.maxFailures.rate = 0.5;
  if (path === "audio.channels") o.audio.sampleRate = 16000;
  return o as unknown as LoaderOptions;
}

function rejects(
  opts: unknown,
  message: string | RegExp,
  vocabulary?: Parameters<typeof checkLoaderOptions>[1],
) {
  assert.throws(
    () => checkLoaderOptions(opts as LoaderOptions, vocabulary),
    (e: Error) => {
      assert.ok(e instanceof InvalidArgumentError, `${e}`);
      if (typeof message === "string") assert.equal(e.message, message);
      else assert.match(e.message, message);
      return true;
    },
  );
}

/** Values just inside and just outside a spec's bounds (the table's own numbers, not copies of them). */
function edges(spec: OptionSpec): { valid: unknown[]; invalid: unknown[] } {
  switch (spec.kind) {
    case "integer": {
      const valid: unknown[] = [
        spec.min ?? 0,
        ...spec.max !== undefined ? [spec.max] : [],
        ...spec.words ?? [],
      ];
      const invalid: unknown[] = [(spec.min ?? 0) + 0.5, "many"];
      if (spec.min !== undefined) invalid.push(spec.min - 1);
      if (spec.max !== undefined) invalid.push(spec.max + 1);
      return { valid, invalid };
    }
    case "number": {
      const low = spec.above ?? spec.min ?? 0, high = spec.below ?? spec.max;
      const valid: unknown[] = [spec.above !== undefined ? spec.above + 1e-6 : low];
      if (spec.max !== undefined) valid.push(spec.max);
      const invalid: unknown[] = ["1", NaN];
      if (spec.above !== undefined) invalid.push(spec.above);
      else if (spec.min !== undefined) invalid.push(spec.min - 1e-6);
      if (spec.below !== undefined) invalid.push(spec.below);
      else if (high !== undefined) invalid.push(high + 1e-6);
      return { valid, invalid };
    }
    case "boolean":
      return { valid: [true, false], invalid: [1, "yes"] };
    case "enum":
      return { valid: [...spec.values], invalid: ["bogus", 1] };
    case "numbers": {
      const x = spec.above !== undefined ? spec.above + 0.01 : spec.min ?? 0;
      const hi = spec.max ?? x + 1;
      const valid = [Array.from({ length: spec.length }, (_, i) => (i === spec.length - 1 ? hi : x))];
      const invalid: unknown[] = [Array(spec.length + 1).fill(x), [...Array(spec.length - 1).fill(x), "1"]];
      if (spec.above !== undefined) invalid.push(Array(spec.length).fill(spec.above));
      if (spec.max !== undefined) invalid.push(Array(spec.length).fill(spec.max + 0.5));
      if (spec.range) invalid.push([hi, x]);
      return { valid, invalid };
    }
    default:
      return { valid: [], invalid: [] };
  }
}

const CHECKED = optionEntries(LOADER_OPTIONS).filter(({ spec }) =>
  ["integer", "number", "boolean", "enum", "numbers"].includes(spec.kind)
);

Deno.test("loader options: the table declares kinds the checker knows, with a doc line each", () => {
  assert.ok(CHECKED.length >= 45, `${CHECKED.length} options`);
  for (const { path, spec } of optionEntries(LOADER_OPTIONS)) {
    assert.ok(spec.doc.length > 5, `${path}: no doc`);
    if (spec.default !== undefined && spec.kind !== "group" && spec.kind !== "either") {
      // A declared default is itself valid.
      checkLoaderOptions(withOption(path, spec.default));
    }
  }
});

for (const { path, spec } of CHECKED) {
  Deno.test(`loader options: ${path} accepts its bounds and refuses one step past them, naming its range`, () => {
    const { valid, invalid } = edges(spec);
    for (const v of valid) checkLoaderOptions(withOption(path, v));
    for (const v of invalid) {
      const shown = typeof v === "number" ? String(v) : JSON.stringify(v);
      rejects(withOption(path, v), `loader: ${path} must be ${describe(spec)}, got ${shown}`);
    }
  });
}

Deno.test("loader options: an option nobody declared is refused at every level with the closest declared name", () => {
  const cases: [Record<string, unknown>, string][] = [
    [{ batchSzie: 2 }, "batchSzie (did you mean batchSize?)"],
    [{ clip: { numFrame: 8, width: 4, height: 4 } }, "clip.numFrame (did you mean clip.numFrames?)"],
    [{ sampler: { clipsPerVidoe: 4 } }, "sampler.clipsPerVidoe (did you mean sampler.clipsPerVideo?)"],
    [{ concurrency: { decod: 1 } }, "concurrency.decod (did you mean concurrency.decode?)"],
    [{ decodeLess: { onceMemroy: 1 } }, "decodeLess.onceMemroy (did you mean decodeLess.onceMemory?)"],
    [{ fetch: { retires: 1 } }, "fetch.retires (did you mean fetch.retries?)"],
    [{ fetch: { signal: new AbortController().signal } }, "fetch.signal"], // a fetch option, not a loader's
    [
      { autoConcurrency: { intervalMS: 1 } },
      "autoConcurrency.intervalMS (did you mean autoConcurrency.intervalMs?)",
    ],
    [{ maxFailures: { rate: 0.5, aftr: 3 } }, "maxFailures.aftr (did you mean maxFailures.after?)"],
    [{ colour: "red" }, "colour"],
  ];
  for (const [extra, named] of cases) {
    const opts = { ...BASE, ...extra };
    if ("clip" in extra) opts.clip = extra.clip as LoaderOptions["clip"];
    rejects(opts, `loader: unknown option ${named}`);
  }
});

Deno.test("loader options: required options are named together; undefined and null count as not given", () => {
  rejects({ dataset: "d" }, "loader: batchSize, clip.numFrames, clip.width and clip.height are required");
  rejects({ ...BASE, clip: { width: 4, height: 4 } }, "loader: clip.numFrames is required");
  checkLoaderOptions({ ...BASE, layout: undefined, sampler: { seed: undefined } });
  checkLoaderOptions({ ...BASE, layout: null } as unknown as LoaderOptions);
  rejects({ ...BASE, clip: 5 }, "loader: clip must be an object of options, got 5");
});

Deno.test("loader options: failure budgets are a count or a rate; concurrency takes auto", () => {
  checkLoaderOptions({ ...BASE, maxFailures: 3 });
  checkLoaderOptions({ ...BASE, maxFailures: { rate: 0.2, after: 10 } });
  rejects(
    { ...BASE, maxFailures: -1 },
    /^loader: maxFailures must be an integer >= 0, or an object of rate, after/,
  );
  rejects(
    { ...BASE, maxFailures: { rate: 2, after: 1 } },
    "loader: maxFailures.rate must be a number from 0 to 1, got 2",
  );
  rejects({ ...BASE, maxFailures: { rate: 0.5 } }, "loader: maxFailures.after is required");
  checkLoaderOptions({ ...BASE, concurrency: { fetch: "auto", demux: 2, decode: "auto" } });
});

Deno.test("loader options: rules across options speak each caller's language", () => {
  const clip = (c: object) => ({ ...BASE, clip: { ...BASE.clip, ...c } });
  // TypeScript
  rejects(
    clip({ frameRate: 10, sampling: "uniform" }),
    'loader: clip.frameRate applies to clip.sampling "rate" only (sampling is "uniform")',
  );
  rejects(clip({ sampling: "rate" }), 'loader: clip.sampling "rate" needs clip.frameRate');
  rejects(clip({ mean: [0, 0, 0] }), 'loader: clip.mean and clip.std apply to clip.dtype "float32" only');
  rejects(
    { ...BASE, slots: 2, ordered: false },
    "loader: slots needs ordered output (each clip's place is planned)",
  );
  rejects(
    { ...BASE, sampler: { rank: 2, worldSize: 2 } },
    "loader: sampler.rank must be an integer from 0 to 1 (sampler.worldSize is 2), got 2",
  );
  // Python: the keywords as the user wrote them, flat or in their group
  const py = (keywords: Record<string, unknown>) =>
    fromPython(LOADER_OPTIONS, {
      dataset: "d",
      batch_size: 2,
      num_frames: 8,
      width: 4,
      height: 4,
      ...keywords,
    }, "sluice.Loader: ");
  const checkPy = (keywords: Record<string, unknown>, message: string) => {
    const { options, vocabulary } = py(keywords);
    rejects(options, message, vocabulary);
  };
  checkPy(
    { frame_rate: 10, clip: { sampling: "uniform" } },
    'sluice.Loader: frame_rate applies to clip["sampling"] "rate" only (sampling is "uniform")',
  );
  checkPy({ clip: { sampling: "stride" } }, 'sluice.Loader: clip["sampling"] "stride" needs clip["stride"]');
  checkPy({ num_frames: 0 }, "sluice.Loader: num_frames must be an integer from 1 to 10000, got 0");
  checkPy(
    { clip: { dtype: "f32" } },
    'sluice.Loader: clip["dtype"] must be one of uint8, float32, got "f32"',
  );
  checkPy({ shuffle: "no" }, 'sluice.Loader: shuffle must be True or False, got "no"');
  checkPy({ sampler: { shuffle: 1 } }, 'sluice.Loader: sampler["shuffle"] must be True or False, got 1');
  checkPy(
    { rank: 3, world_size: 2 },
    "sluice.Loader: rank must be an integer from 0 to 1 (world_size is 2), got 3",
  );
  checkPy({ clip: 5 }, "sluice.Loader: clip must be a dict of options, got 5");
  // The command line: flags
  rejects(
    clip({ numFrames: 0 }),
    "--frames must be an integer from 1 to 10000, got 0",
    flagVocabulary(LOADER_OPTIONS),
  );
});

Deno.test("clip spec: defaults come from the table; sampling follows frameRate or stride; planar follows the layout", () => {
  const spec = resolveClipSpec({ numFrames: 8, width: 112, height: 96 });
  assert.deepEqual(spec, {
    numFrames: 8,
    sampling: { kind: "consecutive" },
    width: 112,
    height: 96,
    resize: "stretch",
    scale: [0.08, 1],
    ratio: [3 / 4, 4 / 3],
    flipProbability: 0,
    interpolation: "bilinear",
    planar: false,
    dtype: "uint8",
    mean: [0, 0, 0],
    std: [1, 1, 1],
    rotate: true,
    maxPadFraction: 0.5,
  });
  for (const [k, s] of Object.entries(CLIP_OPTIONS)) {
    if ("default" in s) assert.deepEqual(spec[k as keyof typeof spec], s.default, k);
  }
  const base = { numFrames: 8, width: 4, height: 4 };
  assert.deepEqual(resolveClipSpec({ ...base, frameRate: 12.5 }).sampling, { kind: "rate", frameRate: 12.5 });
  assert.deepEqual(resolveClipSpec({ ...base, stride: 4 }).sampling, { kind: "stride", stride: 4 });
  assert.deepEqual(resolveClipSpec({ ...base, sampling: "uniform" }).sampling, { kind: "uniform" });
  assert.equal(resolveClipSpec(base, "BCTHW").planar, true);
  const f = resolveClipSpec({
    ...base,
    dtype: "float32",
    mean: [0.485, 0.456, 0.406],
    std: [0.229, 0.224, 0.225],
  });
  assert.deepEqual([f.mean, f.std], [[0.485, 0.456, 0.406], [0.229, 0.224, 0.225]]);
  assert.throws(
    () => resolveClipSpec({ ...base, scale: [0.5, 0.2] }),
    /^InvalidArgumentError: loader: clip\.scale must be \[min, max\] with 0 < min <= max <= 1, got \[0\.5,0\.2\]$/,
  );
  assert.deepEqual(
    resolveClipSpec(base),
    resolveClipSpec({ ...base, mean: undefined }),
    "undefined is not given",
  );
});

Deno.test("default window: the time the clip's frames take (slowest video), the whole video for uniform", () => {
  const spec = (o: object) => resolveClipSpec({ numFrames: 8, width: 4, height: 4, ...o });
  assert.equal(defaultClipDuration(spec({}), [25, 50, 0]), 8 / 25);
  assert.equal(defaultClipDuration(spec({}), [0]), 8 / 25, "25 fps when no rate is known");
  assert.equal(defaultClipDuration(spec({ stride: 3 }), [30]), 24 / 30);
  assert.equal(defaultClipDuration(spec({ frameRate: 4 }), [30]), 2);
  assert.equal(defaultClipDuration(spec({ sampling: "uniform" }), [30]), Infinity);
});

Deno.test("loader options: audio needs its sample rate, named as the caller wrote it", () => {
  rejects({ ...BASE, audio: { channels: 2 } }, "loader: audio.sampleRate is required");
  checkLoaderOptions({ ...BASE, audio: { sampleRate: 16000 } } as LoaderOptions);
});

Deno.test("loader options: audio with uniform clips of whole videos is refused by the check, in the caller's words", () => {
  // It used to pass the check and fail in the loader's plan, after a served loader had started, naming
  // sampler.clipDurationSec to a Python user (found trying sluice.Loader(..., audio=..., clip={"sampling": ...})).
  const uniform = { ...BASE, clip: { ...BASE.clip, sampling: "uniform" }, audio: { sampleRate: 16000 } };
  rejects(
    uniform,
    "loader: audio needs clips of one duration: set sampler.clipDurationSec (uniform sampling takes whole videos)",
  );
  const { options, vocabulary } = fromPython(LOADER_OPTIONS, {
    dataset: "d",
    batch_size: 2,
    num_frames: 8,
    width: 4,
    height: 4,
    clip: { sampling: "uniform" },
    audio: { sample_rate: 16000 },
  }, "sluice.Loader: ");
  rejects(
    options,
    "sluice.Loader: audio needs clips of one duration: set clip_duration (uniform sampling takes whole videos)",
    vocabulary,
  );
  checkLoaderOptions({ ...uniform, sampler: { clipDurationSec: 2 } } as LoaderOptions);
});

Deno.test("loader options: resolved once, every default in force, what they imply worked out", () => {
  const before = Deno.env.get("LOCAL_RANK");
  Deno.env.set("LOCAL_RANK", "3");
  let o: ResolvedLoaderOptions;
  try {
    o = resolveLoaderOptions({ ...BASE, sampler: { clipsPerVideo: 2 }, audio: { sampleRate: 8000 } });
    assert.equal(o.device, 3, "$LOCAL_RANK");
    Deno.env.set("LOCAL_RANK", "x");
    assert.throws(() => resolveLoaderOptions(BASE), /loader: environment LOCAL_RANK="x" is not an integer/);
    Deno.env.set("LOCAL_RANK", "5000");
    assert.throws(
      () => resolveLoaderOptions(BASE),
      /^InvalidArgumentError: loader: device must be an integer from 0 to 1023, got 5000$/,
    );
  } finally {
    if (before === undefined) Deno.env.delete("LOCAL_RANK");
    else Deno.env.set("LOCAL_RANK", before);
  }
  // defaults, groups included; a group asked for by being given (audio) with its own defaults
  assert.deepEqual([o.layout, o.bufferSize, o.ordered, o.onClipError], ["BTHWC", 3, true, "replace"]);
  assert.deepEqual(o.audio, { sampleRate: 8000, channels: 1 });
  assert.equal(resolveLoaderOptions(BASE).audio, undefined);
  assert.deepEqual(o.decodeLess, { skip: true, once: true, onceMemory: 256 * 2 ** 20, threads: true });
  assert.deepEqual(o.fetch, {
    retries: 3,
    backoffMs: 200,
    connectTimeoutMs: 5000,
    idleTimeoutMs: 5000,
    timeoutMs: 30000,
    deadlineMs: 30000,
  });
  assert.deepEqual(o.maxFailures, { rate: 0.5, after: 20 });
  // what no door knows yet is null until the plan (the clip window) or the decoder (its concurrency) decides it
  assert.equal(o.sampler.clipDurationSec, null);
  assert.deepEqual(o.concurrency, { fetch: 8, demux: 1, decode: null });
  assert.equal(o.autoConcurrency.cpuBudget, 2 * navigator.hardwareConcurrency);
  assert.equal(o.sampler.clipsPerVideo, 2);
  assert.equal(o.sampler.shuffleBuffer, 64, "max(64, 8 × clips per video)");
  assert.deepEqual(o.spec, resolveClipSpec(BASE.clip));
  // the error says which option, what was given and what it accepts
  try {
    resolveLoaderOptions({ ...BASE, bufferSize: 0 });
    assert.fail("accepted");
  } catch (e) {
    const err = e as InvalidArgumentError;
    assert.deepEqual([err.option, err.value, err.accepts], ["bufferSize", 0, "an integer from 1 to 1024"]);
  }
});
