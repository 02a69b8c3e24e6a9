import assert from "node:assert/strict";
import { defaultClipDuration, resolveClipSpec } from "../../src/loader/loader_options.ts";
import { InvalidArgumentError } from "../../src/errors.ts";

Deno.test("clip spec: documented defaults; sampling follows frameRate or stride; planar follows the layout", () => {
  assert.deepEqual(resolveClipSpec({ numFrames: 8, width: 112, height: 96 }), {
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
    () => resolveClipSpec({ ...base, frameRate: 10, sampling: "uniform" }),
    /frameRate applies to sampling "rate" only/,
  );
  assert.throws(
    () => resolveClipSpec({ ...base, sampling: "rate" }),
    /sampling "rate" needs clip\.frameRate/,
  );
  assert.throws(
    () => resolveClipSpec({ ...base, scale: [0.5, 0.2] }),
    /clip\.scale must be \[min, max\] with 0 < min <= max <= 1, got \[0\.5, 0\.2\]/,
  );
  assert.throws(
    () => resolveClipSpec({ ...base, dtype: "float32", std: [1, 0, 1] }),
    /clip\.std must be 3 numbers > 0/,
  );
  assert.throws(() => resolveClipSpec({ ...base, resize: "fit" as "stretch" }), InvalidArgumentError);
});

Deno.test("default window: the time the clip's frames take (slowest video), the whole video for uniform", () => {
  const spec = (o: object) => resolveClipSpec({ numFrames: 8, width: 4, height: 4, ...o });
  assert.equal(defaultClipDuration(spec({}), [25, 50, 0]), 8 / 25);
  assert.equal(defaultClipDuration(spec({}), [0]), 8 / 25, "25 fps when no rate is known");
  assert.equal(defaultClipDuration(spec({ stride: 3 }), [30]), 24 / 30);
  assert.equal(defaultClipDuration(spec({ frameRate: 4 }), [30]), 2);
  assert.equal(defaultClipDuration(spec({ sampling: "uniform" }), [30]), Infinity);
});
