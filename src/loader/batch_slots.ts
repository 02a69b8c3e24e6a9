/**
 * `BatchSlots`: the loader's ring of batch slots (`slots` option): batches are assembled in `slots` fixed
 * buffers, reused batch after batch, in one shared-memory mapping (`SlotRing` over a memfd, `src/serve`) that
 * the decode Workers address directly and that `sluice serve` hands to a trainer as it is. So a clip's pixels
 * are written once, by its decode Worker, into their place in the batch, and never copied on their way to the
 * consumer (in this process, or a trainer mapping the memfd); and the loader's batch memory is `slots` batches,
 * whatever the consumer does.
 *
 * - Places before decode: where each clip of an epoch ends up is known when the epoch is planned
 *   (`epochOrder`): output index `j` is clip `j mod B` of batch `⌊j / B⌋`. The decode step asks
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
 * - The ring must fit in memory: a ring larger than the memory this process can still commit
 *   (`available.ts`) is refused before it is made, naming `slots`, the batch size, the frames, width and
 *   height (the caller's words) and what each of them costs.
 * @module
 */

import { InvalidArgumentError, type OptionMessagePart, SluiceError } from "../errors.ts";
import { HostSlots, SlotRing } from "../memory/slot_ring.ts";
import { availableMemory, bytesText } from "../memory/available.ts";
import { pageAlign } from "../memory/shm.ts";
import { CudaSlots } from "../memory/cuda_slots.ts";
import { copyOnDevice } from "../cuda/cuda_buffer.ts";
import { viewAt } from "../memory/shm.ts";
import { releaseBuffers } from "../pipeline/transfer.ts";
import type { ClipSampler } from "../dataset/sampler.ts";
import type { ClipSpec } from "./clip_spec.ts";
import { optionError, tsVocabulary } from "../options.ts";
import { type Batch, type BatchLayout, collate, hostBatch } from "./collate.ts";
import { epochOrder } from "../dataset/epoch_order.ts";
import type { AddressedDestination, ClipBase, ClipPlaces, DecodedClip, PlacedClip } from "./clip/life.ts";

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

/** The loader's batch slots; see the module docs. */
export class BatchSlots implements ClipPlaces, Disposable {
  readonly ring: SlotRing;
  readonly batchSize: number;
  /** Bytes of one clip. */
  readonly clipBytes: number;
  /** Bytes of one clip's audio (`ClipSpec.audio`; 0 without), in the slot's audio region after the pixels. */
  readonly audioBytes: number;
  /** Offset of the audio region in a slot (8-aligned, after `batchSize` clips' pixels). */
  readonly audioOffset: number;
  /** Decode Workers write into the places (layout `"BTHWC"`, or device slots); false: collate regroups. */
  readonly direct: boolean;
  /** The CUDA device of device slots; null: host slots. */
  readonly device: number | null;
  readonly #float: boolean;
  readonly #numFrames: number;
  readonly #layout: BatchLayout;
  readonly #sampler: ClipSampler;
  readonly #address: bigint;
  readonly #orders = new Map<number, Int32Array>();
  /** Slot of each batch with one, by `epoch/batch`, while it is assembled. */
  readonly #batches = new Map<string, number>();
  readonly #state = new Map<
    number,
    { state: SlotState; batch: object | null; epoch?: number; index?: number }
  >();
  /** The next batch to get a slot: slots are acquired in batch order. */
  #next = { epoch: -1, batch: 0 };
  /** A resumed epoch's first batch (its earlier ones are never made). */
  #resume = { epoch: -1, batch: 0 };
  #acquiring: Promise<unknown> = Promise.resolve();
  #pending = 0;
  #copied = 0;
  readonly #lookahead: number;
  /** The consumer's next batch: batches before it were delivered (or dropped). */
  #passed = { epoch: -1, batch: 0 };
  /** Settles when {@link #passed} moves (a placement waiting for lookahead looks again). */
  #moved = Promise.withResolvers<void>();

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
    const device = opts.device ?? null;
    this.#lookahead = opts.lookahead ?? Infinity;
    this.#float = spec.dtype === "float32";
    this.clipBytes = spec.numFrames * 3 * spec.width * spec.height * (this.#float ? 4 : 1);
    this.batchSize = batchSize;
    if (device !== null && spec.audio !== undefined) {
      // the audio region of a slot is host memory; device slots hold pixels only
      throw new InvalidArgumentError(
        'audio with GPU batches (decode: "nvdec" with batch slots) is not supported yet: decode on the CPU, ' +
          "or leave audio out",
      );
    }
    this.audioBytes = spec.audio === undefined ? 0 : spec.audio.channels * spec.audio.samples * 4;
    this.audioOffset = Math.ceil((batchSize * this.clipBytes) / 8) * 8;
    this.direct = layout === "BTHWC" || device !== null;
    this.device = device;
    this.#numFrames = spec.numFrames;
    this.#layout = layout;
    this.#sampler = sampler;
    const slotBytes = this.audioOffset + batchSize * this.audioBytes;
    if (device === null) checkRingFits(slots, slotBytes, spec, batchSize);
    try {
      this.ring = new SlotRing(
        slots,
        slotBytes,
        (size) =>
          device === null ? new HostSlots(`sluice-batches-${Deno.pid}`, size) : new CudaSlots(size, device),
      );
    } catch (e) {
      if (!(e instanceof SluiceError)) throw e;
      const { text, costs } = ringCost(slots, slotBytes, spec, batchSize);
      const says = ["loader: ", ...text, `, which could not be made (${e.message}): `, ...costs];
      throw optionError(WORDS, { option: "slots", value: slots, says }, undefined, { cause: e });
    }
    const m = this.ring.memory;
    this.#address = m instanceof CudaSlots ? m.buffer.devicePtr : (m as HostSlots).shm.address;
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
    const where = this.#where(meta);
    const have = this.#batches.get(where.key);
    if (have !== undefined) return this.#dest(have, where.index);
    this.#pending++;
    const slot = this.#acquiring.then(() => this.#acquireUpTo(where, signal));
    this.#acquiring = slot.catch(() => {}).finally(() => this.#pending--);
    return this.#dest(await slot, where.index);
  }

