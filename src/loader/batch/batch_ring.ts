/**
 * `BatchRing`: the memory of the loader's batch slots (`batch_slots.ts`): `slots` slots in one mapping, host
 * shared memory (`SlotRing` over a memfd, `HostSlots`) or, for NVDEC, one CUDA allocation (`CudaSlots`), each
 * slot `batchSize` clips' pixels then, 8-aligned, their audio. It says where a clip's place is, moves clips
 * within a slot, and views a slot as a batch's destination. A host ring larger than the memory this process can
 * still commit (`available.ts`) is refused before it is made, naming `slots`, the batch size, the frames, width
 * and height (the caller's words) and what each of them costs.
 * @module
 */

import { InvalidArgumentError, type OptionMessagePart, SluiceError } from "../../errors.ts";
import { HostSlots, SlotRing } from "../../memory/slot_ring.ts";
import { availableMemory, bytesText } from "../../memory/available.ts";
import { pageAlign, viewAt } from "../../memory/shm.ts";
import { CudaSlots } from "../../memory/cuda_slots.ts";
import { copyOnDevice } from "../../cuda/cuda_buffer.ts";
import { optionError, tsVocabulary } from "../../options.ts";
import type { ClipSpec } from "../clip/clip_spec.ts";
import type { BatchLayout, CollateInto } from "./collate.ts";
import type { AddressedDestination } from "../clip/life.ts";

/** How the slots' errors name the loader's options: as TypeScript does (a door words them for its caller). */
export const SLOT_WORDS = tsVocabulary("loader: ");

/** The memory of the loader's batch slots; see the module docs. */
export class BatchRing implements Disposable {
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
  /** Address of the mapping (device slots: a device address). */
  readonly address: bigint;
  /** Frames of each clip. */
  readonly numFrames: number;
  /** The batches' layout. */
  readonly layout: BatchLayout;
  readonly #float: boolean;

  /**
   * @param slots batch slots, `[1, 1024]`
   * @param spec what each clip is (its size)
   * @param batchSize clips per batch
   * @param layout the batches' layout
   * @param device the CUDA device of device slots (NVDEC); null: host slots
   * @throws {InvalidArgumentError} when the ring does not fit in the memory this process can commit
   */
  constructor(slots: number, spec: ClipSpec, batchSize: number, layout: BatchLayout, device: number | null) {
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
    this.numFrames = spec.numFrames;
    this.layout = layout;
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
      throw optionError(SLOT_WORDS, { option: "slots", value: slots, says }, undefined, { cause: e });
    }
    const m = this.ring.memory;
    this.address = m instanceof CudaSlots ? m.buffer.devicePtr : (m as HostSlots).shm.address;
  }

  /** Frees the memory (after the Workers stopped). */
  [Symbol.dispose](): void {
    this.ring.close();
  }

  /** The place of clip `index` of `slot`'s batch (device slots: on the device, in the batch's layout). */
  clipPlace(slot: number, index: number): AddressedDestination {
    const offset = this.ring.clipOffset(slot, index, this.clipBytes);
    const place = { address: this.address + BigInt(offset), length: this.clipBytes };
    return this.device === null
      ? place
      : { ...place, device: this.device, planesFirst: this.layout === "BCTHW" };
  }

  /** Copies one clip's bytes from ring offset `from` to `to` (device slots: device to device). */
  moveClip(from: number, to: number): void {
    const n = this.clipBytes;
    if (this.device === null) {
      (this.ring.memory as HostSlots).shm.bytes.copyWithin(to, from, from + n);
      return;
    }
    const a = this.address;
    const c = { src: a + BigInt(from), dst: a + BigInt(to), rowBytes: n, rows: 1, srcPitch: n, dstPitch: n };
    copyOnDevice(this.device, c);
  }

  /**
   * Where `count` clips are collated in `slot` (its first `count` places): device memory, or a host view of
   * their pixels (already in place when {@link direct}) and of their audio.
   */
  batchInto(slot: number, count: number): CollateInto {
    const base = this.ring.offset(slot);
    const n = count * this.clipBytes;
    const at = this.address + BigInt(base);
    if (this.device !== null) {
      return {
        device: { device: this.device, pointer: at, byteLength: n },
        toHost: () => this.ring.memory.read(base, n),
      };
    }
    const audio = this.audioBytes > 0
      ? new Float32Array(viewAt(at + BigInt(this.audioOffset), count * this.audioBytes).buffer)
      : undefined;
    return { data: this.view(at, n), placed: this.direct, audio };
  }

  /** A view with its own ArrayBuffer object: disposing (detaching) it leaves the mapping and other views alone. */
  view(address: bigint, length: number): Uint8Array | Float32Array {
    const bytes = viewAt(address, length);
    return this.#float ? new Float32Array(bytes.buffer) : bytes;
  }
}

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
  throw optionError(SLOT_WORDS, { option: "slots", value: slots, says });
}
