/** A complete `ClipSpec` for tests: the loader's defaults (its door's) with the fields a test sets. @module */
import type { ClipSpec } from "../../src/loader/clip/clip_spec.ts";
import type { ClipBase } from "../../src/loader/clip/life.ts";
import { resolveLoaderOptions } from "../../src/loader/loader_options.ts";

/** The loader's spec for the size, overridden field by field (sampling, resize, dtype, ...). */
export function testSpec(s: Partial<ClipSpec> & Pick<ClipSpec, "numFrames" | "width" | "height">): ClipSpec {
  const { numFrames, width, height, ...rest } = s;
  return {
    ...resolveLoaderOptions({ dataset: "-", batchSize: 1, clip: { numFrames, width, height } }).spec,
    ...rest,
  };
}

/** A clip's planned metadata, as the loader sets it (video 0, label 0, epoch 0). */
export function clipBase(path: string, start: number, end: number, position: number, seed: number): ClipBase {
  return { path, video: 0, label: 0, start, end, epoch: 0, position, seed };
}