  /** The clip's place when its batch has a slot or can get one now without waiting; else undefined. */
  tryPlace(meta: ClipBase): AddressedDestination | undefined {
    const where = this.#where(meta);
    if (!this.#batches.has(where.key)) {
      if (this.#pending > 0 || !this.#advance(where)) return undefined;
      while (!this.#batches.has(where.key)) {
        if (this.#tooFarAhead()) return undefined;
        const slot = this.ring.tryAcquire();
        if (slot === undefined) return undefined;
        this.#take(slot);
      }
    }
    return this.#dest(this.#batches.get(where.key)!, where.index);
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
        const at = Number(dest.address - this.#address);
        this.ring.memory.write(at, new Uint8Array(d.buffer, d.byteOffset, d.byteLength));
        done(d);
        clip.data = clip.data instanceof Float32Array ? new Float32Array(0) : new Uint8Array(0);
      }
      return clip;
    }
    const view = this.#view(dest.address, dest.length);
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
    const where = this.#where(first.clip?.meta ?? first.failures[0]);
    const slot = this.#batches.get(where.key);
    if (slot === undefined) throw new InvalidArgumentError(`batch slots: batch ${where.key} has no slot`);
    this.#batches.delete(where.key);
    if (drop || clips.length === 0) {
      this.#give(slot);
      this.#pass(where.epoch, where.batch);
      return undefined;
    }
    const base = this.ring.offset(slot);
    if (this.direct) {
      // close the gaps of skipped clips (their places stay empty otherwise)
      for (const [i, c] of clips.entries()) {
        const k = this.#where(c.meta).index;
        if (k === i) continue;
        this.#move(base + k * this.clipBytes, base + i * this.clipBytes);
        this.#copied += this.clipBytes;
      }
    }
    const n = clips.length * this.clipBytes;
    const at = this.#address + BigInt(base);
    let batch: Batch;
    if (this.device !== null) {
      batch = collate(clips, this.#numFrames, this.#layout, {
        device: { device: this.device, pointer: at, byteLength: n },
        toHost: () => this.ring.memory.read(base, n),
      });
    } else {
      const audio = this.audioBytes > 0
        ? new Float32Array(viewAt(at + BigInt(this.audioOffset), clips.length * this.audioBytes).buffer)
        : undefined;
      batch = collate(clips, this.#numFrames, this.#layout, {
        data: this.#view(at, n),
        placed: this.direct,
        audio,
      });
    }
    if (!this.direct) this.#copied += n;
    const own = batch[Symbol.dispose].bind(batch);
    this.#state.set(slot, { state: "ready", batch, epoch: where.epoch, index: where.batch });
    batch[Symbol.dispose] = () => {
      own();
      if (this.#state.get(slot)?.batch === batch) this.#give(slot);
    };
    SLOT_OF.set(batch, { slots: this, slot });
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
    throw optionError(WORDS, { option: "slots", value: this.ring.slots, says });
  }

