/**
 * Worker functions of the video loader, run in `WorkerPool`s: `demuxClips` cuts one video into the packets of its
 * clips (one open of the file for all of them), `decodeClip` decodes one clip into exactly what its
 * {@link ClipSpec} asks (frames chosen by `src/media/frame_select.ts`, rotated, cropped, resized, flipped and
 * converted in one pass by `src/media/frame_writer.ts`), `decodeClipNvdec` does the same on an NVIDIA GPU
 * (frame choice, crop, resize, rotation, flip, layout and `float32` on the GPU, then one copy to host). Both are the
 * one clip pass (`clip_pass.ts`) over a different `ClipPassDecoder`.
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

import { cpuPassDecoder } from "../media/decode_pass.ts";
import { releaseDecoder } from "../media/decoder.ts";
import { type NativeObjectCounts, nativeObjectCounts } from "../media/av_objects.ts";
import { nvdecPassDecoder } from "../nvdec/clip_pass.ts";
import { releaseDecoderNvdec } from "../nvdec/decoder_cache.ts";
import { demuxGroupsSync } from "../media/demux.ts";
import { MediaError } from "../errors.ts";
import { lap, startSpans, takeSpans } from "../media/spans.ts";
import { transferable, type Transferring } from "../pipeline/transfer.ts";
import type { ClipBase, DecodedClip } from "./collate.ts";
import type { ClipSpec } from "./clip_spec.ts";
import type { MemberRef } from "../dataset/items.ts";
import { type ClipPackets, type ClipResult, decodeGroup, decodeOne } from "./clip_pass.ts";

export type { ClipBase };
export type {
  AddressedDestination,
  ClipDestination,
  ClipPackets,
  ClipResult,
  SharedClip,
} from "./clip_pass.ts";

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
   * `order[clips.length + j]` is `extras[j]`'s place.
   */
  share?: { order: number[]; horizon: number };
  /**
   * Decode once across rows (set by the loader's front): clips of other tasks of the same file that leave the
   * shuffle buffer after every clip of this one, offered to this task's passes. An extra is cut only into a
   * group one of `clips` opens (never on its own: `optionalFrom`) and gets no item here: the pass that serves
   * it lists it in `shared`, and its own task emits it with `servedBy`.
   */
  extras?: ClipBase[];
  /** Time the demux's phases (`clip_profile.ts`): they come back as the first clip's `phases`. */
  profile?: boolean;
}

/**
 * Demuxes every clip window of one video; see the module docs. With `task.share`, clips whose packets overlap
 * (and whose output places are within the horizon) are grouped: the one that leaves the shuffle buffer first
 * carries the packets of all and lists the others in `shared`; each other one carries `servedBy`.
 */
export function demuxClips(task: VideoTask): Transferring<ClipPackets[]> {
  if (task.profile) startSpans();
  const src = task.src ?? task.path;
  const all = [...task.clips, ...task.extras ?? []];
  const windows = all.map((c): [number, number] => [c.start, c.end]);
  const share = task.share;
  const join = (members: readonly number[], next: number): boolean => {
    if (share === undefined) return false;
    const places = [...members, next].map((i) => share.order[i]);
    return Math.max(...places) - Math.min(...places) <= share.horizon;
  };
  const own = task.clips.length;
  const audioSpec = task.spec.audio;
  const { groups, failures, audio } = demuxGroupsSync(src, {
    windows,
    join,
    optionalFrom: own,
    audio: audioSpec,
  });
  const buffers: ArrayBuffer[] = [];
  const out: ClipPackets[] = task.clips.map((meta, i) => {
    const f = failures[i];
    return {
      meta,
      spec: task.spec,
      failure: f === null ? "no packets" : f instanceof MediaError ? f.reason : f.message,
    };
  });
  // Each served clip's audio (`ClipSpec.audio`) travels with it: on its own item, or in its pass's `shared`.
  const audioOf = (i: number) => {
    const a = audio?.[i];
    if (a) buffers.push(a.samples.buffer);
    return a ? { audio: a } : {};
  };
  for (const g of groups) {
    buffers.push(...g.packets.transferables());
    const members = g.members.map((m) => ({ i: m.window, range: m.range }));
    const place = (m: { i: number }) => share?.order[m.i] ?? m.i;
    // extras leave the shuffle buffer after every clip of the task: the lead is one of its own clips
    const lead = members.reduce((a, b) => (place(b) < place(a) ? b : a));
    const item: ClipPackets = {
      meta: task.clips[lead.i],
      spec: task.spec,
      packets: g.packets,
      ...audioOf(lead.i),
    };
    if (members.length > 1) {
      item.range = lead.range;
      item.shared = members.filter((m) => m !== lead).map((m) => ({
        meta: all[m.i],
        range: m.range,
        ...audioOf(m.i),
      }));
      for (const m of members) {
        if (m !== lead && m.i < own) {
          out[m.i] = { meta: all[m.i], spec: task.spec, servedBy: item.meta.position };
        }
      }
    }
    out[lead.i] = item;
  }
  lap("read");
  const phases = takeSpans();
  if (phases !== null && out.length > 0) out[0].phases = phases;
  return transferable(out, buffers);
}

/** Decodes one clip on the CPU (its own packets only; `shared` clips are left to `decodeClipGroup`). */
export function decodeClip(item: ClipPackets): Transferring<DecodedClip> {
  return decodeOne(item, cpuPassDecoder);
}

/**
 * Decodes a clip and the clips it shares its pass with (`item.shared`) in one forward pass on the CPU: one result
 * per clip, this one first, each its clip or its own `ClipError` (one clip's failure leaves the others' frames).
 */
export function decodeClipGroup(item: ClipPackets): Transferring<ClipResult[]> {
  return decodeGroup(item, cpuPassDecoder);
}

/**
 * Decodes one clip with NVDEC (`src/nvdec`): the frame choice, the region (display area) and the resize (target
 * size), then rotation, flip, layout and `float32` (the clip kernel) on the GPU, then one copy to host memory.
 */
export function decodeClipNvdec(item: ClipPackets): Promise<Transferring<DecodedClip>> {
  return Promise.resolve().then(() => decodeOne(item, nvdecPassDecoder(item.spec.device)));
}

/**
 * {@link decodeClipGroup} with NVDEC. The decoder's crop and resize are set per decode, and clips differ in both,
 * so each clip is decoded from its own packets within the pass's (`src/nvdec/clip_pass.ts`).
 */
export function decodeClipGroupNvdec(item: ClipPackets): Promise<Transferring<ClipResult[]>> {
  return Promise.resolve().then(() => decodeGroup(item, nvdecPassDecoder(item.spec.device)));
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
