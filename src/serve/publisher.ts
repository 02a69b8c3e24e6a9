/**
 * Streaming and publishing, a session's half that moves batches: it runs the epoch the client asked for, waits
 * for credit before each batch, puts each batch in a slot and sends its descriptor, and frees the slot when the
 * client releases it.
 *
 * - Credit (`out_batches.ts`): each batch waits for a free slot, so at most `slots` batches are out and a
 *   trainer that keeps them holds exactly `slots` batches of memory; a slot is reused only after the client
 *   releases it. A client that reports what its code takes (`taken`) gets at most `AHEAD` batches ahead of
 *   it: decoding does not run `slots` batches ahead of a slow trainer.
 * - Zero copy: a batch the loader assembled in its own ring of slots (`batch_slots.ts`: memfd slots, or with
 *   `decode: "nvdec"` one CUDA allocation exported by CUDA IPC, which the decode Workers fill on the GPU) is sent
 *   in its slot as it is, the publisher keeping it until the client releases it (disposing it then gives the
 *   slot back to the loader); any other batch (a loader without slots) is copied into a ring from the
 *   {@link SessionHost}, counted in `copiedBytes`.
 * @module
 */

import { ServeError } from "../errors.ts";
import type { VideoClassificationLoader } from "../loader/loader.ts";
import type { Batch } from "../loader/batch/collate.ts";
import { type BatchSlots, slotOf } from "../loader/batch/batch_slots.ts";
import type { SlotRing, SlotRingStats } from "../memory/slot_ring.ts";
import type { ServerMessage } from "./protocol.ts";
import { audioAt, batchMessage, bytesInSlot, copyIntoSlot, slotBytesFor } from "./batch_copy.ts";
import type { SessionHost } from "./session_host.ts";
import { type OutBatch, OutBatches } from "./out_batches.ts";

/** The running epoch of a session. */
interface EpochRun {
  epoch: number;
  loader: VideoClassificationLoader;
  iterator: AsyncIterator<Batch>;
  abort: AbortController;
  done: Promise<void>;
}

/** A publisher's counters, as a session's stats count them (`session_stats.ts`). */
export interface PublishedCounts {
  /** The epoch streaming now, or null. */
  epoch: number | null;
  /** Batches sent. */
  sent: number;
  /** Batches delivered (sent less those released unused, and less `unconsumed`). */
  batches: number;
  /** Clips of those batches. */
  clips: number;
  /** Pixel bytes copied after decode, the loader's own slot copies included. */
  copiedBytes: number;
  /** Seconds since the first epoch started (0 before). */
  seconds: number;
  /** The slot ring (null before the first batch). */
  ring: SlotRingStats | null;
}

/** One session's streaming and publishing; see the module docs. */
export class BatchPublisher {
  readonly #host: SessionHost;
  readonly #send: (msg: ServerMessage) => Promise<void>;
  /** The CUDA device the client named (null: the host's default). */
  readonly #device: () => number | undefined;
  #ring: SlotRing | null = null;
  /** The batches out, by slot, and the stream's credit. */
  readonly #out = new OutBatches();
  /** Releases of batches before this seq are of a loader ring closed since (its loader was rebuilt). */
  #memorySeq = 0;
  /** The ring is the loader's (zero copy): releasing a slot disposes its batch. */
  #loaderRing = false;
  /** The loader's batch slots, once a batch came in one (their copies count in `copiedBytes`). */
  #batchSlots: BatchSlots | null = null;
  #run: EpochRun | null = null;
  #seq = 0;
  #sent = 0;
  #batches = 0;
  #clips = 0;
  #copiedBytes = 0;
  #t0 = 0;

  /**
   * @param host where a ring to copy batches into comes from
   * @param send writes a message to the client, in order
   * @param device the CUDA device the client named in its hello, if any
   */
  constructor(
    host: SessionHost,
    send: (msg: ServerMessage) => Promise<void>,
    device: () => number | undefined,
  ) {
    this.#host = host;
    this.#send = send;
    this.#device = device;
  }

