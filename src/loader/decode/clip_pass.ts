/**
 * The loader's decode pass, written once for every decoder: a clip, and the clips its pass serves with it
 * (`ClipPackets.shared`), are checked (a clip its packets cannot fill fails before anything is decoded or
 * allocated), given their seeded choices (flip, region), their `FrameWriter` and destination, decoded by a
 * {@link ClipPassDecoder} (the CPU's one forward pass for all, or NVDEC's, `src/nvdec/pass_decoder.ts`), then each
 * finished: held frames and padding added (by the decoder, in host or device memory) and counted, its
 * {@link ClipOutcome} built. One clip's failure is its `ClipError`, returned as its failure record, and leaves the
 * others' frames. What is asked of the device goes through the decoder: this module names none.
 * @module
 */

import { packetRange } from "../../media/decode_pass.ts";
import type { ClipPassDecoder, OutputRun, ResolvedOptions } from "../../media/pass_decoder.ts";
import { threadScaler } from "../../media/decoder.ts";
import { VideoPackets } from "../../media/packets.ts";
import {
  FrameSelector,
  framesInWindow,
  type PositionPlan,
  positionPlan,
  repeatsHeld,
} from "../../media/frame_select.ts";
import { resizeRegion } from "../../media/crop.ts";
import { normalisation } from "../../media/orient.ts";
import { type FrameDestination, FrameWriter, type WriterSpec } from "../../media/frame_writer.ts";
import { viewAt } from "../../memory/shm.ts";
import { SWS_FLAGS } from "../../media/scale.ts";
import { ClipError, InvalidArgumentError, MediaError, NvdecUnsupportedError } from "../../errors.ts";
import { releaseBuffers, transferable, type Transferring } from "../../pipeline/transfer.ts";
import { mulberry32 } from "../../dataset/random.ts";
import { lap, startSpans, takeSpans } from "../../media/spans.ts";
import type { ClipOutcome, ClipSpec, FrameKind } from "../clip/clip_spec.ts";
import { AUDIO_STATUSES } from "../../media/audio.ts";
import { checkClip } from "./clip_check.ts";
import { clipFailure } from "../clip/clip_failure.ts";
import type {
  ClipBase,
  ClipDestination,
  ClipPackets,
  DecodedClip,
  FailedClip,
  SharedClip,
} from "../clip/life.ts";

/**
 * Decodes a clip and the clips it shares its pass with (`item.shared`; none: a pass of its own) with `decoder`:
 * one result per clip, this one first, each its clip or its failure record (one clip's failure leaves the others'
 * frames). The pass's phase times (`item.profile`) go with the first clip that has a result.
 */
export function decodeClips(
  item: ClipPackets,
  decoder: ClipPassDecoder,
): Transferring<(DecodedClip | FailedClip)[]> {
  if (item.profile) startSpans();
  try {
    const members = runPass(item, [ownMember(item), ...(item.shared ?? [])], decoder);
    const first = members.find((m) => m.clip !== undefined);
    if (first !== undefined) withPhases(first.clip!);
    const out = members.map((m): DecodedClip | FailedClip =>
      m.error !== undefined ? { failed: clipFailure(m.meta, "decode", m.error) } : m.clip!
    );
    return transferable(out, members.flatMap((m) => m.transfer));
  } finally {
    // The packets came here by transfer and are spent: free them now rather than at this Worker's next GC.
    if (item.packets) releaseBuffers(item.packets);
    takeSpans();
  }
}

/** `clip` with this thread's spans (when open) as its `phases`. */
function withPhases<T extends DecodedClip>(clip: T): T {
  lap("finish");
  const phases = takeSpans();
  if (phases !== null) clip.phases = phases;
  return clip;
}

/** The pass over `item`'s packets for `shared` (this clip first): open, decode, finish. */
function runPass(item: ClipPackets, shared: SharedClip[], decoder: ClipPassDecoder): Member[] {
  const pass = openPass(item, shared, decoder);
  lap("setup");
  if (pass.ready.length === 0) return pass.members;
  const { p, o, ready } = pass;
  let run;
  try {
    run = decoder.decode(
      p,
      o,
      ready.map((c) => ({
        range: c.member.range,
        window: [c.member.meta.start, c.member.meta.end] as const,
        writer: c.writer,
        dest: c.dest,
      })),
    );
  } catch (e) {
    for (const r of ready) fail(r.member, e);
    return pass.members;
  }
  const failures = run.failedPackets > 0
    ? `; ${run.failedPackets} packets undecodable (first: ${run.firstFailure})`
    : "";
  lap("decode");
  return finishPass(pass, run.outputs, run.decodedFrames, run.skippedFrames, failures);
}

// ------------------------------------------------------------------------------------------ members of a pass