  /** `batch` was handed to the consumer. */
  delivered(batch: Batch): void {
    const use = slotOf(batch);
    if (use === undefined) return;
    const s = this.#state.get(use.slot);
    if (s?.batch !== batch) return;
    s.state = "held";
    this.#pass(s.epoch!, s.index!);
  }

  /** `epoch` resumes at `batch`: its first slot goes to that batch (the earlier ones are never made). */
  resume(epoch: number, batch: number): void {
    this.#resume = { epoch, batch };
  }

  /** The epoch ended (or was abandoned): slots of batches not handed to the consumer are given back. */
  endEpoch(): void {
    for (const [slot, s] of [...this.#state]) if (s.state !== "held") this.#give(slot);
    this.#batches.clear();
    this.#next = { epoch: -1, batch: 0 };
  }

  /** Frees the memory (after the Workers stopped). */
  [Symbol.dispose](): void {
    this.ring.close();
  }

  #order(epoch: number): Int32Array {
    let order = this.#orders.get(epoch);
    if (order === undefined) {
      order = epochOrder(this.#sampler, epoch);
      this.#orders.set(epoch, order);
      for (const e of this.#orders.keys()) if (e < epoch - 1) this.#orders.delete(e);
    }
    return order;
  }

  #where(
    meta: { epoch: number; position: number },
  ): { epoch: number; batch: number; index: number; key: string } {
    const j = this.#order(meta.epoch)[meta.position];
    if (j === undefined) {
      throw new InvalidArgumentError(`batch slots: no position ${meta.position} in epoch ${meta.epoch}`);
    }
    const batch = Math.floor(j / this.batchSize);
    return { epoch: meta.epoch, batch, index: j % this.batchSize, key: `${meta.epoch}/${batch}` };
  }

  /**
   * For a batch without a slot: moves the next batch to its epoch when that starts; false when the batch is
   * behind the next one (its slot was given back already: a bug).
   */
  #advance(where: { epoch: number; batch: number }): boolean {
    if (where.epoch > this.#next.epoch) {
      this.#next = { epoch: where.epoch, batch: where.epoch === this.#resume.epoch ? this.#resume.batch : 0 };
      if (where.epoch > this.#passed.epoch) this.#passed = { ...this.#next };
    }
    return where.epoch === this.#next.epoch && where.batch >= this.#next.batch;
  }

  async #acquireUpTo(
    where: { epoch: number; batch: number; key: string },
    signal?: AbortSignal,
  ): Promise<number> {
    if (!this.#batches.has(where.key) && !this.#advance(where)) {
      throw new InvalidArgumentError(`batch slots: batch ${where.key} comes after its slot was given back`);
    }
    while (!this.#batches.has(where.key)) {
      while (this.#tooFarAhead()) {
        signal?.throwIfAborted();
        await (signal === undefined
          ? this.#moved.promise
          : Promise.race([this.#moved.promise, aborted(signal)]));
      }
      this.#take(await this.ring.acquire(signal));
    }
    return this.#batches.get(where.key)!;
  }

  /** Whether the next batch to get a slot is `lookahead` or more batches beyond the consumer's next one. */
  #tooFarAhead(): boolean {
    const p = this.#passed;
    return p.epoch === this.#next.epoch && this.#next.batch >= p.batch + this.#lookahead;
  }

  /** The consumer's next batch is after batch `batch` of `epoch` (it was delivered, or dropped). */
  #pass(epoch: number, batch: number): void {
    const p = this.#passed;
    if (epoch < p.epoch || (epoch === p.epoch && batch < p.batch)) return;
    this.#passed = { epoch, batch: batch + 1 };
    this.#moved.resolve();
    this.#moved = Promise.withResolvers<void>();
  }

  /** Gives `slot` to the next batch in order. */
  #take(slot: number): void {
    this.#batches.set(`${this.#next.epoch}/${this.#next.batch}`, slot);
    this.#state.set(slot, { state: "assembling", batch: null });
    this.#next.batch++;
  }

  #give(slot: number): void {
    this.#state.delete(slot);
    this.ring.release(slot);
  }

