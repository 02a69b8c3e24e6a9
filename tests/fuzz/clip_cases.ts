/**
 * Fuzz cases through the loader's own clip path (issue 30): a video's clip windows are demuxed as the loader
 * does (`demuxClips`, decode once across overlapping clips included) and decoded as its decode Workers do
 * (`decodeClip`, one pass for a clip and those it serves), from a mutated file (`"clip"`) or from a damaged serialized packet set
 * (`"clip-packets"`: a clean item as the subprocess backend sends it, ITEM payload of the item codec, whose
 * `VideoPackets` blob is mutated, timestamps and flags of its packet table included, then decoded back by
 * `decodeItem` as the parent does). Every clip the decode delivers is checked here, independently of the
 * loader's own delivery rule: its frames in presentation order and inside its window, but for the one frame on
 * screen at its start. A clip that breaks that is an `invariant` failure of the case.
 * @module
 */
import { decodeClip, demuxClips } from "../../src/loader/decode/clip_worker.ts";
import type { ClipSpec } from "../../src/loader/clip/clip_spec.ts";
import { SluiceError } from "../../src/errors.ts";
import { isFailedClip } from "../../src/loader/clip/clip_failure.ts";
import { decodeItem, encodeItem } from "../../src/backend/item_codec.ts";
import { NOPTS, ptsToSeconds, VideoPackets } from "../../src/media/packets.ts";
import { AV_PKT_FLAG_DISCARD } from "../../src/media/frame_index.ts";
import { clipBase, testSpec } from "../helpers/clip_spec.ts";
import type { Rng } from "./mutate.ts";
import type { ClipFailure, ClipPackets, DecodedClip } from "../../src/loader/clip/life.ts";

/** The clip side of a case: its windows, what each clip becomes, and whether overlapping clips share a pass. */
export interface ClipRequest {
  windows: [number, number][];
  spec: ClipSpec;
  share: boolean;
}

/** What a clip case's decode delivered and failed. */
export interface ClipTally {
  delivered: number;
  /** Frames of the delivered clips (slots, repeats included) checked. */
  frames: number;
  failed: number;
  /** Failed clips by error class (and, for `ClipIntegrityError`, the rule broken). */
  failedBy: Record<string, number>;
}

/** A seeded clip request over an input of `dur` seconds (audio asked for now and then). */
export function clipRequest(r: Rng, dur: number): ClipRequest {
  const kind = r.pick(["consecutive", "consecutive", "stride", "rate", "uniform"] as const);
  const sampling: ClipSpec["sampling"] = kind === "stride"
    ? { kind, stride: 2 + r.int(3) }
    : kind === "rate"
    ? { kind, frameRate: r.pick([1, 7.5, 10, 12.5, 24, 30, 60]) }
    : { kind };
  const numFrames = 1 + r.int(16);
  const spec = testSpec({
    numFrames,
    width: r.pick([8, 16, 17, 32]),
    height: r.pick([8, 15, 16, 32]),
    sampling,
    resize: r.pick(["stretch", "short-side", "random-crop", "random-resized-crop"] as const),
    flipProbability: 0.5,
    interpolation: r.pick(["bilinear", "bicubic", "area"] as const),
    planar: r.chance(0.5),
    dtype: r.chance(0.3) ? "float32" : "uint8",
    rotate: r.chance(0.8),
    maxPadFraction: r.pick([0, 0.5, 1]),
  });
  const windows = Array.from({ length: 1 + r.int(3) }, (): [number, number] => {
    const start = -0.3 + r.next() * (dur + 0.3);
    return [start, start + r.pick([0.04, 0.2, 0.5, 1, 2])];
  });
  if (r.chance(0.25)) {
    const sampleRate = r.pick([8000, 16000, 44100]);
    spec.audio = {
      sampleRate,
      channels: 1 + r.int(2),
      samples: Math.round((windows[0][1] - windows[0][0]) * sampleRate),
    };
  }
  return { windows: windows.sort((a, b) => a[0] - b[0]), spec, share: r.chance(0.5) };
}