/** One clip of a pass, being decoded: what it is, then what became of it. */
interface Member extends SharedClip {
  /** Its result: the clip and the buffer to transfer, or its error. */
  clip?: DecodedClip;
  transfer: ArrayBuffer[];
  error?: unknown;
}

function ownMember(item: ClipPackets): SharedClip {
  const m: SharedClip = { meta: item.meta, range: item.range ?? [0, Infinity] };
  if (item.dest !== undefined) m.dest = item.dest;
  if (item.audio !== undefined) m.audio = item.audio;
  return m;
}

/** A clip prepared for a pass: its own packets, its seeded choices, its writer and destination. */
interface Prepared {
  member: Member;
  own: VideoPackets;
  /** Its frame selector's plan (window, stream end). */
  plan: PositionPlan;
  choice: ClipChoice;
  writer: FrameWriter;
  dest: FrameDestination;
  /** The destination was given by address: the clip goes back with empty `data`. */
  addressed: boolean;
}

/** A pass about to run: its packets and options, every member, and those that passed the checks. */
interface Pass {
  spec: ClipSpec;
  decoder: ClipPassDecoder;
  members: Member[];
  p: VideoPackets;
  o: ResolvedOptions;
  ready: Prepared[];
}

/** Records `e` as `m`'s failure when it is a clip's (a `ClipError`); anything else (a bug) is thrown. */
function fail(m: Member, e: unknown): void {
  const err = asClipError(e, m.meta);
  if (!(err instanceof ClipError)) throw err;
  m.error = err;
}

/**
 * Checks each clip of the pass (a clip its own packets cannot fill fails before decoding and allocating) and
 * prepares the others. Null when the item has no packets (every member failed with its demux failure).
 */
function openPass(item: ClipPackets, shared: SharedClip[], decoder: ClipPassDecoder): Pass {
  const members: Member[] = shared.map((s) => ({ ...s, transfer: [] }));
  let p: VideoPackets;
  try {
    p = clipPackets(item);
  } catch (e) {
    for (const m of members) fail(m, e);
    return { spec: item.spec, decoder, members, p: null!, o: null!, ready: [] };
  }
  const o = decodeOptions(item);
  const ready: Prepared[] = [];
  for (const m of members) {
    try {
      ready.push(prepare(item.spec, p, o, m, decoder));
    } catch (e) {
      fail(m, e);
    }
  }
  return { spec: item.spec, decoder, members, p, o, ready };
}

function prepare(
  spec: ClipSpec,
  p: VideoPackets,
  o: ResolvedOptions,
  member: Member,
  decoder: ClipPassDecoder,
): Prepared {
  member.range = [member.range[0], Math.min(member.range[1], p.numPackets)];
  const own = packetRange(p, member.range, [member.meta.start, member.meta.end]);
  const choice = clipChoice(spec, member.meta.seed);
  const writer = new FrameWriter(writerSpec(spec, own, choice), threadScaler(o.flags));
  const plan = checkFillable(spec, member.meta, own, o);
  const dest = member.dest === undefined ? newDestination(spec) : destination(spec, member.dest);
  if (dest.device !== undefined && !decoder.acceptsDevice(dest.device)) {
    throw new InvalidArgumentError("a clip place in device memory needs the NVDEC decoder");
  }
  // A buffer of its own (new, or one the caller moved here to be reused) goes back moved, not copied.
  const addressed = member.dest !== undefined && "address" in member.dest;
  if (dest.device === undefined && dest.data.buffer instanceof ArrayBuffer && !addressed) {
    member.transfer = [dest.data.buffer];
  }
  return {
    member,
    own,
    plan,
    choice,
    writer,
    dest,
    addressed,
  };
}

/**
 * After the decode: pads and finishes each prepared clip from its output (`pts`, or its error). The pass's
 * decoded and skipped frames are shared equally among its clips (the first takes the remainder).
 */
function finishPass(
  pass: Pass,
  outputs: readonly OutputRun[],
  decoded: number,
  skipped: number,
  failures: string,
): Member[] {
  const { members, ready } = pass;
  const n = members.length;
  const share = (total: number, m: Member) => Math.floor(total / n) + (m === members[0] ? total % n : 0);
  for (const [k, r] of ready.entries()) {
    const out = outputs[k];
    try {
      if (out.error !== undefined) throw out.error;
      const counts = { decoded: share(decoded, r.member), skipped: share(skipped, r.member), passClips: n };
      const clip = finishClip(pass, r, out, counts, failures);
      r.member.clip = clip;
      withAudio(pass.spec, r.member);
      // The delivery rule, once for every decoder: a clip that breaks it fails instead of being delivered.
      checkClip(pass.spec, clip, { packets: r.own, frameTimes: out.frameTimes });
    } catch (e) {
      fail(r.member, e);
    }
  }
  return members;
}

