/**
 * Bridges decode Workers that predate the clip contract of `clip_spec.ts`: they return the frames they found
 * (possibly fewer than `numFrames`, possibly none) with their `pts` and no `outcome`. {@link completeClip} makes
 * such a result what the contract promises (exactly `numFrames` frames, the last one repeated as padding, an
 * outcome that counts the padding) or fails the clip as the contract's Workers do: no frame in the window, or
 * more than `maxPadFraction` of the clip padding. Results that carry an `outcome` pass through untouched.
 *
 * Remove this module once every decode Worker follows the contract.
 * @module
 */

import { MediaError } from "../errors.ts";
import type { ClipSpec } from "./clip_spec.ts";
import type { DecodedClip, FilledClip } from "./collate.ts";

/** The contract's clip from a Worker result; throws a `MediaError` when the clip cannot be filled. */
export function completeClip(clip: DecodedClip, spec: ClipSpec): FilledClip {
  if (clip.outcome !== undefined) return clip as FilledClip;
  const { meta, width, height } = clip;
  const T = spec.numFrames, frameSize = width * height * 3;
  const have = Math.min(T, Math.floor(clip.data.length / frameSize));
  const window = `[${meta.start.toFixed(3)}, ${meta.end.toFixed(3)})`;
  if (have === 0) throw new MediaError(meta.path, "fill clip", `no frame in the window ${window}`);
  const padded = T - have;
  if (padded > spec.maxPadFraction * T) {
    throw new MediaError(
      meta.path,
      "fill clip",
      `only ${have} of ${T} frames in the window ${window}: ${padded} padded frames would exceed ` +
        `maxPadFraction ${spec.maxPadFraction}`,
    );
  }
  const src = Array.from(clip.pts ?? [], Number);
  const data = new Uint8Array(T * frameSize);
  data.set(clip.data.subarray(0, have * frameSize) as Uint8Array);
  for (let t = have; t < T; t++) data.copyWithin(t * frameSize, (have - 1) * frameSize, have * frameSize);
  const pts = Array.from({ length: T }, (_, t) => src[Math.min(t, have - 1)]);
  const step = spec.sampling.kind === "rate"
    ? 1 / spec.sampling.frameRate
    : have > 1
    ? (src[have - 1] - src[0]) / (have - 1)
    : meta.end - src[0];
  return {
    ...clip,
    data,
    outcome: {
      pts,
      padded,
      span: [src[0], src[have - 1] + step],
      rotation: 0,
      rotated: false,
      crop: [0, 0, 0, 0],
      flipped: false,
      decodedFrames: have,
    },
  };
}
