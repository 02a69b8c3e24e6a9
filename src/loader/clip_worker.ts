/**
 * Worker functions of the video loader, run in `WorkerPool`s: `demuxClips` cuts one video into the packets of its
 * clips (one open of the file for all of them), `decodeClip` decodes one clip into exactly what its
 * {@link ClipSpec} asks (frames chosen by `src/media/frame_select.ts`, rotated, cropped, resized, flipped and
 * converted in one pass by `src/media/frame_writer.ts`), `decodeClipNvdec` does the same on an NVIDIA GPU
 * (frame choice, crop and resize on the GPU; rotation, flip and `float32` after the copy to host).
 *
 * Every clip comes back with exactly `numFrames` frames (a short clip repeats its last frame: `held` while it is
 * still on screen, `padded` beyond the end of the stream) or fails alone with a {@link ClipError} naming the file, the window, the stage and the cause: a
 * window the demuxer cannot serve travels on as a failed item and fails at decode, so one bad window never takes
 * the other clips of its video with it. Buffers go back as transferables (nothing copied), or straight into a
 * caller's destination (`ClipPackets.dest`): a buffer, or a native address (a batch slot in shared memory,
 * `batch_slots.ts`; Workers share the process's address space), in which case the clip comes back with empty
 * `data` (its pixels are already where the caller said).
 * @module
 */

import {
  decodePass,
  framesInWindow,
  packetRange,
  releaseDecoder,
  type ResolvedOptions,
  slotPlan,
  threadScaler,
} from "../media/decode.ts";
import { type NativeObjectCounts, nativeObjectCounts } from "../media/av_objects.ts";
import { decodeVideoNvdecSync, releaseDecoderNvdec } from "../nvdec/decoder.ts";
import { demuxGroupsSync } from "../media/demux.ts";
import { VideoPackets, type VideoPacketsInit } from "../media/packets.ts";
import { FrameSelector, repeatsHeld, type SlotPlan } from "../media/frame_select.ts";
import { resizeRegion } from "../media/crop.ts";
import { normalisation } from "../media/orient.ts";
import { type FrameDestination, FrameWriter, type WriterSpec } from "../media/frame_writer.ts";
import { viewAt } from "../memory/shm.ts";
import { frameLayout } from "../media/frames.ts";
import { SWS_FLAGS } from "../media/scale.ts";
import {
  ClipError,
  InvalidArgumentError,
  MediaError,
  NvdecUnsupportedError,
  type SerializedError,
  serializeError,
} from "../errors.ts";
import { releaseBuffers, transferable, type Transferring } from "../pipeline/transfer.ts";
import { mulberry32 } from "../dataset/random.ts";
import type { ClipBase, DecodedClip } from "./collate.ts";
import type { ClipOutcome, ClipSpec } from "./clip_spec.ts";
import type { MemberRef } from "../dataset/shards/dataset.ts";

export type { ClipBase };

/** One video with the clips to cut from it, after fetching. */
export interface VideoTask {
  epoch: number;
  video: number;
  path: string;
  /** Each clip's metadata, window (`start`, `end`) and transform seed (`seed`) included, as the loader planned it. */
  clips: ClipBase[];
  /** The video is this member of the file at `path` (a tar shard). */
  member?: MemberRef;
  /** The bytes (URLs, after fetching) or the local path itself. */
  src?: Uint8Array | string;
  /** What each clip becomes (travels with each clip). */
  spec: ClipSpec;
  /**
   * Decode once for several clips (set by the loader's front): clips whose packets overlap are served by one
   * decode pass when their places in the epoch's output (`order[i]` for `clips[i]`: the index at which the clip
   * leaves the shuffle buffer) are at most `horizon` apart. Absent: every clip is decoded on its own.
   */
  share?: { order: number[]; horizon: number };
}

