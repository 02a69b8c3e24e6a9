/**
 * A served batch's bytes and its `batch` message. A batch the loader assembled in its own slots is sent where it
 * is; any other one (a loader without slots) is copied into a slot of the session's ring: its pixels first, then
 * its audio after a full batch's pixels (8-aligned), where the loader's own slots put it too.
 * @module
 */

import type { Batch } from "../loader/batch/collate.ts";
import type { SlotMemory } from "../memory/slot_ring.ts";
import type { BatchMessage, ServeDtype } from "./protocol.ts";
import { serveDtype } from "./protocol.ts";

/** Bytes of a batch's pixels, wherever they are (host or device). */
export function batchBytes(batch: Batch): number {
  return batch.device?.byteLength ?? batch.data.byteLength;
}

/** The sample type of a batch's pixels, wherever they are. */
export function batchDtype(batch: Batch): ServeDtype {
  return batch.device !== undefined ? batch.dtype : serveDtype(batch.data);
}

/** Where a slot's audio starts: after a full batch's pixels (`batch`'s per clip, `batchSize` clips), 8-aligned. */
export function audioAt(batch: Batch, batchSize: number): number {
  return Math.ceil(((batchBytes(batch) / batch.shape[0]) * batchSize) / 8) * 8;
}

/** Bytes a slot needs for full batches like `batch` (pixels, then audio). */
export function slotBytesFor(batch: Batch, batchSize: number): number {
  const audio = ((batch.audio?.byteLength ?? 0) / batch.shape[0]) * batchSize;
  return audioAt(batch, batchSize) + audio;
}

/** Bytes of `batch` in a slot (pixels, and its audio at {@link audioAt}). */
export function bytesInSlot(batch: Batch, batchSize: number): number {
  return batch.audio === undefined ? batchBytes(batch) : audioAt(batch, batchSize) + batch.audio.byteLength;
}

/** Copies host `batch` into `memory` at `offset` (see the module docs); returns the bytes copied. */
export function copyIntoSlot(memory: SlotMemory, offset: number, batch: Batch, batchSize: number): number {
  const d = batch.data as ArrayBufferView;
  memory.write(offset, new Uint8Array(d.buffer, d.byteOffset, d.byteLength));
  const a = batch.audio;
  if (a === undefined) return d.byteLength;
  memory.write(offset + audioAt(batch, batchSize), new Uint8Array(a.buffer, a.byteOffset, a.byteLength));
  return d.byteLength + a.byteLength;
}

/** The `batch` message of `batch` in `slot` (its audio, if any, `audioOffset` bytes into the slot). */
export function batchMessage(
  batch: Batch,
  at: { seq: number; epoch: number; index: number; slot: number; audioOffset: number },
): BatchMessage {
  const msg: BatchMessage = {
    type: "batch",
    seq: at.seq,
    epoch: at.epoch,
    index: at.index,
    slot: at.slot,
    offset: 0,
    nbytes: batchBytes(batch),
    shape: [...batch.shape],
    dtype: batchDtype(batch),
    layout: batch.layout,
    labels: Array.from(batch.labels),
    clips: batch.clips.map((c) => ({ ...c })),
  };
  if (batch.audio !== undefined) {
    msg.audio = { offset: at.audioOffset, nbytes: batch.audio.byteLength, shape: [...batch.audioShape!] };
  }
  return msg;
}
