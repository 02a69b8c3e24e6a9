/**
 * Worker functions of the video loader, run in `WorkerPool`s: `demuxClips` cuts one video into the packets of its
 * clips (one open of the file for all of them), `decodeClip` decodes one clip into exactly what its
 * {@link ClipSpec} asks (frames chosen by `src/media/frame_select.ts`, rotated, cropped, resized, flipped and
 * converted in one pass by `src/media/frame_writer.ts`), `decodeClipNvdec` does the same on an NVIDIA GPU
 * (frame choice, crop and resize on the GPU; rotation, flip and `float32` after the copy to host).
 *
 * Every clip comes back with exactly `numFrames` frames (short clips padded by repeating the last frame, counted
 * in `padded`) or fails alone with a {@link ClipError} naming the file, the window, the stage and the cause: a
 * window the demuxer cannot serve travels on as a failed item and fails at decode, so one bad window never takes
 * the other clips of its video with it. Buffers go back as transferables (nothing copied), or straight into a
 * caller's destination (`ClipPackets.dest`).
 * @module
 */

import {
  decodeFrames,
  framesInWindow,
  releaseDecoder,
  type ResolvedOptions,
  slotPlan,
  threadScaler,
} from "../media/decode.ts";
import { type NativeObjectCounts, nativeObjectCounts } from "../media/av_objects.ts";
import { decodeVideoNvdecSync, releaseDecoderNvdec } from "../nvdec/decoder.ts";
import { demuxEachSync } from "../media/demux.ts";
import { VideoPackets, type VideoPacketsInit } from "../media/packets.ts";
import { FrameSelector } from "../media/frame_select.ts";
import { resizeRegion } from "../media/crop.ts";
import { normalisation } from "../media/orient.ts";
import { type FrameDestination, FrameWriter, type WriterSpec } from "../media/frame_writer.ts";
import { frameLayout } from "../media/frames.ts";
import { SWS_FLAGS } from "../media/scale.ts";
import { ClipError, MediaError, NvdecUnsupportedError } from "../errors.ts";
import { releaseBuffers, transferable, type Transferring } from "../pipeline/transfer.ts";
import { mulberry32 } from "./sampler.ts";
import type { ClipBase, DecodedClip } from "./collate.ts";
import type { ClipOutcome, ClipSpec } from "./clip_spec.ts";
import type { MemberRef } from "../shards/dataset.ts";

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
}

/** One clip after demux: its packets, or why its window could not be served. */
export interface ClipPackets {
  meta: ClipBase;
  spec: ClipSpec;
  /** The clip's packets; absent when demux failed for this window (`failure` says why). */
  packets?: VideoPacketsInit;
  failure?: string;
  /**
   * Write the frames here (e.g. a batch slot in shared memory): `numFrames` frames of `3·width·height` elements
   * from `offset` on, a `Float32Array` for `dtype: "float32"`. Default: a new buffer per clip.
   */
  dest?: FrameDestination;
}

/** Demuxes every clip window of one video; see the module docs. */
export function demuxClips(task: VideoTask): Transferring<ClipPackets[]> {
  const src = task.src ?? task.path;
  const windows = task.clips.map((c): [number, number] => [c.start, c.end]);
  const results = demuxEachSync(src, { windows });
  const buffers: ArrayBuffer[] = [];
  const out = results.map((r, i): ClipPackets => {
    const meta = task.clips[i];
    if (!(r instanceof VideoPackets)) {
      return { meta, spec: task.spec, failure: r instanceof MediaError ? r.reason : r.message };
    }
    buffers.push(...r.transferables());
    return { meta, spec: task.spec, packets: r };
  });
  return transferable(out, buffers);
}

/** Decodes one clip on the CPU; see the module docs. */
export function decodeClip(item: ClipPackets): Transferring<DecodedClip> {
  const { meta, spec } = item;
  try {
    const p = clipPackets(item);
    const o = decodeOptions(spec);
    const choice = clipChoice(spec, meta.seed);
    const writer = new FrameWriter(writerSpec(spec, p, choice), threadScaler(o.flags));
    checkFillable(item, p, o);
    const dest = item.dest ?? newDestination(spec);
    const run = decodeFrames(p, o, writer, dest);
    const failures = run.failedPackets > 0
      ? `; ${run.failedPackets} packets undecodable (first: ${run.firstFailure})`
      : "";
    return finishClip(item, p, writer, choice, dest, Array.from(run.pts), run.decodedFrames, failures);
  } catch (e) {
    throw asClipError(e, meta);
  } finally {
    // The packets came here by transfer and are spent: free them now rather than at this Worker's next GC.
    if (item.packets) releaseBuffers(item.packets);
  }
}

