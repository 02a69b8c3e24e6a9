/**
 * The loader's batch assembler: its stages after decode. `replace` gives a failed clip's position what
 * `onClipError` says (a substitute, `replace.ts`; nothing; or the epoch's end with the clip's error); `collate`
 * joins one batch's placed clips into a batch (in its batch slot, a reused buffer or a new one), counts every
 * planned clip (`clip_stats.ts`) and hands the clips' buffers on to the next clips or frees them.
 * @module
 */

import { releaseBuffers } from "../../pipeline/transfer.ts";
import { threadMs } from "../../media/spans.ts";
import { clipError, clipFailureError, isFailedClip } from "../clip/clip_failure.ts";
import type { ClipSpec } from "../clip/clip_spec.ts";
import type { ClipAccounting } from "./clip_stats.ts";
import type { ClipProfile } from "../decode/clip_profile.ts";
import { type Batch, type BatchLayout, collate } from "./collate.ts";
import type { BatchSlots } from "./batch_slots.ts";
import type { OnClipError, Replacer } from "./replace.ts";
import type { BufferPool } from "../../memory/buffer_pool.ts";
import type { DecodedClip, FailedClip, PlacedClip } from "../clip/life.ts";

/** The buffers a loader without slots decodes clips into and assembles batches in, reused (`buffer_pool.ts`). */
export interface ReusedBuffers {
  /** Clips' buffers. */
  clips: BufferPool;
  /** Batches' buffers. */
  batches: BufferPool;
}

/** What the batch assembler works with: the loader's options for batches and the parts it shares. */
export interface BatchAssemblerParts {
  onClipError: OnClipError;
  batchSize: number;
  dropLast: boolean;
  layout: BatchLayout;
  /** What each clip is. */
  spec: ClipSpec;
  /** Counts every planned clip. */
  accounting: ClipAccounting;
  /** Loads substitutes (`onClipError: "replace"`). */
  replacer: Replacer;
  /** The loader's batch slots; null: batches in their own buffers. */
  slots: BatchSlots | null;
  /** Without slots: the clip and batch buffers reused; null: new ones. */
  buffers: ReusedBuffers | null;
  /** Where the collate stage's time goes (`clip_profile.ts`); null: not timed. */
  profile: ClipProfile | null;
}

/** The loader's replace and collate stages; see the module docs. */
export class BatchAssembler {
  readonly #p: BatchAssemblerParts;

  /** @param parts the options and shared parts it assembles with */
  constructor(parts: BatchAssemblerParts) {
    this.#p = parts;
  }

  /**
   * The replace stage: a decoded clip as it is; a failed one's position filled as `onClipError` says.
   * @throws the clip's error (`onClipError: "fail"`), or the accounting's when too many clips failed
   */
  async place(x: DecodedClip | FailedClip, signal: AbortSignal): Promise<PlacedClip> {
    const { onClipError, accounting, replacer } = this.#p;
    if (!isFailedClip(x)) return { clip: x, failures: [] };
    if (onClipError === "replace") return await replacer.replace(x.failed, signal);
    if (onClipError === "skip") return { clip: null, failures: [x.failed] };
    try {
      accounting.collated(x.failed.epoch, [{ clip: null, failures: [x.failed] }], false, true);
    } catch (e) {
      throw clipError(e);
    }
    throw clipError(clipFailureError(x.failed));
  }

  /** The collate stage: one batch's placed clips as a batch (undefined: none of them, or dropped), timed. */
  collate(placed: PlacedClip[]): Batch | undefined {
    const profile = this.#p.profile;
    if (profile === null) return this.#collateNow(placed);
    const t0 = threadMs();
    try {
      return this.#collateNow(placed);
    } finally {
      profile.addMain("collate", threadMs() - t0);
    }
  }

  /** {@link BatchAssembler.collate}, untimed: counts the clips, makes the batch, hands the clips' buffers on. */
  #collateNow(placed: PlacedClip[]): Batch | undefined {
    const { batchSize, dropLast, layout, spec, accounting, slots, buffers } = this.#p;
    const first = placed[0];
    const epoch = first.clip?.meta.epoch ?? first.failures[0].epoch;
    const clips = placed.flatMap((s) => s.clip === null ? [] : [s.clip]);
    const drop = dropLast && placed.length < batchSize;
    // A clip's data is its own buffer, or a view of its place in a batch slot with its own ArrayBuffer object:
    // releasing it frees the buffer or detaches that view only.
    let batch: Batch | undefined;
    try {
      accounting.collated(epoch, placed, drop);
      if (slots !== null) batch = slots.collate(placed, clips, drop);
      else if (!drop && clips.length > 0) {
        batch = collate(clips, spec.numFrames, layout, undefined, buffers?.batches);
      }
    } catch (e) {
      if (slots !== null && batch === undefined) {
        try {
          slots.collate(placed, [], true); // gives its slot back
        } catch { /* the slot went back already */ }
      }
      throw clipError(e);
    } finally {
      // in the batch now: decode the next clips into them, or free them now (not at the next GC)
      if (buffers !== null) { for (const c of clips) buffers.clips.give(c.data.buffer); }
      else releaseBuffers(clips.map((c) => c.data));
    }
    return batch;
  }
}