  /** The counters, with the batches of `unconsumed` counted as sent but not delivered. */
  counts(unconsumed: readonly OutBatch[]): PublishedCounts {
    return {
      epoch: this.#run?.epoch ?? null,
      sent: this.#sent,
      batches: this.#batches - unconsumed.length,
      clips: this.#clips - unconsumed.reduce((n, b) => n + b.clips.length, 0),
      copiedBytes: this.#copiedBytes + (this.#batchSlots?.copiedBytes ?? 0),
      seconds: this.#t0 === 0 ? 0 : (performance.now() - this.#t0) / 1000,
      ring: this.#ring?.stats() ?? null,
    };
  }

  /** Batches out from `seq` `taken` on (sent, not taken by the client's code yet). */
  unconsumed(taken: number): OutBatch[] {
    return this.#out.unconsumed(taken);
  }

  /** The client's code took every batch before `seq` `taken`. */
  took(taken: number): void {
    this.#out.took(taken);
  }

  /**
   * Streams `loader`'s next epoch, `epoch`, whose first batch is its batch `first` (a resumed epoch's).
   * @param onError called with what ends the stream other than a cancel (the session fails with it)
   */
  start(
    loader: VideoClassificationLoader,
    epoch: number,
    first: number,
    onError: (e: unknown) => void,
  ): void {
    const run: EpochRun = {
      epoch,
      loader,
      iterator: loader[Symbol.asyncIterator](),
      abort: new AbortController(),
      done: Promise.resolve(),
    };
    // Not awaiting onError: it closes the session, and closing awaits run.done.
    run.done = this.#stream(run, first).catch(onError);
    this.#run = run;
    if (this.#t0 === 0) this.#t0 = performance.now();
  }

  /** Cancels the running epoch, if any, and waits until its stream has ended. */
  async cancel(): Promise<void> {
    const run = this.#run;
    if (run === null) return;
    this.#run = null;
    run.abort.abort();
    await run.iterator.return?.();
    await run.done;
  }

  /**
   * The client released `slot`, holding batch `seq`; `unused`: its code never took it, so its delivery is
   * taken back (from `loader`, when it made the batch).
   * @throws {ServeError} `bad-release` when that slot is not out or holds another batch
   */
  release(slot: number, seq: number, unused: boolean, loader: VideoClassificationLoader | null): void {
    if (seq < this.#memorySeq) return; // a batch of a ring replaced since (the loader was rebuilt): nothing to free
    const have = this.#out.get(slot);
    if (have === undefined || have.seq !== seq) {
      throw new ServeError(
        "bad-release",
        `release of slot ${slot} (batch ${seq}): ` +
          (have === undefined ? "that slot is not out" : `that slot holds batch ${have.seq}`),
      );
    }
    this.#out.delete(slot);
    if (unused) {
      this.#batches--;
      this.#clips -= have.clips.length;
      if (have.loader === loader) have.loader.undelivered(have.clips);
    }
    if (have.batch !== null) have.batch[Symbol.dispose]();
    else this.#ring!.release(slot);
  }

  /**
   * The loader is about to close (it is rebuilt): its ring closes with it, so batches the client still holds
   * there are no longer slots of this session (the client keeps reading them; the server never writes there
   * again), and their releases are moot.
   */
  loaderClosing(): void {
    if (!this.#loaderRing) return;
    this.#disposeOut();
    this.#memorySeq = this.#seq;
  }

  /** Frees what the client holds (it is gone): the loader's slots, or the ring of copies (a factory's is closed). */
  close(): void {
    if (this.#loaderRing) this.#disposeOut();
    else if (this.#ring !== null) {
      if (this.#host.factory) this.#ring.close();
      else this.#ring.releaseAll();
    }
    this.#out.clear();
  }

  /** Gives the loader back the slots of the batches out. */
  #disposeOut(): void {
    for (const { batch } of this.#out.values()) batch?.[Symbol.dispose]();
    this.#out.clear();
  }

  /** Streams `run`'s epoch, whose first batch is its batch `first` (a resumed epoch's). */
  async #stream(run: EpochRun, first: number): Promise<void> {
    const { iterator, abort, epoch, loader } = run;
    let index = first, clips = 0, finished = false;
    try {
      while (!abort.signal.aborted) {
        // After the epoch's last batch only its end can come: it needs no credit (a client may keep every batch).
        if (index < loader.batchesPerEpoch) {
          // with the loader's ring, wait while the client holds every slot (the loader could make no batch)
          await this.#out.credit(this.#loaderRing ? this.#ring?.slots ?? null : null, abort.signal);
        }
        if (abort.signal.aborted) break;
        const r = await iterator.next();
        if (r.done) {
          finished = true;
          break;
        }
        const batch = r.value;
        let kept = false;
        try {
          if (abort.signal.aborted) break;
          kept = await this.#publish(run, batch, index);
        } finally {
          if (!kept) batch[Symbol.dispose]();
        }
        index++;
        clips += batch.shape[0];
      }
    } catch (e) {
      if (abort.signal.aborted) return;
      throw e;
    } finally {
      if (!finished) await iterator.return?.();
    }
    if (this.#run === run) this.#run = null;
    await this.#send({ type: "epoch-end", epoch, batches: index - first, clips, cancelled: !finished });
  }

  /** Sends `batch` to the client; true when the publisher keeps it until the client releases its slot (zero copy). */
  async #publish(run: EpochRun, batch: Batch, index: number): Promise<boolean> {
    // The loader's own slots (memfd, or CUDA IPC for NVDEC): its Workers decoded into them, nothing is copied.
    const own = slotOf(batch);
    if (own !== undefined) {
      if (this.#ring !== own.slots.ring) {
        this.#copiedBytes += this.#batchSlots?.copiedBytes ?? 0; // a rebuilt loader's new slots count from 0
        this.#batchSlots = own.slots;
        this.#ring = own.slots.ring;
        this.#loaderRing = true;
        await this.#sendMemory();
      }
      return this.#sendBatch(run, batch, own.slot, index, batch, own.slots.audioOffset);
    }
    const batchSize = run.loader.batchSize;
    if (this.#ring === null || this.#loaderRing) {
      this.#loaderRing = false;
      const device = this.#device() ?? this.#host.defaultDevice;
      this.#ring = this.#host.ringFor(run.loader, slotBytesFor(batch, batchSize), device);
      await this.#sendMemory();
    }
    const total = bytesInSlot(batch, batchSize);
    if (total > this.#ring.slotBytes) {
      throw new ServeError(
        "batch-too-big",
        `batch of ${total} bytes does not fit a slot of ${this.#ring.slotBytes}`,
      );
    }
    const signal = run.abort.signal;
    let slot: number;
    try {
      slot = await this.#ring.acquire(signal);
    } catch (e) {
      if (signal.aborted) return false;
      throw e;
    }
    this.#copiedBytes += copyIntoSlot(this.#ring.memory, this.#ring.offset(slot), batch, batchSize);
    await this.#sendBatch(run, batch, slot, index, null, audioAt(batch, batchSize));
    return false;
  }

  async #sendMemory(): Promise<void> {
    const ring = this.#ring!;
    await this.#send({
      type: "memory",
      memory: ring.memory.describe(),
      slots: ring.slots,
      slotBytes: ring.slotBytes,
    });
  }

  /** Sends the descriptor of `batch`, in `slot`; `keep`: the batch to dispose when the client releases it. */
  async #sendBatch(
    run: EpochRun,
    batch: Batch,
    slot: number,
    index: number,
    keep: Batch | null,
    audioOffset: number,
  ): Promise<boolean> {
    const seq = this.#seq++;
    this.#out.set(slot, { seq, batch: keep, clips: batch.clips, loader: run.loader });
    this.#sent++;
    this.#batches++;
    this.#clips += batch.shape[0];
    await this.#send(batchMessage(batch, { seq, epoch: run.epoch, index, slot, audioOffset }));
    return keep !== null;
  }
}
