/**
 * The harness's independent decode of a delivered clip's window, and the comparison. For each video: ffprobe's
 * frame list (times in presentation order), the stream's end, its coded size and display rotation; for each
 * clip: the frames its slots must show by the rule of docs/clips.md written plainly (`clip_oracle.ts`), the
 * ffmpeg CLI's frames through the clip's crop, scale, turn and flip (`-fps_mode passthrough`, `-noautorotate`),
 * and PyAV's decode and resample of its audio. A delivered clip is compared on:
 *
 * - identity: how many frames are sampled, held and padded; each slot's `frameIndex` (when the loader knows it)
 *   and time (the frame's own, or the slot's grid time);
 * - pixels: each slot against the CLI's frame, PSNR at least {@link PSNR_BOUND} for its resize mode;
 * - audio: the status the track's extent implies, and the samples within {@link AUDIO_RMS_BOUND} RMS of PyAV's
 *   (aligned within half a tick of the track's time base, the limit docs/clips.md states);
 * - label, file and rotation: those of its manifest row and of ffprobe.
 *
 * Which stream is "the" video (or audio) of a file with several is sluice's choice (`av_find_best_stream`),
 * taken from its probe: that is a policy, not a decode.
 * @module
 */
import type { ClipSpec } from "../../src/loader/clip/clip_spec.ts";
import { audioSampleRange } from "../../src/media/audio.ts";
import { probe } from "../../src/media/probe.ts";
import { asClipFrame, bytesOf, cliFrames, expectedFrames } from "../helpers/clip_oracle.ts";
import { psnr } from "../helpers/decode_oracles.ts";
import { ffprobeFrames, ffprobeInfo, ffprobeStreamEnd } from "../helpers/media.ts";
import { pyavAudio } from "../helpers/audio_oracle.ts";
import type { ClipMeta } from "../../src/loader/clip/life.ts";

/**
 * Least PSNR (dB) of a slot against the CLI's frame, per resize mode. sluice's CPU path is byte-identical to the
 * CLI's chain on these files (tests/loader/clip_truth_test.ts); the bound leaves room for swscale's paths that
 * differ by a rounding, while a neighbouring frame of the moving test pattern scores well under 30 dB.
 */
export const PSNR_BOUND: Record<ClipSpec["resize"], number> = {
  "stretch": 40,
  "short-side": 40,
  "random-crop": 40,
  "random-resized-crop": 38,
};

/** Largest RMS difference of a clip's audio from PyAV's resample of the same window (tests/media/audio_test.ts). */
export const AUDIO_RMS_BOUND = 1e-3;
/**
 * ...where the track's timestamps cannot place its samples exactly on the output's grid: the window then sits off
 * the whole-track decode by a fraction of a sample, which the resampler's filter turns into more than an interpolated shift undoes
 * (measured up to 2e-3 on the test tones); a window of the wrong place or zeros measures 0.03 and more.
 */
export const AUDIO_RMS_BOUND_COARSE = 5e-3;

/** What the oracle knows of one video. */
export interface VideoFacts {
  path: string;
  /** The video and audio streams sluice decodes (absolute indices; audio -1 when none). */
  video: number;
  audio: number;
  /** Seconds per tick of the audio stream's time base (Matroska's millisecond; 1/rate in MP4). */
  audioTick: number;
  /** Each frame's time, presentation order (ffprobe). */
  times: number[];
  /** When the stream stops being on screen (ffprobe's packets and header). */
  end: number;
  coded: [number, number];
  /** Display rotation, degrees, as ffprobe reports it (its sign and turn are sluice's too, modulo 360). */
  rotation: number;
}

/** One way a delivered clip differs from the oracle. */
export interface Difference {
  kind: "identity" | "pixels" | "audio" | "label" | "rotation";
  detail: string;
}

const facts = new Map<string, Promise<VideoFacts>>();

/** The oracle's facts of `path` (cached for the run). */
export function videoFacts(path: string): Promise<VideoFacts> {
  let f = facts.get(path);
  if (f === undefined) facts.set(path, f = readFacts(path));
  return f;
}

