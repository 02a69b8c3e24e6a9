/**
 * `BatchSlots`: the loader's ring of batch slots (`slots` option): batches are assembled in `slots` fixed
 * buffers, reused batch after batch, in one shared-memory mapping (`SlotRing` over a memfd, `src/serve`) that
 * the decode Workers address directly and that `sluice serve` hands to a trainer as it is. So a clip's pixels
 * are written once, by its decode Worker, into their place in the batch, and never copied on their way to the
 * consumer (in this process, or a trainer mapping the memfd); and the loader's batch memory is `slots` batches,
 * whatever the consumer does.
 *
 * - Places before decode (`slot_turns.ts`): where each clip of an epoch ends up is known when the epoch is
 *   planned (`epochOrder`): output index `j` is clip `j mod B` of batch `⌊j / B⌋`. The decode step asks
 *   {@link BatchSlots.place} for a clip's place before it decodes it; the first clip of a batch acquires the
 *   batch's slot, waiting for the ring's credit (the backpressure that bounds memory). Slots are acquired in
 *   batch order (a resumed epoch's from its resume batch), so the batch the consumer waits for never waits
 *   behind a later one. A substitute clip keeps the failed clip's position, hence its place.
 * - A clip decoded in another clip's pass (decode once) is written into its place when its batch already has a
 *   slot or can get one without waiting; otherwise into its own buffer, copied into its place when it comes
 *   (counted in {@link BatchSlots.copiedBytes}, like the within-slot moves that close the gaps of skipped clips
 *   and the regrouping of a `"BCTHW"` batch, whose clips are decoded apart and regrouped plane by plane).
 * - Device slots (`decode: "nvdec"`): the ring is one CUDA allocation (`CudaSlots`, exported by CUDA IPC), the
 *   places are device addresses the NVDEC Workers write into on the GPU, in the batch's layout (`"BCTHW"`
 *   included: a clip's part of such a batch is its `[3, T, H, W]` block), so nothing is regrouped, and gaps are
 *   closed device to device. Such a batch has `device` and no host `data` (`toHost()` copies).
 * - A batch views its slot and gives it back when disposed (`using`); after that its `data` reads as empty.
 *   At most `slots` batches exist: asking for the next batch while the consumer holds all of them is an error
 *   that says so (it could never come), never a reuse of memory still in use.
 * - Decoding ahead has its own bound, `lookahead`: a batch gets a slot only once fewer than `lookahead` batches
 *   lie between it and the consumer's next one (delivered or dropped batches count as passed). So `slots` is
 *   how many batches a consumer may keep, not how far a fast loader runs ahead of a slow one: a consumer that
 *   keeps none has at most `lookahead` slots' pages touched beyond the ones it holds.
 * - The ring must fit in memory (`batch_ring.ts`, the slots' memory): a ring larger than the memory this
 *   process can still commit (`available.ts`) is refused before it is made, naming `slots`, the batch size,
 *   the frames, width and height (the caller's words) and what each of them costs.
 * @module
 */

import { InvalidArgumentError } from "../../errors.ts";
import { releaseBuffers } from "../../pipeline/transfer.ts";
import type { ClipSampler } from "../../dataset/sampler.ts";
import { optionError } from "../../options.ts";
import type { ClipSpec } from "../clip/clip_spec.ts";
import { type Batch, type BatchLayout, collate, hostBatch } from "./collate.ts";
import { BatchRing, SLOT_WORDS } from "./batch_ring.ts";
import { SlotTurns, type SlotWhere } from "./slot_turns.ts";
import type { AddressedDestination, ClipBase, ClipPlaces, DecodedClip, PlacedClip } from "../clip/life.ts";

/** A clip's place in its epoch's plan (a planned clip's, or a failed one's). */
type Position = Pick<ClipBase, "epoch" | "position">;

/** Where a slot is in its life: a batch being assembled, collated and waiting in the loader, or held by the consumer. */
type SlotState = "assembling" | "ready" | "held";

/** The slot a batch views and who holds it. */
interface SlotUse {
  slots: BatchSlots;
  slot: number;
}

const SLOT_OF = new WeakMap<object, SlotUse>();

/** The slot a loader batch views, or undefined for a batch with its own memory. */
export function slotOf(batch: unknown): SlotUse | undefined {
  return typeof batch === "object" && batch !== null ? SLOT_OF.get(batch) : undefined;
}

/**
 * A batch with its own memory: `batch` itself when it has it, else a host copy of a slot-backed batch (whose slot
 * is given back at once): for keeping a batch beyond its step (`cacheLoader`).
 */