/** A clip decoded in another clip's pass: its metadata, its own packets in that pass, and its destination. */
export interface SharedClip {
  meta: ClipBase;
  /** Its own packets `[from, to)` within the pass's packets (exactly what demux cuts for its window alone). */
  range: [number, number];
  /** Where its frames go (see {@link ClipPackets.dest}); default: a new buffer. */
  dest?: ClipDestination;
}

/**
 * A clip's place given by address: `length` bytes at `address` of this process (a batch slot's clip place,
 * `BatchSlots.place`). The caller keeps the memory mapped while the clip decodes.
 */
export interface AddressedDestination {
  address: bigint;
  /** Bytes; must be exactly the clip's size (`numFrames × 3 × width × height × bytes per sample`). */
  length: number;
}

/** Where a clip's frames go: a buffer (with an element offset) or an address. */
export type ClipDestination = FrameDestination | AddressedDestination;

/**
 * One clip after demux: its packets, or why its window could not be served, or (decoded once with other clips)
 * the pass that serves it.
 */
export interface ClipPackets {
  meta: ClipBase;
  spec: ClipSpec;
  /**
   * The packets its decode pass reads; absent when demux failed for this window (`failure` says why) or when
   * another clip's pass serves it (`servedBy`).
   */
  packets?: VideoPackets | VideoPacketsInit;
  failure?: string;
  /**
   * Write the frames here: `numFrames` frames of `3·width·height` elements from `offset` on, a `Float32Array`
   * for `dtype: "float32"`; or by address (a batch slot in shared memory, {@link AddressedDestination}), when
   * the clip comes back with empty `data`. Default: a new buffer per clip.
   */
  dest?: ClipDestination;
  /** Its own packets `[from, to)` within `packets` (default: all of them). */
  range?: [number, number];
  /**
   * The other clips the same pass serves (same video; their packets overlap this clip's): `decodeClipGroup`
   * returns one result for each, after this clip's.
   */
  shared?: SharedClip[];
  /**
   * Set when the pass of the clip at this position (same epoch) serves this clip, which its `shared` lists: this
   * item carries no packets, its result comes with that clip's (see `clip_steps.ts`).
   */
  servedBy?: number;
  /** Leave undecoded the frames no slot shows (`DecodeOptions.skipUnshown`, default true; set by the decode step). */
  skipUnshown?: boolean;
  /** FFmpeg threads for the decoder (default 1; set by the decode step from the cores left idle). */
  threads?: number;
}

/** One clip's result in a {@link decodeClipGroup}: the clip, or its `ClipError` (serialized: it crosses a Worker). */
export type ClipResult = { clip: DecodedClip } | { error: SerializedError };

/**
 * Demuxes every clip window of one video; see the module docs. With `task.share`, clips whose packets overlap
 * (and whose output places are within the horizon) are grouped: the one that leaves the shuffle buffer first
 * carries the packets of all and lists the others in `shared`; each other one carries `servedBy`.
 */
export function demuxClips(task: VideoTask): Transferring<ClipPackets[]> {
  const src = task.src ?? task.path;
  const windows = task.clips.map((c): [number, number] => [c.start, c.end]);
  const share = task.share;
  const join = (members: readonly number[], next: number): boolean => {
    if (share === undefined) return false;
    const places = [...members, next].map((i) => share.order[i]);
    return Math.max(...places) - Math.min(...places) <= share.horizon;
  };
  const { groups, failures } = demuxGroupsSync(src, { windows, join });
  const buffers: ArrayBuffer[] = [];
  const out: ClipPackets[] = task.clips.map((meta, i) => {
    const f = failures[i];
    return {
      meta,
      spec: task.spec,
      failure: f === null ? "no packets" : f instanceof MediaError ? f.reason : f.message,
    };
  });
  for (const g of groups) {
    buffers.push(...g.packets.transferables());
    const members = g.members.map((m) => ({ i: m.window, range: m.range }));
    const place = (m: { i: number }) => share?.order[m.i] ?? m.i;
    const lead = members.reduce((a, b) => (place(b) < place(a) ? b : a));
    const item: ClipPackets = { meta: task.clips[lead.i], spec: task.spec, packets: g.packets };
    if (members.length > 1) {
      item.range = lead.range;
      item.shared = members.filter((m) => m !== lead).map((m) => ({ meta: task.clips[m.i], range: m.range }));
      for (const m of members) {
        if (m !== lead) out[m.i] = { meta: task.clips[m.i], spec: task.spec, servedBy: item.meta.position };
      }
    }
    out[lead.i] = item;
  }
  return transferable(out, buffers);
}