async function readFacts(path: string): Promise<VideoFacts> {
  const info = await probe(path);
  const video = info.video!.index;
  const { streams } = await ffprobeInfo(path);
  const st = streams.find((s) => s.index === video)!;
  const rotation = st.side_data_list?.find((d) => d.rotation !== undefined)?.rotation ?? 0;
  const audio = info.audio?.index ?? -1;
  const [num, den] = (streams.find((x) => x.index === audio)?.time_base ?? "0/1").split("/").map(Number);
  return {
    path,
    video,
    audio,
    audioTick: num / den,
    times: await frameTimes(path, video, st.time_base),
    end: await ffprobeStreamEnd(path, video),
    coded: [st.width!, st.height!],
    rotation,
  };
}

/**
 * Each frame's time, presentation order, from ffprobe's integer timestamps (its `pts_time` is rounded to the
 * microsecond, too coarse to tell a frame at a window's start from one just after it).
 */
async function frameTimes(path: string, index: number, timeBase: string): Promise<number[]> {
  const [num, den] = timeBase.split("/").map(Number);
  return (await ffprobeFrames(path, index)).map((f) => {
    const ts = f.pts ?? f.bestEffortTimestamp;
    return ts === null ? NaN : ts * (num / den);
  });
}

/** A delivered clip as the harness took it from its batch: its meta and its frames as packed or planar bytes. */
export interface TakenClip {
  meta: ClipMeta;
  /** The clip's frames in its own layout (`planar`: `[T, 3, H, W]`), bytes (float32 clips converted back). */
  frames: Uint8Array;
  /** Its audio `[channels, samples]`, with the loader's `audio`. */
  audio?: Float32Array;
  /** The batch's label for it. */
  label: number;
}

/**
 * Compares clip `c` (asked as `spec`; `row`: its manifest row's label and path) with the oracle; resolves with
 * its differences (none: it is right) and the worst PSNR of its slots.
 */
export async function compareClip(
  c: TakenClip,
  spec: ClipSpec,
  row: { path: string; label: number },
): Promise<{ differences: Difference[]; psnr: number; indexed: boolean }> {
  const out: Difference[] = [];
  const m = c.meta;
  const f = await videoFacts(m.path);
  if (m.path !== row.path || m.label !== row.label || c.label !== row.label) {
    out.push({
      kind: "label",
      detail:
        `clip of ${m.path} label ${m.label} (batch ${c.label}); its row: ${row.path} label ${row.label}`,
    });
  }
  if ((m.rotation - f.rotation) % 360 !== 0 || m.rotated !== (spec.rotate && f.rotation % 360 !== 0)) {
    out.push({
      kind: "rotation",
      detail: `rotation ${m.rotation} rotated ${m.rotated}; ffprobe ${f.rotation}`,
    });
  }
  const want = expectedFrames(f.times, [m.start, m.end], spec, f.end);
  const n = spec.numFrames, sampled = n - m.held - m.padded;
  // ffprobe gives the end as a sum of microsecond-rounded times: equal to the window's end within 1e-6 is equal
  const goesOn = f.end >= m.end - 1e-6 || f.times.some((t) => t >= m.end);
  const [held, padded] = goesOn ? [n - want.length, 0] : [0, n - want.length];
  // Where the stream's end and the window's meet within 10 ms, the end is known only to the container's
  // precision (a Matroska segment's duration counts from 0, ffprobe adds the stream's start: 2.508 or 2.515 s
  // against a window ending at 2.514 s): either split of the repeats is right.
  const edge = Math.abs(f.end - m.end) < 0.01 && m.held + m.padded === n - want.length;
  const identity = (detail: string) => out.push({ kind: "identity", detail });
  if (sampled !== want.length || (!edge && (m.held !== held || m.padded !== padded))) {
    identity(
      `${sampled} sampled, ${m.held} held, ${m.padded} padded; the oracle: frames ${want.join(",")} ` +
        `(${want.length}), ${held} held, ${padded} padded`,
    );
    return { differences: out, psnr: NaN, indexed: m.frameIndex !== null };
  }
  const full = Array.from({ length: n }, (_, k) => want[Math.min(k, want.length - 1)]);
  if (m.frameIndex !== null && m.frameIndex.some((x, k) => x !== full[k])) {
    identity(`frameIndex ${m.frameIndex.join(",")}; the oracle's ${full.join(",")}`);
  }
  const sm = spec.sampling;
  const slotTime = (k: number) =>
    sm.kind === "rate"
      ? m.start + k / sm.frameRate
      : sm.kind === "uniform"
      ? m.start + k * (m.end - m.start) / n
      : f.times[full[k]];
  for (let k = 0; k < n; k++) {
    const t = slotTime(Math.min(k, sampled - 1));
    if (!(Math.abs(m.pts[k] - t) < 1e-6)) {
      identity(`slot ${k} at ${m.pts[k]} s; the oracle's ${t} s (frames ${full.join(",")})`);
      break;
    }
  }
  const worst = await comparePixels(c, spec, f, full, out);
  return { differences: out, psnr: worst, indexed: m.frameIndex !== null };
}