/**
 * Adds the member's audio to its clip (`ClipSpec.audio`): checked first, as it may have crossed from a backend
 * process: a status, and exactly `channels × samples` floats.
 */
function withAudio(spec: ClipSpec, m: Member): void {
  const want = spec.audio;
  if (want === undefined) return;
  const a = m.audio, n = want.channels * want.samples;
  if (
    !(a && AUDIO_STATUSES.includes(a.status) && a.samples instanceof Float32Array && a.samples.length === n)
  ) {
    throw new ClipError(
      m.meta.path,
      "decode",
      [m.meta.start, m.meta.end],
      `the clip's audio is missing or malformed (expected ${want.channels} × ${want.samples} float32 samples)`,
    );
  }
  m.clip!.audio = a.samples;
  m.clip!.audioChannels = want.channels;
  m.clip!.outcome.audio = a.status;
  if (a.samples.buffer instanceof ArrayBuffer) m.transfer.push(a.samples.buffer);
}

// ------------------------------------------------------------------------------------------ one clip

/** The seeded choices of one clip, drawn in a fixed order: the flip, then (random modes) the region. */
interface ClipChoice {
  flipped: boolean;
  region: (width: number, height: number) => ReturnType<typeof resizeRegion>;
}

function clipChoice(spec: ClipSpec, seed: number): ClipChoice {
  const random = mulberry32(seed);
  const flipped = random() < spec.flipProbability;
  return { flipped, region: (w, h) => resizeRegion(w, h, spec, random) };
}

function writerSpec(spec: ClipSpec, p: VideoPackets, choice: ClipChoice): WriterSpec {
  return {
    format: spec.planar ? "rgb24-planar" : "rgb24",
    width: spec.width,
    height: spec.height,
    rotation: spec.rotate ? p.rotation : 0,
    mirror: choice.flipped,
    region: choice.region,
    flags: SWS_FLAGS[spec.interpolation],
    norm: spec.dtype === "float32" ? normalisation(spec.mean, spec.std) : null,
  };
}

function decodeOptions(item: ClipPackets): ResolvedOptions {
  const { spec } = item;
  return {
    pixelFormat: spec.planar ? "rgb24-planar" : "rgb24",
    sampling: spec.sampling,
    numFrames: spec.numFrames,
    threads: item.threads ?? 1,
    skipNonRef: false,
    skipUnshown: item.skipUnshown ?? true,
    onCorrupt: "skip",
    flags: SWS_FLAGS[spec.interpolation],
  };
}

/** The clip's packets, or its demux failure as a {@link ClipError}. */
function clipPackets(item: ClipPackets): VideoPackets {
  if (item.packets === undefined) {
    throw new ClipError(
      item.meta.path,
      "demux",
      [item.meta.start, item.meta.end],
      item.failure ?? "no packets",
    );
  }
  return VideoPackets.fromStructured(item.packets);
}

/**
 * Fails before decoding (and before allocating) a clip its packets cannot fill: the frames the window can give
 * at most (packets presented in it, or grid positions before the stream's end) leave more padding than allowed. A
 * window the stream goes on past pads nothing (its last frame is held: `repeatsHeld`).
 */
function checkFillable(spec: ClipSpec, meta: ClipBase, p: VideoPackets, o: ResolvedOptions): PositionPlan {
  const plan = positionPlan(p, o);
  const most = new FrameSelector(plan).capacity(framesInWindow(p));
  const w: [number, number] = [meta.start, meta.end];
  if (most === 0) throw new ClipError(meta.path, "decode", w, "no frame is on screen in the window");
  if (!repeatsHeld(plan) && spec.numFrames - most > spec.maxPadFraction * spec.numFrames) {
    throw new ClipError(meta.path, "decode", w, paddingReason(most, spec, true));
  }
  return plan;
}

/**
 * Why a clip with `frames` of its `numFrames` fails the padding bound (`most`: before decoding, an upper bound).
 * The bound is named in plain words: this runs in a decode Worker, far from the caller's spelling of options
 * (`clip.maxPadFraction`, `clip["max_pad_fraction"]`), and the text is kept in the clip's failure record.
 */
function paddingReason(frames: number, spec: ClipSpec, most: boolean): string {
  const n = frames === 1 ? "1 frame" : `${frames} frames`;
  return `the window ${
    most ? `can give ${n} at most` : `gave ${n}`
  } of the ${spec.numFrames} asked and the ` +
    `stream ends inside it: ${
      spec.numFrames - frames
    } frames of padding exceed the max pad fraction ${spec.maxPadFraction}`;
}

function newDestination(spec: ClipSpec): FrameDestination {
  const n = spec.numFrames * 3 * spec.width * spec.height;
  return { data: spec.dtype === "float32" ? new Float32Array(n) : new Uint8Array(n), offset: 0 };
}