export function ownedBatch(batch: Batch): Batch {
  if (slotOf(batch) === undefined) return batch;
  const data = batch.device === undefined ? batch.data.slice() : batch.toHost(),
    labels = batch.labels.slice(),
    audio = batch.audio?.slice();
  const clips = structuredClone(batch.clips);
  const { dtype, layout } = batch, shape = [...batch.shape];
  const audioShape = batch.audioShape === undefined ? undefined : [...batch.audioShape];
  batch[Symbol.dispose]();
  const owned = hostBatch(data, { dtype, shape, layout, labels, clips });
  if (audio !== undefined) [owned.audio, owned.audioShape] = [audio, audioShape];
  return owned;
}

/**
 * The loader's batch slots; see the module docs. Their memory is a {@link BatchRing}, the order in which batches
 * get them {@link SlotTurns}; this is their life: a batch's slot taken for its first clip, its clips adopted into
 * their places, the batch collated there and handed to the consumer, the slot given back when it is disposed.
 */
export class BatchSlots extends BatchRing implements ClipPlaces {
  readonly #turns: SlotTurns;
  /** Slot of each batch with one, by `epoch/batch`, while it is assembled. */
  readonly #batches = new Map<string, number>();
  readonly #state = new Map<
    number,
    { state: SlotState; batch: object | null; epoch?: number; index?: number }
  >();
  #acquiring: Promise<unknown> = Promise.resolve();
  #pending = 0;
  #copied = 0;

  /**
   * @param slots batch slots, `[1, 1024]`
   * @param spec what each clip is (its size)
   * @param batchSize clips per batch
   * @param layout the batches' layout
   * @param sampler the loader's sampler (each epoch's output order)
   * @param opts `device`: the CUDA device of device slots (NVDEC; default null: host slots); `lookahead`:
   *   batches beyond the consumer's next one that may have a slot (default: no bound but `slots`)
   * @throws {InvalidArgumentError} when the ring does not fit in the memory this process can commit
   */
  constructor(
    slots: number,
    spec: ClipSpec,
    batchSize: number,
    layout: BatchLayout,
    sampler: ClipSampler,
    opts: { device?: number | null; lookahead?: number } = {},
  ) {
    super(slots, spec, batchSize, layout, opts.device ?? null);
    this.#turns = new SlotTurns(sampler, batchSize, opts.lookahead ?? Infinity);
  }

  /** Pixel bytes copied into slots (see the module docs); 0 when every clip was decoded into its place. */
  get copiedBytes(): number {
    return this.#copied;
  }