/** The items the loader's demux step makes of `src` for `c` (decode once for overlapping clips when `share`). */
export function demuxItems(src: Uint8Array | string, path: string, c: ClipRequest): ClipPackets[] {
  const clips = c.windows.map(([s, e], i) => clipBase(path, s, e, i, 7919 + i));
  const share = c.share ? { order: clips.map((_, i) => i), horizon: 8 } : undefined;
  return demuxClips({ epoch: 0, video: 0, path, clips, spec: c.spec, src, ...(share ? { share } : {}) })
    .value;
}

/** The first item of `items` that carries packets, as the ITEM payload the backend sends. */
export function itemPayload(items: ClipPackets[]): Uint8Array {
  const item = items.find((i) => i.packets !== undefined);
  if (item === undefined) throw new SluiceError("no item carries packets");
  const parts = encodeItem(item);
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** The bytes of blob 0 of a JSON ITEM payload (an item's packets: the first typed value in it). */
export function firstBlob(payload: Uint8Array): Uint8Array {
  const { blobs } = blobLayout(payload);
  return payload.subarray(blobs[0].at, blobs[0].at + blobs[0].size);
}

/** `payload` with blob 0 replaced by `bytes` (its size field and the alignment of the blobs after it redone). */
export function withFirstBlob(payload: Uint8Array, bytes: Uint8Array): Uint8Array {
  const { head, textEnd, blobs } = blobLayout(payload);
  const pieces: Uint8Array[] = [];
  const sizes = blobs.map((b, i) => (i === 0 ? bytes : payload.subarray(b.at, b.at + b.size)));
  const h = payload.slice(0, head);
  const v = new DataView(h.buffer);
  sizes.forEach((b, i) => v.setUint32(12 + 4 * i, b.length, true));
  pieces.push(h, payload.subarray(head, textEnd));
  let at = textEnd;
  for (const b of sizes) {
    const pad = (8 - (at % 8)) % 8;
    pieces.push(new Uint8Array(pad), b);
    at += pad + b.length;
  }
  const out = new Uint8Array(at);
  let o = 0;
  for (const p of pieces) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

function blobLayout(payload: Uint8Array) {
  const v = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
  const count = v.getUint32(8, true), head = 12 + 4 * count;
  const textEnd = head + v.getUint32(4, true);
  const blobs: { at: number; size: number }[] = [];
  let at = textEnd;
  for (let i = 0; i < count; i++) {
    at += (8 - (at % 8)) % 8;
    const size = v.getUint32(12 + 4 * i, true);
    blobs.push({ at, size });
    at += size;
  }
  return { head, textEnd, blobs };
}

/** The item a (damaged) ITEM payload decodes to, as the parent reads it (may throw a `ProtocolError`). */
export function itemOf(payload: Uint8Array): ClipPackets {
  return decodeItem(payload) as ClipPackets;
}

/**
 * Decodes `items` as the loader's decode Workers do and checks every clip they deliver ({@link deliveredProblem});
 * `check` throws what it is given for a clip that breaks the rule.
 */
export function decodeItems(items: ClipPackets[], check: (problem: string) => never): ClipTally {
  const tally: ClipTally = { delivered: 0, frames: 0, failed: 0, failedBy: {} };
  const failed = (e: unknown) => {
    if (!(e instanceof SluiceError)) throw e;
    count(e.name, (e as { rule?: string }).rule);
  };
  // A clip's failure comes back as its record: a ClipIntegrityError's rule is in its text.
  const failure = (f: ClipFailure) =>
    count(f.errorName, f.error.match(/breaks the delivery rule \((\w+)\)/)?.[1]);
  const count = (name: string, rule: string | undefined) => {
    tally.failed++;
    const key = rule === undefined ? name : `${name}(${rule})`;
    tally.failedBy[key] = (tally.failedBy[key] ?? 0) + 1;
  };
  const delivered = (
    clip: DecodedClip,
    item: ClipPackets,
    times: PacketTimes | null,
    range?: [number, number],
  ) => {
    const problem = deliveredProblem(clip, nativeSampling(item.spec), times, range);
    if (problem !== null) check(problem);
    tally.delivered++;
    tally.frames += clip.outcome!.pts.length;
  };
  for (const item of items) {
    if (item.servedBy !== undefined) continue; // its result comes with the pass that serves it
    // The decode frees the item's packets when done: their times are read first.
    const times = item.packets === undefined ? null : packetTimes(VideoPackets.fromStructured(item.packets));
    const ranges = [item.range, ...(item.shared ?? []).map((s) => s.range)];
    let results;
    try {
      results = decodeClip(item).value;
    } catch (e) {
      failed(e);
      continue;
    }
    for (const [k, r] of results.entries()) {
      if (isFailedClip(r)) failure(r.failed);
      else delivered(r, item, times, ranges[k]);
    }
  }
  return tally;
}

/**
 * Each packet's presentation time in seconds (NaN: none, or a packet that gives no frame) and decode time (NaN:
 * none), and the stream's start.
 */
interface PacketTimes {
  pts: Float64Array;
  dts: Float64Array;
  start: number;
}

function packetTimes(p: VideoPackets): PacketTimes {
  const sec = (t: bigint) => (t === NOPTS ? NaN : ptsToSeconds(t, p.timeBase));
  return {
    pts: Float64Array.from(
      { length: p.numPackets },
      (_, i) => p.flags[i] & AV_PKT_FLAG_DISCARD ? NaN : sec(p.pts[i]),
    ),
    dts: Float64Array.from({ length: p.numPackets }, (_, i) => sec(p.dts[i])),
    start: p.startTimeSec,
  };
}

/**
 * The test's own rule for a delivered clip (written apart from `src/loader/decode/clip_check.ts`): its sampled frames'
 * times (the native kinds report each frame's own) strictly increase, lie before the window's end, and only the
 * first may lie before its start, as the frame on screen there: no packet of its own (`range` of `packets`) is
 * presented between it and the start, and it is not presented before any of them is decoded (a frame's pts is
 * never before its dts), nor, where they have no decode times, before the stream's start. Grid kinds report slot
 * times: there the frames shown (their indices) must not go back. Null when the clip keeps the rule.
 */
export function deliveredProblem(
  clip: DecodedClip,
  native: boolean,
  packets: PacketTimes | null,
  range?: [number, number],
): string | null {
  const m = clip.outcome!;
  const { start: s, end: e } = clip.meta;
  const sampled = m.pts.length - m.held - m.padded;
  if (sampled < 1) return `no sampled frame (${m.pts.length} slots, ${m.held} held, ${m.padded} padded)`;
  const ix = m.frameIndex;
  for (let k = 1; ix !== null && k < ix.length; k++) {
    if (ix[k] < ix[k - 1]) return `out of order: frame index ${ix[k]} after ${ix[k - 1]} (slot ${k})`;
  }
  const t = m.pts.slice(0, sampled);
  for (let k = 0; k < sampled; k++) {
    if (!(t[k] < e)) return `out of window: slot ${k} at ${t[k]} s, at or after the end ${e}`;
  }
  if (!native) return null;
  for (let k = 1; k < sampled; k++) {
    if (!(t[k] > t[k - 1])) return `out of order: slot ${k} at ${t[k]} s after ${t[k - 1]} s`;
    if (!(t[k] > s)) {
      return `out of window: slot ${k} at ${t[k]} s, not after the start ${s} (only slot 0 may)`;
    }
  }
  if (t[0] < s - 1e-9 && packets !== null) {
    const [from, to] = range ?? [0, packets.pts.length];
    const own = (col: Float64Array) => col.subarray(from, Math.min(to, col.length));
    for (const x of own(packets.pts)) {
      if (x > t[0] && x <= s + 1e-9) {
        return `out of window: slot 0 at ${
          t[0]
        } s, but a frame presented at ${x} s is on screen at the start ${s}`;
      }
    }
    const floor = own(packets.dts).reduce((a, x) => (x < a ? x : a), Infinity);
    if (t[0] < (floor < Infinity ? floor : packets.start) - 1e-9) {
      return `out of window: slot 0 at ${
        t[0]
      } s, before its packets are decoded or the stream starts (${floor} s, ${packets.start} s)`;
    }
  }
  return null;
}

/** Whether clips of `spec` report their frames' own times (`"consecutive"`, `"stride"`), not slot times. */
function nativeSampling(spec: ClipSpec): boolean {
  return spec.sampling.kind === "consecutive" || spec.sampling.kind === "stride";
}