/** Decodes one clip on the CPU (its own packets only; `shared` clips are left to `decodeClipGroup`). */
export function decodeClip(item: ClipPackets): Transferring<DecodedClip> {
  try {
    const [r] = decodeMembers(item, [ownMember(item)]);
    return transferable(resultOf(r), r.transfer);
  } finally {
    // The packets came here by transfer and are spent: free them now rather than at this Worker's next GC.
    if (item.packets) releaseBuffers(item.packets);
  }
}

/**
 * Decodes a clip and the clips it shares its pass with (`item.shared`) in one forward pass on the CPU: one result
 * per clip, this one first, each its clip or its own `ClipError` (one clip's failure leaves the others' frames).
 */
export function decodeClipGroup(item: ClipPackets): Transferring<ClipResult[]> {
  try {
    return results(decodeMembers(item, [ownMember(item), ...(item.shared ?? [])]));
  } finally {
    if (item.packets) releaseBuffers(item.packets);
  }
}

/**
 * Decodes one clip with NVDEC (`src/nvdec`): the frame choice, the region (display area) and the resize (target
 * size) on the GPU, then a copy to host memory, then rotation, flip, layout and `float32` in one pass.
 */
export async function decodeClipNvdec(item: ClipPackets): Promise<Transferring<DecodedClip>> {
  try {
    const [r] = await decodeMembersNvdec(item, [ownMember(item)]);
    return transferable(resultOf(r), r.transfer);
  } finally {
    if (item.packets) releaseBuffers(item.packets);
  }
}

/**
 * {@link decodeClipGroup} with NVDEC. The decoder's crop and resize are set per session, and clips differ in both,
 * so each clip is decoded from its own packets within the pass's (`range`); frames no slot shows are still skipped.
 */
export async function decodeClipGroupNvdec(item: ClipPackets): Promise<Transferring<ClipResult[]>> {
  try {
    return results(await decodeMembersNvdec(item, [ownMember(item), ...(item.shared ?? [])]));
  } finally {
    if (item.packets) releaseBuffers(item.packets);
  }
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
  return m;
}

/** A member's clip, or its error thrown. */
function resultOf(m: Member): DecodedClip {
  if (m.error !== undefined) throw m.error;
  return m.clip!;
}

/** The members' results as values (errors serialized), with every clip's own buffer to transfer. */
function results(members: Member[]): Transferring<ClipResult[]> {
  const out = members.map((m): ClipResult =>
    m.error !== undefined ? { error: serializeError(m.error) } : { clip: m.clip! }
  );
  return transferable(out, members.flatMap((m) => m.transfer));
}

/** A clip prepared for a pass: its own packets, its seeded choices, its writer and destination. */
interface Prepared {
  member: Member;
  own: VideoPackets;
  /** Its frame selector's plan (window, stream end). */
  plan: SlotPlan;
  choice: ClipChoice;
  writer: FrameWriter;
  dest: FrameDestination;
  /** The destination was given by address: the clip goes back with empty `data`. */
  addressed: boolean;
}