  /** Batches the consumer holds (delivered, not yet disposed). */
  get held(): number {
    let n = 0;
    for (const s of this.#state.values()) if (s.state === "held") n++;
    return n;
  }

  /** The clip's place, acquiring its batch's slot first (in batch order, waiting for credit). */
  async place(meta: Position, signal?: AbortSignal): Promise<AddressedDestination> {
    const where = this.#turns.where(meta);
    const have = this.#batches.get(where.key);
    if (have !== undefined) return this.clipPlace(have, where.index);
    this.#pending++;
    const slot = this.#acquiring.then(() => this.#acquireUpTo(where, signal));
    this.#acquiring = slot.catch(() => {}).finally(() => this.#pending--);
    return this.clipPlace(await slot, where.index);
  }

  /** The clip's place when its batch has a slot or can get one now without waiting; else undefined. */
  tryPlace(meta: ClipBase): AddressedDestination | undefined {
    const where = this.#turns.where(meta);
    if (!this.#batches.has(where.key)) {
      if (this.#pending > 0 || !this.#turns.advance(where)) return undefined;
      while (!this.#batches.has(where.key)) {
        if (this.#turns.tooFarAhead()) return undefined;
        const slot = this.ring.tryAcquire();
        if (slot === undefined) return undefined;
        this.#take(slot);
      }
    }
    return this.clipPlace(this.#batches.get(where.key)!, where.index);
  }

  /**
   * A decoded clip in its place: one decoded there already comes back with empty data and gets a view of its
   * place; one decoded into its own buffer (no place was free for it yet, or a pass elsewhere decoded it) is
   * copied there, its buffer then given to `recycle` (default: freed).
   */
  async adopt(
    clip: DecodedClip,
    signal?: AbortSignal,
    recycle?: (buffer: ArrayBuffer) => void,
  ): Promise<DecodedClip> {
    const dest = await this.place(clip.meta, signal);
    const done = (data: DecodedClip["data"]) => {
      this.#copied += dest.length;
      if (recycle !== undefined && data.buffer instanceof ArrayBuffer) recycle(data.buffer);
      else releaseBuffers(data);
    };
    if (this.device !== null) {
      if (clip.data.length !== 0) {
        const d = clip.data;
        const at = Number(dest.address - this.address);
        this.ring.memory.write(at, new Uint8Array(d.buffer, d.byteOffset, d.byteLength));
        done(d);
        clip.data = clip.data instanceof Float32Array ? new Float32Array(0) : new Uint8Array(0);
      }
      return clip;
    }
    const view = this.view(dest.address, dest.length);
    if (clip.data.length !== 0) {
      view.set(clip.data as Uint8Array);
      done(clip.data);
    }
    clip.data = view;
    return clip;
  }

  /**
   * The batch of `placed` (one batch's positions, in order) in its slot; undefined (the slot given back) when it
   * has no clip or is dropped. `clips` are the placed clips (`"BCTHW"`: in their own buffers, regrouped here).
   */
  collate(placed: readonly PlacedClip[], clips: DecodedClip[], drop: boolean): Batch | undefined {
    const first = placed[0];
    const where = this.#turns.where(first.clip?.meta ?? first.failures[0]);
    const slot = this.#batches.get(where.key);
    if (slot === undefined) throw new InvalidArgumentError(`batch slots: batch ${where.key} has no slot`);
    this.#batches.delete(where.key);
    if (drop || clips.length === 0) {
      this.#give(slot);
      this.#turns.pass(where.epoch, where.batch);
      return undefined;
    }
    if (this.direct) {
      // close the gaps of skipped clips (their places stay empty otherwise)
      const base = this.ring.offset(slot);
      for (const [i, c] of clips.entries()) {
        const k = this.#turns.where(c.meta).index;
        if (k === i) continue;
        this.moveClip(base + k * this.clipBytes, base + i * this.clipBytes);
        this.#copied += this.clipBytes;
      }
    }
    const batch = collate(clips, this.numFrames, this.layout, this.batchInto(slot, clips.length));
    if (!this.direct) this.#copied += clips.length * this.clipBytes;
    this.#handOut(slot, batch, where);
    return batch;
  }

  /**
   * Checks that the consumer can get another batch: throws `InvalidArgumentError` about the `slots` option when it
   * holds every slot (the next batch could never be assembled).
   */
  checkCredit(): void {
    if (this.held < this.ring.slots) return;
    const says = [
      `loader: all ${this.ring.slots} batch slots are held by batches not yet disposed, so no further batch ` +
      "can be made: dispose each batch when its step is done (`for await (using batch of loader)`), copy " +
      "what you keep (`batch.data.slice()`), or raise the loader's ",
      { option: "slots" },
      " option",
    ];
    throw optionError(SLOT_WORDS, { option: "slots", value: this.ring.slots, says });
  }

  /** `batch` was handed to the consumer. */
  delivered(batch: Batch): void {
    const use = slotOf(batch);
    if (use === undefined) return;
    const s = this.#state.get(use.slot);
    if (s?.batch !== batch) return;
    s.state = "held";
    this.#turns.pass(s.epoch!, s.index!);
  }

  /** `epoch` resumes at `batch`: its first slot goes to that batch (the earlier ones are never made). */
  resume(epoch: number, batch: number): void {
    this.#turns.resume(epoch, batch);
  }

  /** The epoch ended (or was abandoned): slots of batches not handed to the consumer are given back. */
  endEpoch(): void {
    for (const [slot, s] of [...this.#state]) if (s.state !== "held") this.#give(slot);
    this.#batches.clear();
    this.#turns.endEpoch();
  }

  /** The slot of batch `where` once it is its turn, within lookahead and when the ring has credit. */
  async #acquireUpTo(where: SlotWhere, signal?: AbortSignal): Promise<number> {
    if (!this.#batches.has(where.key) && !this.#turns.advance(where)) {
      throw new InvalidArgumentError(`batch slots: batch ${where.key} comes after its slot was given back`);
    }
    while (!this.#batches.has(where.key)) {
      while (this.#turns.tooFarAhead()) await this.#turns.moved(signal);
      this.#take(await this.ring.acquire(signal));
    }
    return this.#batches.get(where.key)!;
  }

  /** Gives `slot` to the next batch in order. */
  #take(slot: number): void {
    this.#batches.set(this.#turns.take(), slot);
    this.#state.set(slot, { state: "assembling", batch: null });
  }

  /** `batch`, collated in `slot`, is ready: disposing it gives the slot back (unless it went back already). */
  #handOut(slot: number, batch: Batch, where: SlotWhere): void {
    const own = batch[Symbol.dispose].bind(batch);
    this.#state.set(slot, { state: "ready", batch, epoch: where.epoch, index: where.batch });
    batch[Symbol.dispose] = () => {
      own();
      if (this.#state.get(slot)?.batch === batch) this.#give(slot);
    };
    SLOT_OF.set(batch, { slots: this, slot });
  }

  /** `slot` goes back to the ring. */
  #give(slot: number): void {
    this.#state.delete(slot);
    this.ring.release(slot);
  }
}