async function comparePixels(
  c: TakenClip,
  spec: ClipSpec,
  f: VideoFacts,
  full: number[],
  out: Difference[],
): Promise<number> {
  const m = c.meta;
  const upTo = Math.max(...full) + 1;
  const cli = await cliFrames(
    m.path,
    spec,
    m,
    f.rotation,
    f.coded,
    spec.interpolation,
    spec.planar,
    upTo,
    f.video,
  );
  const size = 3 * spec.width * spec.height;
  if (cli.length < upTo * size) {
    out.push({ kind: "pixels", detail: `the CLI gave ${cli.length / size} frames, ${upTo} needed` });
    return NaN;
  }
  let worst = Infinity;
  for (let k = 0; k < spec.numFrames; k++) {
    const ref = bytesOf(asClipFrame(cli.subarray(full[k] * size, (full[k] + 1) * size), spec), spec);
    const db = psnr(c.frames.subarray(k * size, (k + 1) * size), ref);
    worst = Math.min(worst, db);
  }
  if (worst < PSNR_BOUND[spec.resize]) {
    out.push({
      kind: "pixels",
      detail: `worst slot ${worst.toFixed(1)} dB against the CLI's frames ${full.join(",")} (bound ${
        PSNR_BOUND[spec.resize]
      } dB for ${spec.resize}, crop ${m.crop.join(",")}${m.flipped ? ", flipped" : ""})`,
    });
  }
  return worst;
}

/**
 * Compares the audio of `clips` (all of one video, asked as `spec`) with PyAV's decode and resample of their
 * windows, in one PyAV run; each clip's differences are added to `out` under its index.
 */
export async function compareAudio(
  clips: TakenClip[],
  spec: ClipSpec,
  out: Map<TakenClip, Difference[]>,
): Promise<void> {
  const a = spec.audio!;
  const f = await videoFacts(clips[0].meta.path);
  const add = (c: TakenClip, detail: string) => {
    if (!out.has(c)) out.set(c, []);
    out.get(c)!.push({ kind: "audio", detail });
  };
  if (f.audio < 0) {
    for (const c of clips) {
      const silent = c.audio!.every((v) => v === 0);
      if (c.meta.audio !== "missing" || !silent) {
        add(c, `status ${c.meta.audio} for a file with no audio track`);
      }
    }
    return;
  }
  // A frame's place comes from its timestamp: where the track's time base cannot name each of its samples
  // (Matroska's milliseconds; 90 kHz ticks for 44.1 kHz) or its samples do not sit on the output's grid (an
  // MPEG-TS track starting at 1.416978 s), a window may sit a fraction of a sample, or up to a tick, off the
  // whole-track decode (docs/clips.md, "Limit"; a muxer's rounding adds to the demuxer's: an AAC track written
  // with its priming shifted measured 0.66 ms): PyAV's window is cut that much wider, and the best alignment
  // within it is compared, against a looser bound.
  const slack = Math.ceil(f.audioTick * a.sampleRate) + 1;
  // Windows from the clips' first samples as sluice counts them (`round(start · R)`, JS rounding): a time of
  // a half sample rounds the other way in Python (to even), a sample off.
  const windows = clips.map((c): [number, number] => {
    const k0 = audioSampleRange(a.sampleRate, c.meta.start, c.meta.end)[0] - slack;
    return [k0 / a.sampleRate, (k0 + a.samples + 2 * slack) / a.sampleRate];
  });
  const ref = await pyavAudio(f.path, a.sampleRate, a.channels, windows, f.audio);
  const ticksPerSecond = Math.round(1 / f.audioTick);
  const onGrid = Math.abs(ref.start * a.sampleRate - Math.round(ref.start * a.sampleRate)) < 1e-6;
  const exact = ticksPerSecond % ref.inRate === 0 && onGrid;
  const search = exact ? 0 : slack;
  const bound = exact ? AUDIO_RMS_BOUND : AUDIO_RMS_BOUND_COARSE;
  for (const [i, c] of clips.entries()) {
    const [first] = audioSampleRange(a.sampleRate, c.meta.start, c.meta.end);
    const inside = (k: number) => ref.first <= k && k + a.samples <= ref.first + ref.total;
    const want = inside(first) ? "ok" : "short";
    const { err, shift } = alignedRms(c.audio!, ref.windows[i], a.channels, a.samples, slack, search);
    // Within a tick of the track's edge either status is true (the window may sit that much off).
    const either = inside(first - search) !== inside(first + search) && err <= bound;
    if (c.meta.audio !== want && !either) {
      add(
        c,
        `status ${c.meta.audio}; the track holds samples [${ref.first}, ${ref.first + ref.total}) at ` +
          `${a.sampleRate} Hz, the window [${first}, ${first + a.samples}): ${want}`,
      );
    } else if (!(err <= bound)) {
      add(
        c,
        `samples ${err.toFixed(5)} RMS from PyAV's at their best alignment (${shift.toFixed(2)} samples; ` +
          `bound ${bound}, ±${search} samples; status ${c.meta.audio})`,
      );
    }
  }
}