/** A pass about to run: its packets and options, every member, and those that passed the checks. */
interface Pass {
  spec: ClipSpec;
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
function openPass(item: ClipPackets, shared: SharedClip[]): Pass | null {
  const members: Member[] = shared.map((s) => ({ ...s, transfer: [] }));
  let p: VideoPackets;
  try {
    p = clipPackets(item);
  } catch (e) {
    for (const m of members) fail(m, e);
    return { spec: item.spec, members, p: null!, o: null!, ready: [] };
  }
  const o = decodeOptions(item);
  const ready: Prepared[] = [];
  for (const m of members) {
    try {
      ready.push(prepare(item.spec, p, o, m));
    } catch (e) {
      fail(m, e);
    }
  }
  return { spec: item.spec, members, p, o, ready };
}

function prepare(spec: ClipSpec, p: VideoPackets, o: ResolvedOptions, member: Member): Prepared {
  member.range = [member.range[0], Math.min(member.range[1], p.numPackets)];
  const own = packetRange(p, member.range, [member.meta.start, member.meta.end]);
  const choice = clipChoice(spec, member.meta.seed);
  const writer = new FrameWriter(writerSpec(spec, own, choice), threadScaler(o.flags));
  const plan = checkFillable(spec, member.meta, own, o);
  const dest = member.dest === undefined ? newDestination(spec) : destination(spec, member.dest);
  if (member.dest === undefined && dest.data.buffer instanceof ArrayBuffer) {
    member.transfer = [dest.data.buffer];
  }
  return {
    member,
    own,
    plan,
    choice,
    writer,
    dest,
    addressed: member.dest !== undefined && "address" in member.dest,
  };
}

/**
 * After the decode: pads and finishes each prepared clip from its output (`pts`, or its error). The pass's
 * decoded and skipped frames are shared equally among its clips (the first takes the remainder).
 */
function finishPass(
  pass: Pass,
  outputs: { pts: Float64Array; error?: unknown }[],
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
      r.member.clip = finishClip(pass.spec, r, Array.from(out.pts), counts, failures);
    } catch (e) {
      fail(r.member, e);
    }
  }
  return members;
}