/**
 * Decodes one clip with NVDEC (`src/nvdec`): the frame choice, the region (display area) and the resize (target
 * size) on the GPU, then a copy to host memory, then rotation, flip, layout and `float32` in one pass.
 */
export async function decodeClipNvdec(item: ClipPackets): Promise<Transferring<DecodedClip>> {
  const { meta, spec } = item;
  try {
    const p = clipPackets(item);
    const o = decodeOptions(spec);
    const choice = clipChoice(spec, meta.seed);
    const writer = new FrameWriter(writerSpec(spec, p, choice), null);
    checkFillable(item, p, o);
    writer.init(p.width, p.height);
    const [cw, ch] = writer.codedSize;
    const r = writer.codedRegion;
    using frames = decodeVideoNvdecSync(p, {
      width: cw,
      height: ch,
      crop: r ?? undefined,
      pixelFormat: "rgb24-planar",
      sampling: o.sampling,
      numFrames: o.numFrames,
    });
    const host = await frames.toHost();
    const dest = item.dest ?? newDestination(spec);
    const from = frameLayout("rgb24-planar", cw, ch);
    for (let k = 0; k < frames.pts.length; k++) {
      const src = host.subarray(k * from.frameSize, (k + 1) * from.frameSize);
      writer.place(src, from.planes, dest.data, dest.offset + k * writer.frameSize);
    }
    return finishClip(item, p, writer, choice, dest, Array.from(frames.pts), frames.decodedFrames, "");
  } catch (e) {
    throw asClipError(e, meta);
  } finally {
    if (item.packets) releaseBuffers(item.packets);
  }
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

function decodeOptions(spec: ClipSpec): ResolvedOptions {
  return {
    pixelFormat: spec.planar ? "rgb24-planar" : "rgb24",
    sampling: spec.sampling,
    numFrames: spec.numFrames,
    threads: 1,
    skipNonRef: false,
    skipUnshown: true,
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
 * at most (packets presented in it, or grid slots before the stream's end) leave more padding than allowed.
 */
function checkFillable(item: ClipPackets, p: VideoPackets, o: ResolvedOptions): void {
  const { spec, meta } = item;
  const most = new FrameSelector(slotPlan(p, o)).capacity(framesInWindow(p));
  const w: [number, number] = [meta.start, meta.end];
  if (most === 0) throw new ClipError(meta.path, "decode", w, "no frame is presented in the window");
  if (spec.numFrames - most > spec.maxPadFraction * spec.numFrames) {
    throw new ClipError(meta.path, "decode", w, paddingReason(most, spec, true));
  }
}

/** Why a clip with `frames` of its `numFrames` fails the padding bound (`most`: before decoding, an upper bound). */
function paddingReason(frames: number, spec: ClipSpec, most: boolean): string {
  const n = frames === 1 ? "1 frame" : `${frames} frames`;
  return `the window ${most ? `can give ${n} at most` : `gave ${n}`} of the ${spec.numFrames} asked: ` +
    `${spec.numFrames - frames} frames of padding exceed maxPadFraction ${spec.maxPadFraction}`;
}

function newDestination(spec: ClipSpec): FrameDestination {
  const n = spec.numFrames * 3 * spec.width * spec.height;
  return { data: spec.dtype === "float32" ? new Float32Array(n) : new Uint8Array(n), offset: 0 };
}

/** Checks the frames decoded, pads to `numFrames`, and builds the clip with its outcome. */
function finishClip(
  item: ClipPackets,
  p: VideoPackets,
  writer: FrameWriter,
  choice: ClipChoice,
  dest: FrameDestination,
  pts: number[],
  decodedFrames: number,
  failures: string,
): Transferring<DecodedClip> {
  const { spec, meta } = item;
  const w: [number, number] = [meta.start, meta.end];
  const filled = pts.length;
  if (filled === 0) {
    throw new ClipError(meta.path, "decode", w, `no frame is presented in the window${failures}`);
  }
  const padded = spec.numFrames - filled;
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
    padded,
    span: [pts[0], pts[filled - 1] + samplingStep(spec, p, w)],
    rotation: p.rotation,
    rotated: spec.rotate && p.rotation % 360 !== 0,
    crop: r === null ? [0, 0, dw, dh] : [r.left, r.top, r.width, r.height],
    flipped: choice.flipped,
    decodedFrames,
  };
  const data = dest.data.subarray(dest.offset, dest.offset + spec.numFrames * size);
  const clip: DecodedClip = { meta, data, width: spec.width, height: spec.height, outcome };
  // A caller's destination stays where it is; a buffer of our own moves to the receiver.
  const own = item.dest === undefined && data.buffer instanceof ArrayBuffer ? [data.buffer] : [];
  return transferable(clip, own);
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
  heapTotal: number;
  heapUsed: number;
  external: number;
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
