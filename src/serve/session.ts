/**
 * One client connection of a batch server (`server.ts`): the session reads the client's messages in order
 * (`hello`, `epoch`, `release`, `taken`, `stats`, `state`, `resume`, `preview`, `bye`; each validated first,
 * `protocol.ts`), hands each to the half of the session it concerns, and writes the replies in order.
 *
 * - Hello and resume (`session_hello.ts`, {@link SessionLoader}): the session's loader, rebuilt at another
 *   epoch or for a resumed state (factory loaders).
 * - Streaming and publishing (`publisher.ts`, {@link BatchPublisher}): credit, slots, zero copy, releases.
 * - `state` and `preview` (`session_replies.ts`): the loader's state at the client's place, and a contact sheet
 *   of an epoch drawn by a loader of its own (factory loaders).
 * - When the client goes away (closed, crashed, killed), the session cancels the running epoch, frees its slots
 *   and ends; a broken message or another protocol version ends it with an `error` message that says why.
 * @module
 */

import { errorText, ServeError } from "../errors.ts";
import type { LoaderStats } from "../loader/loader.ts";
import {
  type ClientMessage,
  encodeMessage,
  type ErrorMessage,
  errorMessage,
  MAX_CLIENT_MESSAGE,
  MessageDecoder,
  parseClientMessage,
  type ServerMessage,
  type StatsMessage,
} from "./protocol.ts";
import { isPeerGone, type SessionHost, type SessionOptions } from "./session_host.ts";
import { stateAt, writePreview } from "./session_replies.ts";
import { type SessionStats, statsReply } from "./session_stats.ts";
import { DataWaits } from "./data_wait.ts";
import type { OutBatch } from "./out_batches.ts";
import { SessionLoader } from "./session_hello.ts";
import { BatchPublisher } from "./publisher.ts";

/** One client connection; see the module docs. */
export class Session {
  /** Settles when the session has ended (its slots freed, an owned loader closed). */
  readonly done: Promise<void>;
  /** The data waits its client reported. */
  readonly dataWait: DataWaits = new DataWaits();
  #resolveDone!: () => void;
  readonly #conn: Deno.UnixConn;
  readonly #opts: SessionOptions;
  readonly #log: (line: string) => void;
  readonly #frames = new MessageDecoder(MAX_CLIENT_MESSAGE);
  readonly #loaders: SessionLoader;
  readonly #publisher: BatchPublisher;
  #writing: Promise<void> = Promise.resolve();
  #closing = false;
  #queue: Promise<void> = Promise.resolve();