/** The CPU pass: one {@link decodePass} for every prepared clip. */
function decodeMembers(item: ClipPackets, shared: SharedClip[]): Member[] {
  const pass = openPass(item, shared)!;
  if (pass.ready.length === 0) return pass.members;
  const { p, o, ready } = pass;
  let run;
  try {
    run = decodePass(
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
  return finishPass(pass, run.outputs, run.decodedFrames, run.skippedFrames, failures);
}

/**
 * The NVDEC pass: each prepared clip decoded from its own packets (see {@link decodeClipGroupNvdec}), copied to
 * host memory and placed in its destination.
 */
async function decodeMembersNvdec(item: ClipPackets, shared: SharedClip[]): Promise<Member[]> {
  const pass = openPass(item, shared)!;
  const { o, ready } = pass;
  const outputs: { pts: Float64Array; error?: unknown }[] = [];
  let decoded = 0, skipped = 0;
  for (const c of ready) {
    try {
      c.writer.init(c.own.width, c.own.height);
      const [cw, ch] = c.writer.codedSize;
      const r = c.writer.codedRegion;
      using frames = decodeVideoNvdecSync(c.own, {
        width: cw,
        height: ch,
        crop: r ?? undefined,
        pixelFormat: "rgb24-planar",
        sampling: o.sampling,
        numFrames: o.numFrames,
        skipUnshown: o.skipUnshown,
      });
      const host = await frames.toHost();
      const from = frameLayout("rgb24-planar", cw, ch);
      for (let k = 0; k < frames.pts.length; k++) {
        const src = host.subarray(k * from.frameSize, (k + 1) * from.frameSize);
        c.writer.place(src, from.planes, c.dest.data, c.dest.offset + k * c.writer.frameSize);
      }
      decoded += frames.decodedFrames;
      skipped += frames.skippedFrames;
      outputs.push({ pts: frames.pts });
    } catch (e) {
      outputs.push({ pts: new Float64Array(0), error: e });
    }
  }
  return finishPass(pass, outputs, decoded, skipped, "");
}

// ------------------------------------------------------------------------------------------ one clip

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
 * at most (packets presented in it, or grid slots before the stream's end) leave more padding than allowed. A
 * window the stream goes on past pads nothing (its last frame is held: `repeatsHeld`).
 */
function checkFillable(spec: ClipSpec, meta: ClipBase, p: VideoPackets, o: ResolvedOptions): SlotPlan {
  const plan = slotPlan(p, o);
  const most = new FrameSelector(plan).capacity(framesInWindow(p));
  const w: [number, number] = [meta.start, meta.end];
  if (most === 0) throw new ClipError(meta.path, "decode", w, "no frame is on screen in the window");
  if (!repeatsHeld(plan) && spec.numFrames - most > spec.maxPadFraction * spec.numFrames) {
    throw new ClipError(meta.path, "decode", w, paddingReason(most, spec, true));
  }
  return plan;
}

/** Why a clip with `frames` of its `numFrames` fails the padding bound (`most`: before decoding, an upper bound). */
function paddingReason(frames: number, spec: ClipSpec, most: boolean): string {
  const n = frames === 1 ? "1 frame" : `${frames} frames`;
  return `the window ${
    most ? `can give ${n} at most` : `gave ${n}`
  } of the ${spec.numFrames} asked and the ` +
    `stream ends inside it: ${
      spec.numFrames - frames
    } frames of padding exceed maxPadFraction ${spec.maxPadFraction}`;
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
  const view = viewAt(dest.address, bytes);
  return { data: float ? new Float32Array(view.buffer) : view, offset: 0 };
}

/** Checks the frames decoded, pads to `numFrames`, and builds the clip with its outcome. */
function finishClip(
  spec: ClipSpec,
  { member: { meta }, own: p, plan, writer, choice, dest, addressed }: Prepared,
  pts: number[],
  counts: { decoded: number; skipped: number; passClips: number },
  failures: string,
): DecodedClip {
  const w: [number, number] = [meta.start, meta.end];
  const filled = pts.length;
  if (filled === 0) {
    throw new ClipError(meta.path, "decode", w, `no frame is on screen in the window${failures}`);
  }
  const repeats = spec.numFrames - filled;
  const held = repeatsHeld(plan) ? repeats : 0, padded = repeats - held;
  if (padded > spec.maxPadFraction * spec.numFrames) {
    throw new ClipError(meta.path, "decode", w, paddingReason(filled, spec, false) + failures);
  }
  const size = writer.frameSize, last = dest.offset + (filled - 1) * size;
  for (let k = filled; k < spec.numFrames; k++) {
    dest.data.copyWithin(dest.offset + k * size, last, last + size);
    pts.push(pts[filled - 1]);
  }
  const [dw, dh] = writer.displayed;
  const r = writer.region;
  const outcome: ClipOutcome = {
    pts,
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

// ------------------------------------------------------------------------------------------ worker upkeep

/** What {@link memoryReport} returns: this Worker's V8 heap and external memory, and its FFmpeg objects. */
export interface WorkerMemory {
  /** V8 heap reserved, bytes. */
  heapTotal: number;
  /** V8 heap in use, bytes. */
  heapUsed: number;
  /** Memory outside the V8 heap that JavaScript objects hold (ArrayBuffers), bytes. */
  external: number;
  /** FFmpeg objects alive in this thread, by kind. */
  native: NativeObjectCounts;
}

/**
 * This Worker's memory (`Deno.memoryUsage()` without the process-wide RSS) and live FFmpeg objects; with `gc`
 * (and `--v8-flags=--expose-gc`), after a full garbage collection of this Worker's heap.
 */
export function memoryReport(gc = false): WorkerMemory {
  if (gc) (globalThis as { gc?: () => void }).gc?.();
  const { heapTotal, heapUsed, external } = Deno.memoryUsage();
  return { heapTotal, heapUsed, external, native: nativeObjectCounts() };
}

/** Frees this Worker's cached CPU decoder and scaler and its NVDEC decoder; the pool calls it before terminating. */
export function release(): void {
  try {
    releaseDecoder();
  } finally {
    releaseDecoderNvdec();
  }
}