  #dest(slot: number, index: number): AddressedDestination {
    const offset = this.ring.clipOffset(slot, index, this.clipBytes);
    const place = { address: this.#address + BigInt(offset), length: this.clipBytes };
    return this.device === null
      ? place
      : { ...place, device: this.device, planesFirst: this.#layout === "BCTHW" };
  }

  /** Copies one clip's bytes from ring offset `from` to `to` (device slots: device to device). */
  #move(from: number, to: number): void {
    const n = this.clipBytes;
    if (this.device === null) {
      (this.ring.memory as HostSlots).shm.bytes.copyWithin(to, from, from + n);
      return;
    }
    const a = this.#address;
    const c = { src: a + BigInt(from), dst: a + BigInt(to), rowBytes: n, rows: 1, srcPitch: n, dstPitch: n };
    copyOnDevice(this.device, c);
  }

  /** A view with its own ArrayBuffer object: disposing (detaching) it leaves the mapping and other views alone. */
  #view(address: bigint, length: number): Uint8Array | Float32Array {
    const bytes = viewAt(address, length);
    return this.#float ? new Float32Array(bytes.buffer) : bytes;
  }
}

/** A promise that settles when `signal` aborts. */
function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((r) => signal.addEventListener("abort", () => r(), { once: true }));
}

/** How the loader names its options in these errors: as TypeScript does (a door words them for its caller). */
const WORDS = tsVocabulary("loader: ");

/**
 * What a ring of `slots` slots of `slotBytes` (`batchSize` clips of `spec`) costs: its bytes, and the words
 * that say so (message parts naming each option, see `OptionProblem`) with what one more of it costs.
 */
function ringCost(
  slots: number,
  slotBytes: number,
  spec: ClipSpec,
  batchSize: number,
): { total: number; text: OptionMessagePart[]; costs: OptionMessagePart[] } {
  const n = (option: string) => ({ option }), sample = spec.dtype === "float32" ? 4 : 1;
  const total = slots * pageAlign(slotBytes);
  const pixel = 3 * sample, frame = spec.width * spec.height * pixel;
  const audio = spec.audio === undefined ? 0 : spec.audio.channels * spec.audio.samples * 4;
  const text = [
    n("slots"),
    ` (${slots}) × `,
    n("batchSize"),
    ` (${batchSize}) × `,
    n("clip.numFrames"),
    ` (${spec.numFrames}) × `,
    n("clip.height"),
    ` (${spec.height}) × `,
    n("clip.width"),
    ` (${spec.width}) × 3 channels × ${sample} byte${sample > 1 ? "s" : ""} (${spec.dtype ?? "uint8"})` +
    (audio > 0 ? ` (and ${bytesText(audio)} of audio a clip)` : "") +
    ` need ${bytesText(total)} of batch slots`,
  ];
  const costs = [
    "one more of ",
    n("slots"),
    ` costs ${bytesText(pageAlign(slotBytes))} (a slot), of `,
    n("batchSize"),
    ` ${bytesText(slots * (spec.numFrames * frame + audio))} (a clip in every slot), of `,
    n("clip.numFrames"),
    ` ${bytesText(slots * batchSize * frame)}, of `,
    n("clip.height"),
    ` ${bytesText(slots * batchSize * spec.numFrames * spec.width * pixel)}, of `,
    n("clip.width"),
    ` ${bytesText(slots * batchSize * spec.numFrames * spec.height * pixel)}`,
  ];
  return { total, text, costs };
}

/**
 * Throws `InvalidArgumentError` when a host ring of `slots` slots of `slotBytes` is larger than the memory this
 * process can commit ({@link availableMemory}): a trainer keeping every slot would commit all of it.
 */
function checkRingFits(slots: number, slotBytes: number, spec: ClipSpec, batchSize: number): void {
  const { total, text, costs } = ringCost(slots, slotBytes, spec, batchSize);
  const free = availableMemory();
  if (free === null || total <= free.bytes) return;
  const says = [
    "loader: ",
    ...text,
    `, more than the ${bytesText(free.bytes)} of memory this process can still commit (${free.source}). ` +
    "Lower some of them: ",
    ...costs,
    " (",
    { option: "slots" },
    " is how many batches a consumer may keep at once: a training loop needs 2)",
  ];
  throw optionError(WORDS, { option: "slots", value: slots, says });
}
