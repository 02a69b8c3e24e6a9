/**
 * One client connection of a batch server (`server.ts`): the session reads the client's messages in order
 * (`hello`, `epoch`, `release`, `taken`, `stats`, `state`, `resume`, `preview`, `bye`; each validated first,
 * `protocol.ts`), streams the epochs it asks for and hands each batch's slot out until the client releases it.
 *
 * - Credit (`out_batches.ts`): each batch waits for a free slot, so at most `slots` batches are out and a
 *   trainer that keeps them holds exactly `slots` batches of memory; a slot is reused only after the client
 *   releases it. A client that reports what its code takes (`taken`) gets at most `AHEAD` batches ahead of
 *   it: decoding does not run `slots` batches ahead of a slow trainer.
 * - Zero copy: a batch the loader assembled in its own ring of slots (`batch_slots.ts`: memfd slots, or with
 *   `decode: "nvdec"` one CUDA allocation exported by CUDA IPC, which the decode Workers fill on the GPU) is sent
 *   in its slot as it is, the session keeping it until the client releases it (disposing it then gives the slot
 *   back to the loader); any other batch (a loader without slots) is copied into a ring from the
 *   {@link SessionHost}, counted in `copiedBytes`.
 * - A client that asks for another epoch than the loader's next gets a loader rebuilt there (factory loaders).
 * - Resuming (`state`, `resume`): the loader's state at the client's place, and a state applied to the session's
 *   loader (`loadStateDict` before its first epoch, else on a loader rebuilt for it); a refused state is a
 *   non-fatal error, the session goes on with its loader as it was. `preview` writes a contact sheet of an
 *   epoch drawn by a loader of its own (factory loaders).
 * - When the client goes away (closed, crashed, killed), the session cancels the running epoch, frees its slots
 *   and ends; a broken message or another protocol version ends it with an `error` message that says why.
 * @module
 */

import { errorText, InvalidArgumentError, ServeError } from "../errors.ts";
import type { LoaderStats, VideoClassificationLoader } from "../loader/loader.ts";
import type { Batch } from "../loader/collate.ts";
import { type BatchSlots, slotOf } from "../loader/batch_slots.ts";
import type { SlotRing } from "../memory/slot_ring.ts";
import {
  type ClientMessage,
  encodeMessage,
  type ErrorMessage,
  errorMessage,
  FrameDecoder,
  type HelloMessage,
  MAX_CLIENT_MESSAGE,
  parseClientMessage,
  SERVE_PROTOCOL_VERSION,
  type ServerMessage,
  type StatsMessage,
} from "./protocol.ts";
import type { LoaderState } from "../loader/loader_state.ts";
import { audioAt, batchMessage, bytesInSlot, copyIntoSlot, slotBytesFor } from "./batch_copy.ts";
import { isPeerGone, type LoaderRequest, type SessionHost, type SessionOptions } from "./session_host.ts";
import { stateAt, writePreview } from "./session_replies.ts";
import { type SessionStats, statsReply } from "./session_stats.ts";
import { DataWaits } from "./data_wait.ts";
import { AHEAD, type OutBatch, OutBatches } from "./out_batches.ts";

const SERVER_NAME = `sluice (deno ${Deno.version.deno})`;

/** The running epoch of a session. */
interface EpochRun {
  epoch: number;
  iterator: AsyncIterator<Batch>;
  abort: AbortController;
  done: Promise<void>;
}

/** One client connection; see the module docs. */
export class Session {
  /** Settles when the session has ended (its slots freed, an owned loader closed). */
  readonly done: Promise<void>;
  /** The data waits its client reported. */
  readonly dataWait: DataWaits = new DataWaits();
  #resolveDone!: () => void;
  readonly #conn: Deno.UnixConn;
  readonly #host: SessionHost;
  readonly #opts: SessionOptions;
  readonly #log: (line: string) => void;
  readonly #frames = new FrameDecoder(MAX_CLIENT_MESSAGE);
  #writing: Promise<void> = Promise.resolve();
  #client = "(no hello yet)";
  #hello: HelloMessage | null = null;
  #loader: VideoClassificationLoader | null = null;
  #ownsLoader = false;
  /** Whether the loader has run an epoch for this session (a resume then needs a loader of its own). */
  #loaderStarted = false;
  /** The resumed epoch and its first batch, until that epoch starts (its batches' `index` count from there). */
  #resumed: { epoch: number; batch: number } | null = null;
  #ring: SlotRing | null = null;
  /** The batches this session has out, by slot, and the stream's credit. */
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
  #closing = false;
  #queue: Promise<void> = Promise.resolve();