/**
 * The least RMS difference of `got` (`[channels, n]`) from `ref` (`[channels, n + 2·slack]`, `slack` samples
 * wider on each side) over the alignments within `search` samples, and the shift that gives it. With a search,
 * the shift is found to a twentieth of a sample: a window placed by a coarse timestamp is off the whole-track
 * decode by a fraction of an output sample too, and `ref` is read there through a windowed sinc (the tracks are
 * band-limited well below half the rate).
 */
export function alignedRms(
  got: Float32Array,
  ref: Float32Array,
  channels: number,
  n: number,
  slack: number,
  search: number,
): { err: number; shift: number } {
  const width = n + 2 * slack;
  const rmsAt = (shift: number) => {
    let se = 0, count = 0;
    for (let c = 0; c < channels; c++) {
      const r = ref.subarray(c * width, (c + 1) * width);
      for (let k = 0; k < n; k++) {
        const x = at(r, slack + k + shift);
        if (Number.isNaN(x)) continue;
        se += (got[c * n + k] - x) ** 2;
        count++;
      }
    }
    return count === 0 ? 0 : Math.sqrt(se / count);
  };
  let best = { err: rmsAt(0), shift: 0 };
  for (let d = -search; d <= search; d++) {
    const err = rmsAt(d);
    if (err < best.err) best = { err, shift: d };
  }
  if (search === 0 || best.err <= AUDIO_RMS_BOUND) return best;
  const whole = best.shift;
  for (let f = -0.5; f <= 0.5; f += 0.05) {
    const err = rmsAt(whole + f);
    if (err < best.err) best = { err, shift: whole + f };
  }
  return best;
}

/** Taps each side of the interpolating sinc. */
const TAPS = 32;

/** `r` read at position `x`: the sample itself, or (between samples) a Blackman-windowed sinc; NaN near the ends. */
function at(r: Float32Array, x: number): number {
  const i = Math.round(x);
  if (Math.abs(x - i) < 1e-9) return i >= 0 && i < r.length ? r[i] : NaN;
  const lo = Math.floor(x) - TAPS + 1, hi = Math.floor(x) + TAPS;
  if (lo < 0 || hi >= r.length) return NaN;
  let v = 0;
  for (let j = lo; j <= hi; j++) {
    const u = x - j;
    const w = 0.42 + 0.5 * Math.cos((Math.PI * u) / TAPS) + 0.08 * Math.cos((2 * Math.PI * u) / TAPS);
    v += r[j] * w * (Math.sin(Math.PI * u) / (Math.PI * u));
  }
  return v;
}