  /**
   * Starts reading `conn`'s messages.
   * @param conn the client's connection (the session closes it)
   * @param host where the session's loader and its ring of copies come from
   * @param opts what the session needs of its server's options
   */
  constructor(conn: Deno.UnixConn, host: SessionHost, opts: SessionOptions) {
    this.#conn = conn;
    this.#opts = opts;
    this.#log = opts.log;
    this.done = new Promise((r) => this.#resolveDone = r);
    const send = (msg: ServerMessage) => this.#send(msg);
    this.#publisher = new BatchPublisher(host, send, () => this.#loaders.hello?.device);
    this.#loaders = new SessionLoader(host, this, () => this.#publisher.loaderClosing(), opts.reword);
    void this.#readLoop();
  }

  /** Whether the session is ending. */
  get closing(): boolean {
    return this.#closing;
  }

  /**
   * Current counters.
   * @returns the session's counters as a server's stats list them
   */
  stats(): SessionStats {
    return this.#stats([]);
  }

  /**
   * Its loader's stats.
   * @returns them, or null before `hello`
   */
  loaderStats(): LoaderStats | null {
    return this.#loaders.loader?.stats() ?? null;
  }

  /** The counters, with the batches of `unconsumed` counted as sent but not delivered. */
  #stats(unconsumed: readonly OutBatch[]): SessionStats {
    const { seconds, ...counts } = this.#publisher.counts(unconsumed);
    const options = this.#loaders.loader?.sampler.options;
    return {
      client: this.#loaders.client,
      rank: options?.rank ?? 0,
      worldSize: options?.worldSize ?? 1,
      epoch: counts.epoch,
      sent: counts.sent,
      batches: counts.batches,
      clips: counts.clips,
      copiedBytes: counts.copiedBytes,
      clipsPerSec: seconds > 0 ? counts.clips / seconds : 0,
      ring: counts.ring,
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
    const unconsumed = taken === undefined ? [] : this.#publisher.unconsumed(taken);
    const loader = this.#loaders.loader;
    const clips = unconsumed.flatMap((b) => b.loader === loader ? b.clips : []);
    return statsReply(this.#stats(unconsumed), loader?.stats(clips) ?? null, this.#opts.node?.());
  }

  /**
   * Sends an error and closes (used before the session starts).
   * @param code the error's code (`busy`, `timeout`, …)
   * @param message what the client is told
   */
  async refuse(code: string, message: string): Promise<void> {
    await this.#sendError(new ServeError(code, message));
    await this.close();
  }

  /**
   * Cancels the epoch, frees the slots, closes the connection and an owned loader. Idempotent.
   * @returns {@link done}
   */
  close(): Promise<void> {
    if (this.#closing) return this.done;
    this.#closing = true;
    void (async () => {
      try {
        try {
          this.#conn.close(); // first: a stream still writing to the client stops at once
        } catch { /* closed */ }
        try {
          await this.#publisher.cancel();
        } catch (e) {
          this.#log(`sluice serve: ${this.#loaders.client}: while cancelling its epoch: ${errorText(e)}`);
        }
        this.#publisher.close();
        try {
          await this.#loaders.close();
        } catch (e) {
          this.#log(`sluice serve: ${this.#loaders.client}: closing its loader: ${errorText(e)}`);
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
      if (this.#loaders.hello === null) {
        void this.refuse("timeout", "no hello message within the time allowed");
      }
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
        this.#log(`sluice serve: ${this.#loaders.client} disconnected`);
      }
      await this.close();
    }
  }

  async #handle(value: unknown): Promise<void> {
    const msg: ClientMessage = parseClientMessage(value);
    if (this.#loaders.hello === null && msg.type !== "hello") {
      throw new ServeError("bad-message", `the first message must be hello, got ${msg.type}`);
    }
    if ("waits" in msg && msg.waits !== undefined) this.dataWait.record(msg.waits);
    switch (msg.type) {
      case "hello": {
        const welcome = await this.#loaders.onHello(msg, this.#opts.slots);
        if (this.#opts.logConnections ?? true) {
          this.#log(
            `sluice serve: ${this.#loaders.client} connected (rank ${welcome.rank} of ${welcome.worldSize})`,
          );
        }
        return await this.#send(welcome);
      }
      case "epoch": {
        await this.#publisher.cancel();
        const { loader, first } = await this.#loaders.forEpoch(msg.epoch);
        return this.#publisher.start(loader, msg.epoch, first, (e) => void this.#fail(e));
      }
      case "release":
        return this.#publisher.release(msg.slot, msg.seq, msg.unused === true, this.#loaders.loader);
      case "taken":
        return this.#publisher.took(msg.taken);
      case "stats":
        return await this.#send(this.#statsReply(msg.taken));
      case "state":
        return await this.#send({ type: "state", state: stateAt(this.#loaders.loader!, msg) });
      case "resume":
        await this.#publisher.cancel();
        return await this.#send(await this.#loaders.resume(msg.state));
      case "preview":
        if (!this.#loaders.owned) throw new ServeError("preview", "a fixed loader's server draws no preview");
        return await this.#send(await writePreview(await this.#loaders.build(msg.epoch), msg));
      case "bye":
        await this.close();
        return;
    }
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
      if (this.#opts.logConnections ?? true) this.#log(`sluice serve: ${this.#loaders.client} disconnected`);
    } else {
      const msg = await this.#sendError(e);
      // A private server's client (logConnections false: the Python client's own) raises it: logged too, it was
      // printed twice on the same terminal.
      if (this.#opts.logConnections ?? true) {
        this.#log(`sluice serve: ${this.#loaders.client}: ${msg.code}: ${msg.message}`);
      }
    }
    await this.close();
  }
}
