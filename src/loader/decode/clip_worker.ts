/**
 * Worker functions of the video loader, run in `WorkerPool`s: `demuxClips` cuts one video into the packets of its
 * clips (one open of the file for all of them), `decodeClip` decodes a clip (and the clips its pass serves) into
 * exactly what its `ClipSpec` asks, with the decoder the spec names: on the CPU (frames chosen by
 * `src/media/frame_select.ts`, rotated, cropped, resized, flipped and converted in one pass by
 * `src/media/frame_writer.ts`) or on an NVIDIA GPU (frame choice, crop, resize, rotation, flip, layout and
 * `float32` on the GPU, then one copy to host, or none into a device batch slot). Both are the one clip pass
 * (`clip_pass.ts`) over a different `ClipPassDecoder` (`decode/devices.ts`).
 *
 * Every clip comes back with exactly `numFrames` frames (a short clip repeats its last frame: `held` while it is
 * still on screen, `padded` beyond the end of the stream) or fails alone, as its `FailedClip` (the record of its
 * `ClipError`, naming the file, the window, the stage and the cause): a window the demuxer cannot serve travels on
 * as a failed item and fails at decode, so one bad window never takes the other clips of its video with it. Buffers go back as transferables (nothing copied), or straight into a
 * caller's destination (`ClipPackets.dest`): a buffer, or a native address (a batch slot in shared memory,
 * `batch_slots.ts`; Workers share the process's address space), in which case the clip comes back with empty
 * `data` (its pixels are already where the caller said).
 * @module
 */

import { type NativeObjectCounts, nativeObjectCounts } from "../../media/av_objects.ts";
import { passDecoderFor, releaseDecoders } from "./devices.ts";
import { demuxGroupsSync } from "../../media/demux.ts";
import { MediaError } from "../../errors.ts";
import { lap, startSpans, takeSpans } from "../../media/spans.ts";
import { transferable, type Transferring } from "../../pipeline/transfer.ts";
import { decodeClips } from "./clip_pass.ts";
import type { ClipPackets, DecodedClip, FailedClip, VideoTask } from "../clip/life.ts";

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

/**
 * Decodes a clip, and the clips its pass serves with it (`item.shared`), with the decoder its spec names
 * (`ClipSpec.decoder`: the CPU's one forward pass, or NVDEC's, each clip from its own packets, on the GPU):
 * one result per clip, this one first, each its clip or its failure record. A lone clip is a pass of one.
 */
export function decodeClip(item: ClipPackets): Transferring<(DecodedClip | FailedClip)[]> {
  return decodeClips(item, passDecoderFor(item.spec));
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

/** Frees this Worker's cached decoders (CPU and NVDEC) and scaler; the pool calls it before terminating. */
export function release(): void {
  releaseDecoders();
}