  /** Starts reading `conn`'s messages. */
  constructor(conn: Deno.UnixConn, host: SessionHost, opts: SessionOptions) {
    this.#conn = conn;
    this.#host = host;
    this.#opts = opts;
    this.#log = opts.log;
    this.done = new Promise((r) => this.#resolveDone = r);
    void this.#readLoop();
  }

  /** Whether the session is ending. */
  get closing(): boolean {
    return this.#closing;
  }

  /** Current counters. */
  stats(): SessionStats {
    return this.#stats([]);
  }

  /** Its loader's stats (null before `hello`). */
  loaderStats(): LoaderStats | null {
    return this.#loader?.stats() ?? null;
  }

  /** The counters, with the batches of `unconsumed` counted as sent but not delivered. */
  #stats(unconsumed: readonly OutBatch[]): SessionStats {
    const secs = this.#t0 === 0 ? 0 : (performance.now() - this.#t0) / 1000;
    const clips = this.#clips - unconsumed.reduce((n, b) => n + b.clips.length, 0);
    return {
      client: this.#client,
      rank: this.#loader?.sampler.options.rank ?? 0,
      worldSize: this.#loader?.sampler.options.worldSize ?? 1,
      epoch: this.#run?.epoch ?? null,
      sent: this.#sent,
      batches: this.#batches - unconsumed.length,
      clips,
      copiedBytes: this.#copiedBytes + (this.#batchSlots?.copiedBytes ?? 0),
      clipsPerSec: secs > 0 ? clips / secs : 0,
      ring: this.#ring?.stats() ?? null,
      dataWait: this.dataWait.stats(),
    };
  }

  /**
   * The `stats` reply. The stream runs ahead of the client's code by the batches in flight: with `taken` (one
   * past the `seq` of the last batch that code took), the batches out from that `seq` on count as sent, not
   * delivered, in the session's counters and the loader's clip counts alike (the loader's accounting stays as
   * it is: they are delivered, or given back `unused`, later).
   */
  #statsReply(taken: number | undefined): StatsMessage {
    const unconsumed = taken === undefined ? [] : this.#out.unconsumed(taken);
    const loader = this.#loader;
    const clips = unconsumed.flatMap((b) => b.loader === loader ? b.clips : []);
    return statsReply(this.#stats(unconsumed), loader?.stats(clips) ?? null, this.#opts.node?.());
  }

  /** Sends an error and closes (used before the session starts). */
  async refuse(code: string, message: string): Promise<void> {
    await this.#sendError(new ServeError(code, message));
    await this.close();
  }

