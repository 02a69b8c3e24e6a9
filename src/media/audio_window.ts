/**
 * What a clip's audio is, apart from decoding it (`audio.ts`): the {@link AudioSpec} a loader asks for, the
 * {@link ClipAudio} a clip gets with its {@link AudioStatus}, and which samples a window holds (docs/clips.md).
 * @module
 */
import { InvalidArgumentError } from "../errors.ts";

/** What audio a clip carries: `sampleRate` samples per second of each of `channels` channels. */
export interface AudioSpec {
  /** Output sample rate, Hz (e.g. 16000). */
  sampleRate: number;
  /** Output channels: 1 mixes down to mono, 2 gives stereo (FFmpeg's default layout for the count). */
  channels: number;
  /**
   * Samples per window, whatever its length: from `round(s·R)` on (the loader sets it from the clip duration,
   * so every clip of a batch has as many). Default: the window's own `round((e−s)·R)`.
   */
  samples?: number;
}

/** Why a clip's audio is (partly) zeros; `"ok"` when none of it is. See the module docs. */
export type AudioStatus = "ok" | "missing" | "short" | "error";

/** Every {@link AudioStatus}, in the order stats count them. */
export const AUDIO_STATUSES: readonly AudioStatus[] = ["ok", "missing", "short", "error"];

/** One window's audio. */
export interface ClipAudio {
  /** Whether the samples are the track's, or (partly) zeros and why. */
  status: AudioStatus;
  /** Planar `float32`: channel `c`'s samples at `[c·n, (c+1)·n)`, `n` from {@link windowSamples}. */
  samples: Float32Array<ArrayBuffer>;
  /** Why, when `status` is not `"ok"`. */
  reason?: string;
}

/** Checks an {@link AudioSpec} (`label`: where it came from); throws `InvalidArgumentError`. */
export function checkAudioSpec(spec: unknown, label = "audio"): AudioSpec {
  const s = spec as Partial<AudioSpec> | null;
  const ok = typeof s === "object" && s !== null && Number.isInteger(s.sampleRate) &&
    s.sampleRate! >= 1000 && s.sampleRate! <= 384_000 && Number.isInteger(s.channels) && s.channels! >= 1 &&
    s.channels! <= 8 && (s.samples === undefined || (Number.isInteger(s.samples) && s.samples >= 0));
  if (!ok) {
    throw new InvalidArgumentError(
      `${label}: expected { sampleRate: integer 1000–384000, channels: integer 1–8 }, got ${
        JSON.stringify(spec)
      }`,
    );
  }
  const out: AudioSpec = { sampleRate: s!.sampleRate!, channels: s!.channels! };
  if (s!.samples !== undefined) out.samples = s!.samples;
  return out;
}

/**
 * The samples a clip's audio holds for a window: at `sampleRate` R, sample `k` is at `k / R` seconds on the
 * stream's timeline, and the window `[s, e)` holds samples `round(s·R)` … `round(s·R) + round((e−s)·R)`
 * (exclusive), so every window of the same length holds the same number of samples (docs/clips.md).
 * @param sampleRate samples per second of the resampled track
 * @param s the window's start, seconds
 * @param e the window's end, seconds
 * @returns `[first, count]`: the first sample's index and how many (0 for an empty window)
 * @example
 * ```ts
 * import { audioSampleRange } from "@sluice/sluice/media";
 * audioSampleRange(16000, 1.5, 3.5); // [24000, 32000]
 * ```
 */
export function audioSampleRange(sampleRate: number, s: number, e: number): [number, number] {
  return [Math.round(s * sampleRate), Math.max(0, Math.round((e - s) * sampleRate))];
}

/** The samples `spec` gives window `[s, e)`: `[first, count]` ({@link audioSampleRange}, or `spec.samples`). */
export function windowSamples(spec: AudioSpec, s: number, e: number): [number, number] {
  const [first, count] = audioSampleRange(spec.sampleRate, s, e);
  return [first, spec.samples ?? count];
}

/** Zeros for `[s, e)`, with `status` and `reason`. */
export function silentAudio(
  spec: AudioSpec,
  s: number,
  e: number,
  status: AudioStatus,
  reason: string,
): ClipAudio {
  const n = windowSamples(spec, s, e)[1];
  return { status, samples: new Float32Array(spec.channels * n), reason };
}