/**
 * A caller's destination as a buffer: an addressed one becomes a view of exactly the clip's bytes, after
 * checking that its length is the clip's size and a float clip's address is aligned (a wrong place would make
 * FFmpeg write outside it).
 */
function destination(spec: ClipSpec, dest: ClipDestination): FrameDestination {
  if (!("address" in dest)) return dest;
  const float = spec.dtype === "float32";
  const bytes = spec.numFrames * 3 * spec.width * spec.height * (float ? 4 : 1);
  if (typeof dest.address !== "bigint" || dest.length !== bytes || (float && dest.address % 4n !== 0n)) {
    throw new InvalidArgumentError(
      `clip destination of ${dest.length} bytes at ${dest.address}: the clip takes ${bytes} bytes` +
        (float ? " at a 4-byte aligned address" : ""),
    );
  }
  if (dest.device !== undefined) {
    const device = { device: dest.device, address: dest.address, planesFirst: dest.planesFirst ?? false };
    return { data: float ? new Float32Array(0) : new Uint8Array(0), offset: 0, device };
  }
  const view = viewAt(dest.address, bytes);
  return { data: float ? new Float32Array(view.buffer) : view, offset: 0 };
}

/** Checks the frames decoded, pads to `numFrames`, and builds the clip with its outcome. */
function finishClip(
  { spec, decoder }: Pass,
  { member: { meta }, own: p, plan, writer, choice, dest, addressed }: Prepared,
  out: OutputRun,
  counts: { decoded: number; skipped: number; passClips: number },
  failures: string,
): DecodedClip {
  const w: [number, number] = [meta.start, meta.end];
  const pts = Array.from(out.pts);
  const frameIndex = out.frameIndex === null ? null : Array.from(out.frameIndex);
  const filled = pts.length;
  if (filled === 0) {
    throw new ClipError(meta.path, "decode", w, `no frame is on screen in the window${failures}`);
  }
  const repeats = spec.numFrames - filled;
  const held = repeatsHeld(plan) ? repeats : 0, padded = repeats - held;
  if (padded > spec.maxPadFraction * spec.numFrames) {
    throw new ClipError(meta.path, "decode", w, paddingReason(filled, spec, false) + failures);
  }
  const size = writer.frameSize;
  const frameKind: FrameKind[] = Array(filled).fill("sampled");
  decoder.repeatLastFrame(dest, filled, spec.numFrames, size);
  for (let k = filled; k < spec.numFrames; k++) {
    pts.push(pts[filled - 1]);
    frameIndex?.push(frameIndex[filled - 1]);
    frameKind.push(k < filled + held ? "held" : "padded");
  }
  const [dw, dh] = writer.displayed;
  const r = writer.region;
  const outcome: ClipOutcome = {
    pts,
    frameIndex,
    frameKind,
    held,
    padded,
    span: [pts[0], pts[filled - 1] + samplingStep(spec, p, w)],
    rotation: p.rotation,
    rotated: spec.rotate && p.rotation % 360 !== 0,
    crop: r === null ? [0, 0, dw, dh] : [r.left, r.top, r.width, r.height],
    flipped: choice.flipped,
    decodedFrames: counts.decoded,
    skippedFrames: counts.skipped,
    passClips: counts.passClips,
  };
  // An addressed clip's pixels are where the caller said: any view of them would be cloned back (whole buffer).
  const data = addressed
    ? (dest.data instanceof Float32Array ? new Float32Array(0) : new Uint8Array(0))
    : dest.data.subarray(dest.offset, dest.offset + spec.numFrames * size);
  return { meta, data, width: spec.width, height: spec.height, outcome };
}

/** How long the last frame of a clip is shown, by its sampling (see `ClipOutcome.span`). */
function samplingStep(spec: ClipSpec, p: VideoPackets, [s, e]: [number, number]): number {
  const native = p.frameRate > 0 ? 1 / p.frameRate : 0;
  switch (spec.sampling.kind) {
    case "consecutive":
      return native;
    case "stride":
      return spec.sampling.stride * native;
    case "rate":
      return 1 / spec.sampling.frameRate;
    case "uniform":
      return (e - s) / spec.numFrames;
  }
}

/** A per-clip failure as a {@link ClipError} (stage "decode"); other errors (bugs, missing libraries) as they are. */
function asClipError(e: unknown, meta: ClipBase): unknown {
  if (e instanceof ClipError) return e;
  if (e instanceof MediaError || e instanceof NvdecUnsupportedError) {
    const reason = e instanceof MediaError ? `${e.operation}: ${e.reason}` : e.message;
    return new ClipError(meta.path, "decode", [meta.start, meta.end], reason, { cause: e });
  }
  return e;
}