  /** Cancels the epoch, frees the slots, closes the connection and an owned loader. Idempotent. */
  close(): Promise<void> {
    if (this.#closing) return this.done;
    this.#closing = true;
    void (async () => {
      try {
        try {
          this.#conn.close(); // first: a stream still writing to the client stops at once
        } catch { /* closed */ }
        try {
          await this.#cancelRun();
        } catch (e) {
          this.#log(`sluice serve: ${this.#client}: while cancelling its epoch: ${errorText(e)}`);
        }
        if (this.#loaderRing) this.#disposeOut();
        else if (this.#ring !== null) {
          if (this.#host.factory) this.#ring.close();
          else this.#ring.releaseAll();
        }
        this.#out.clear();
        if (this.#ownsLoader) {
          try {
            await this.#loader?.close();
          } catch (e) {
            this.#log(`sluice serve: ${this.#client}: closing its loader: ${errorText(e)}`);
          }
        }
      } finally {
        this.#resolveDone();
      }
    })();
    return this.done;
  }

  // ---- reading ------------------------------------------------------------------------------------------

  async #readLoop(): Promise<void> {
    const helloTimer = setTimeout(() => {
      if (this.#hello === null) void this.refuse("timeout", "no hello message within the time allowed");
    }, this.#opts.helloTimeoutMs ?? 10_000);
    const buf = new Uint8Array(64 * 1024);
    try {
      while (!this.#closing) {
        let n: number | null;
        try {
          n = await this.#conn.read(buf);
        } catch {
          n = null; // reset by peer, or closed by us
        }
        if (n === null) break;
        let values: unknown[];
        try {
          values = this.#frames.push(buf.subarray(0, n));
        } catch (e) {
          await this.#fail(e);
          break;
        }
        for (const v of values) {
          // Messages are handled in order; a slow one (hello builds a loader) delays the ones after it.
          this.#queue = this.#queue.then(() => this.#closing ? undefined : this.#handle(v)).catch((e) =>
            this.#fail(e)
          );
        }
      }
    } finally {
      clearTimeout(helloTimer);
      await this.#queue;
      if (!this.#closing && (this.#opts.logConnections ?? true)) {
        this.#log(`sluice serve: ${this.#client} disconnected`);
      }
      await this.close();
    }
  }

  async #handle(value: unknown): Promise<void> {
    const msg: ClientMessage = parseClientMessage(value);
    if (this.#hello === null && msg.type !== "hello") {
      throw new ServeError("bad-message", `the first message must be hello, got ${msg.type}`);
    }
    if ("waits" in msg && msg.waits !== undefined) this.dataWait.record(msg.waits);
    switch (msg.type) {
      case "hello":
        return await this.#onHello(msg);
      case "epoch":
        return await this.#onEpoch(msg.epoch);
      case "release":
        return this.#onRelease(msg.slot, msg.seq, msg.unused === true);
      case "taken":
        return this.#out.took(msg.taken);
      case "stats":
        return await this.#send(this.#statsReply(msg.taken));
      case "state":
        return await this.#send({ type: "state", state: stateAt(this.#loader!, msg) });
      case "resume":
        return await this.#onResume(msg.state);
      case "preview":
        if (!this.#ownsLoader) throw new ServeError("preview", "a fixed loader's server draws no preview");
        return await this.#send(await writePreview(await this.#buildLoader(msg.epoch), msg));
      case "bye":
        await this.close();
        return;
    }
  }

  async #onHello(msg: HelloMessage): Promise<void> {
    if (this.#hello !== null) throw new ServeError("bad-message", "hello was already sent");
    this.#client = msg.client || "(unnamed client)";
    if (msg.protocol !== SERVE_PROTOCOL_VERSION) {
      throw new ServeError(
        "protocol-version",
        `client ${this.#client} speaks serve protocol ${msg.protocol}; this server speaks ` +
          `${SERVE_PROTOCOL_VERSION} (install the client of the same sluice release)`,
      );
    }
    this.#hello = msg;
    const request: LoaderRequest = { firstEpoch: msg.epoch ?? 0 };
    if (msg.device !== undefined) request.device = msg.device;
    if (msg.rank !== undefined) {
      request.rank = msg.rank;
      request.worldSize = msg.worldSize;
    }
    const { loader, owned } = await this.#host.loaderFor(this, request);
    this.#loader = loader;
    this.#ownsLoader = owned;
    const o = loader.sampler.options;
    if (msg.rank !== undefined && (o.rank !== msg.rank || o.worldSize !== msg.worldSize)) {
      throw new ServeError(
        "shard",
        `client ${this.#client} wants rank ${msg.rank} of ${msg.worldSize}; this server's loader is rank ` +
          `${o.rank} of ${o.worldSize} (start one server per rank, or serve a loader factory)`,
      );
    }
    if (this.#opts.logConnections ?? true) {
      this.#log(`sluice serve: ${this.#client} connected (rank ${o.rank} of ${o.worldSize})`);
    }
    await this.#send({
      type: "welcome",
      protocol: SERVE_PROTOCOL_VERSION,
      server: SERVER_NAME,
      pid: Deno.pid,
      rank: o.rank,
      worldSize: o.worldSize,
      batchSize: loader.batchSize,
      batchesPerEpoch: loader.batchesPerEpoch,
      clipsPerEpoch: loader.clipsPerEpoch,
      nextEpoch: loader.epoch,
      decoder: loader.decoder,
      slots: this.#opts.slots,
      ahead: AHEAD,
    });
  }

  async #onEpoch(epoch: number): Promise<void> {
    await this.#cancelRun();
    if (this.#loader!.epoch !== epoch) {
      if (!this.#ownsLoader) {
        throw new ServeError(
          "epoch",
          `the served loader runs epoch ${this.#loader!.epoch} next and cannot jump to ${epoch} (a fixed ` +
            `loader's epochs run in order; serve a loader factory to start anywhere)`,
        );
      }
      await this.#replaceLoader(await this.#buildLoader(epoch));
    }
    const first = this.#resumed?.epoch === epoch ? this.#resumed.batch : 0;
    this.#resumed = null;
    this.#loaderStarted = true;
    const abort = new AbortController();
    const iterator = this.#loader![Symbol.asyncIterator]();
    const run: EpochRun = { epoch, iterator, abort, done: Promise.resolve() };
    // Not awaiting #fail: it closes the session, and closing awaits run.done.
    run.done = this.#stream(run, first).catch((e) => void this.#fail(e));
    this.#run = run;
    if (this.#t0 === 0) this.#t0 = performance.now();
  }

  /** A loader of the factory for the session's shard, at `epoch`. */
  async #buildLoader(epoch: number): Promise<VideoClassificationLoader> {
    const { rank, worldSize } = this.#loader!.sampler.options;
    const device = this.#hello?.device;
    const { loader } = await this.#host.loaderFor(this, {
      rank,
      worldSize,
      firstEpoch: epoch,
      ...(device !== undefined ? { device } : {}),
    });
    if (loader.epoch === epoch) return loader;
    await loader.close();
    throw new ServeError("epoch", `the loader factory built a loader at epoch ${loader.epoch}, not ${epoch}`);
  }

  /** Closes the session's (owned) loader and serves `loader` instead. */
  async #replaceLoader(loader: VideoClassificationLoader): Promise<void> {
    const old = this.#loader!;
    this.#loader = null;
    if (this.#loaderRing) {
      // Its ring closes with it: batches the client still holds there are no longer slots of this session
      // (the client keeps reading them; the server never writes there again), and their releases are moot.
      this.#disposeOut();
      this.#memorySeq = this.#seq;
    }
    try {
      await old.close();
    } finally {
      this.#loader = loader;
      this.#loaderStarted = false;
      this.#resumed = null;
    }
  }

  /**
   * Resumes from `state`: the session's loader loads it before its first epoch; one that ran an epoch already is
   * replaced by a factory loader that loaded it (a fixed loader cannot be). A refused state (another dataset,
   * shard or batch-shaping option) is answered by a non-fatal error and changes nothing.
   */
  async #onResume(state: unknown): Promise<void> {
    await this.#cancelRun();
    const s = state as LoaderState;
    try {
      // (A fixed loader whose epochs ran refuses it.)
      if (!this.#loaderStarted || !this.#ownsLoader) this.#loader!.loadStateDict(s);
      else {
        const fresh = await this.#buildLoader(Number.isSafeInteger(s.epoch) ? s.epoch : 0);
        try {
          fresh.loadStateDict(s);
        } catch (e) {
          await fresh.close();
          throw e;
        }
        await this.#replaceLoader(fresh);
      }
    } catch (e) {
      if (!(e instanceof InvalidArgumentError)) throw e;
      await this.#send(errorMessage(this.#opts.reword?.(e) ?? e, false));
      return;
    }
    this.#resumed = { epoch: s.epoch, batch: s.batches };
    await this.#send({ type: "resumed", epoch: s.epoch, batches: s.batches });
  }

  #onRelease(slot: number, seq: number, unused: boolean): void {
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
      if (have.loader === this.#loader) have.loader.undelivered(have.clips);
    }
    if (have.batch !== null) have.batch[Symbol.dispose]();
    else this.#ring!.release(slot);
  }

  /** Gives the loader back the slots of the batches this session has out (the client is gone). */
  #disposeOut(): void {
    for (const { batch } of this.#out.values()) batch?.[Symbol.dispose]();
    this.#out.clear();
  }

  // ---- streaming ----------------------------------------------------------------------------------------

  /** Streams `run`'s epoch, whose first batch is its batch `first` (a resumed epoch's). */
  async #stream(run: EpochRun, first: number): Promise<void> {
    const { iterator, abort, epoch } = run;
    let index = first, clips = 0, finished = false;
    try {
      while (!abort.signal.aborted) {
        // After the epoch's last batch only its end can come: it needs no credit (a client may keep every batch).
        if (index < this.#loader!.batchesPerEpoch) {
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
          kept = await this.#publish(batch, epoch, index, abort.signal);
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

  /** Sends `batch` to the client; true when the session keeps it until the client releases its slot (zero copy). */
  async #publish(batch: Batch, epoch: number, index: number, signal: AbortSignal): Promise<boolean> {
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
      return this.#sendBatch(batch, own.slot, epoch, index, batch, own.slots.audioOffset);
    }
    const batchSize = this.#loader!.batchSize;
    if (this.#ring === null || this.#loaderRing) {
      this.#loaderRing = false;
      const device = this.#hello?.device ?? this.#host.defaultDevice;
      this.#ring = this.#host.ringFor(this.#loader!, slotBytesFor(batch, batchSize), device);
      await this.#sendMemory();
    }
    const total = bytesInSlot(batch, batchSize);
    if (total > this.#ring.slotBytes) {
      throw new ServeError(
        "batch-too-big",
        `batch of ${total} bytes does not fit a slot of ${this.#ring.slotBytes}`,
      );
    }
    let slot: number;
    try {
      slot = await this.#ring.acquire(signal);
    } catch (e) {
      if (signal.aborted) return false;
      throw e;
    }
    this.#copiedBytes += copyIntoSlot(this.#ring.memory, this.#ring.offset(slot), batch, batchSize);
    await this.#sendBatch(batch, slot, epoch, index, null, audioAt(batch, batchSize));
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
    batch: Batch,
    slot: number,
    epoch: number,
    index: number,
    keep: Batch | null,
    audioOffset: number,
  ): Promise<boolean> {
    const seq = this.#seq++;
    this.#out.set(slot, { seq, batch: keep, clips: batch.clips, loader: this.#loader! });
    this.#sent++;
    this.#batches++;
    this.#clips += batch.shape[0];
    await this.#send(batchMessage(batch, { seq, epoch, index, slot, audioOffset }));
    return keep !== null;
  }

  async #cancelRun(): Promise<void> {
    const run = this.#run;
    if (run === null) return;
    this.#run = null;
    run.abort.abort();
    await run.iterator.return?.();
    await run.done;
  }

  // ---- writing ------------------------------------------------------------------------------------------

  #send(msg: ServerMessage): Promise<void> {
    const bytes = encodeMessage(msg);
    this.#writing = this.#writing.then(async () => {
      for (let at = 0; at < bytes.length;) at += await this.#conn.write(bytes.subarray(at));
    });
    return this.#writing;
  }

  /** Sends `e` as a fatal `error` message (the connection closes after it). */
  async #sendError(e: unknown): Promise<ErrorMessage> {
    const msg = errorMessage(this.#opts.reword?.(e) ?? e, true);
    try {
      await this.#send(msg);
    } catch { /* the peer is gone */ }
    return msg;
  }

  /**
   * Reports `e` to the client and ends the session; a write to a client that has gone away (it closed or died
   * while batches were on their way) ends it as a disconnection, not as an error.
   */
  async #fail(e: unknown): Promise<void> {
    if (this.#closing) return;
    if (isPeerGone(e)) {
      if (this.#opts.logConnections ?? true) this.#log(`sluice serve: ${this.#client} disconnected`);
    } else {
      const msg = await this.#sendError(e);
      // A private server's client (logConnections false: the Python client's own) raises it: logged too, it was
      // printed twice on the same terminal.
      if (this.#opts.logConnections ?? true) {
        this.#log(`sluice serve: ${this.#client}: ${msg.code}: ${msg.message}`);
      }
    }
    await this.close();
  }
}
