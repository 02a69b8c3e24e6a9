/**
 * Hello and resume, a session's half that owns its loader: the client's `hello` gets it a loader from the
 * {@link SessionHost} (the fixed one, or one a factory builds for the client's shard and first epoch) and is
 * answered by `welcome`; an epoch other than the loader's next gets a loader rebuilt there (factory loaders);
 * `resume` applies a state to the loader (`loadStateDict` before its first epoch, else on a loader rebuilt for
 * it), and a refused state is a non-fatal error, the session going on with its loader as it was.
 * @module
 */

import { InvalidArgumentError, ServeError } from "../errors.ts";
import type { VideoClassificationLoader } from "../loader/loader.ts";
import type { LoaderState } from "../loader/loader_state.ts";
import {
  type ErrorMessage,
  errorMessage,
  type HelloMessage,
  type ResumedMessage,
  SERVE_PROTOCOL_VERSION,
  type WelcomeMessage,
} from "./protocol.ts";
import type { LoaderHolder, LoaderRequest, SessionHost } from "./session_host.ts";
import { AHEAD } from "./out_batches.ts";

const SERVER_NAME = `sluice (deno ${Deno.version.deno})`;

/** The loader of one session, from its client's hello on; see the module docs. */
export class SessionLoader {
  readonly #host: SessionHost;
  readonly #holder: LoaderHolder;
  readonly #beforeClose: () => void;
  readonly #reword: (error: unknown) => unknown;
  #client = "(no hello yet)";
  #hello: HelloMessage | null = null;
  #loader: VideoClassificationLoader | null = null;
  #owned = false;
  /** Whether the loader has run an epoch for this session (a resume then needs a loader of its own). */
  #started = false;
  /** The resumed epoch and its first batch, until that epoch starts (its batches' `index` count from there). */
  #resumed: { epoch: number; batch: number } | null = null;

  /**
   * @param host where the loader comes from
   * @param holder the session, as the host sees it (a fixed loader is held by one session at a time)
   * @param beforeClose called before a loader the session owns closes because it is rebuilt (its ring goes)
   * @param reword words an error for the client (the server's `reword`: options named as the config names them)
   */
  constructor(
    host: SessionHost,
    holder: LoaderHolder,
    beforeClose: () => void,
    reword: (error: unknown) => unknown = (e) => e,
  ) {
    this.#host = host;
    this.#reword = reword;
    this.#holder = holder;
    this.#beforeClose = beforeClose;
  }

  /** The client's name from its hello (a placeholder before). */
  get client(): string {
    return this.#client;
  }

  /** The client's hello, once it came. */
  get hello(): HelloMessage | null {
    return this.#hello;
  }

  /** The session's loader (null before `hello`). */
  get loader(): VideoClassificationLoader | null {
    return this.#loader;
  }

  /** Whether the session owns its loader (built by a factory for it): it closes it, and may rebuild it. */
  get owned(): boolean {
    return this.#owned;
  }

  /**
   * Takes the client's hello: checks its protocol, gets the loader for its shard and first epoch.
   * @param msg the client's hello
   * @param slots the session's batch slots, told to the client
   * @returns the `welcome` to send
   * @throws {ServeError} `bad-message` on a second hello, `protocol-version` when the client speaks another
   *   protocol, `shard` when a fixed loader serves another rank, `busy` when another session holds it
   */
  async onHello(msg: HelloMessage, slots: number): Promise<WelcomeMessage> {
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
    const { loader, owned } = await this.#host.loaderFor(this.#holder, request);
    this.#loader = loader;
    this.#owned = owned;
    const o = loader.sampler.options;
    if (msg.rank !== undefined && (o.rank !== msg.rank || o.worldSize !== msg.worldSize)) {
      throw new ServeError(
        "shard",
        `client ${this.#client} wants rank ${msg.rank} of ${msg.worldSize}; this server's loader is rank ` +
          `${o.rank} of ${o.worldSize} (start one server per rank, or serve a loader factory)`,
      );
    }
    return {
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
      slots,
      ahead: AHEAD,
    };
  }

  /**
   * The loader to stream `epoch` with, rebuilt there when it runs another epoch next, and the epoch's first
   * batch (a resumed epoch's).
   * @throws {ServeError} `epoch` when a fixed loader would have to jump to `epoch`
   */
  async forEpoch(epoch: number): Promise<{ loader: VideoClassificationLoader; first: number }> {
    if (this.#loader!.epoch !== epoch) {
      if (!this.#owned) {
        throw new ServeError(
          "epoch",
          `the served loader runs epoch ${this.#loader!.epoch} next and cannot jump to ${epoch} (a fixed ` +
            `loader's epochs run in order; serve a loader factory to start anywhere)`,
        );
      }
      await this.#replace(await this.build(epoch));
    }
    const first = this.#resumed?.epoch === epoch ? this.#resumed.batch : 0;
    this.#resumed = null;
    this.#started = true;
    return { loader: this.#loader!, first };
  }

  /**
   * A loader of the factory for the session's shard, at `epoch` (the caller closes it).
   * @throws {ServeError} `epoch` when the factory built one at another epoch
   */
  async build(epoch: number): Promise<VideoClassificationLoader> {
    const { rank, worldSize } = this.#loader!.sampler.options;
    const device = this.#hello?.device;
    const { loader } = await this.#host.loaderFor(this.#holder, {
      rank,
      worldSize,
      firstEpoch: epoch,
      ...(device !== undefined ? { device } : {}),
    });
    if (loader.epoch === epoch) return loader;
    await loader.close();
    throw new ServeError("epoch", `the loader factory built a loader at epoch ${loader.epoch}, not ${epoch}`);
  }

  /**
   * Resumes from `state`: the session's loader loads it before its first epoch; one that ran an epoch already is
   * replaced by a factory loader that loaded it (a fixed loader cannot be).
   * @returns `resumed`, or the non-fatal `error` that refuses the state (another dataset, shard or batch-shaping
   *   option), which changes nothing
   */
  async resume(state: unknown): Promise<ResumedMessage | ErrorMessage> {
    const s = state as LoaderState;
    try {
      // (A fixed loader whose epochs ran refuses it.)
      if (!this.#started || !this.#owned) this.#loader!.loadStateDict(s);
      else {
        const fresh = await this.build(Number.isSafeInteger(s.epoch) ? s.epoch : 0);
        try {
          fresh.loadStateDict(s);
        } catch (e) {
          await fresh.close();
          throw e;
        }
        await this.#replace(fresh);
      }
    } catch (e) {
      if (!(e instanceof InvalidArgumentError)) throw e;
      return errorMessage(this.#reword(e), false);
    }
    this.#resumed = { epoch: s.epoch, batch: s.batches };
    return { type: "resumed", epoch: s.epoch, batches: s.batches };
  }

  /** Closes the loader if the session owns it. */
  async close(): Promise<void> {
    if (this.#owned) await this.#loader?.close();
  }

  /** Closes the session's (owned) loader and serves `loader` instead. */
  async #replace(loader: VideoClassificationLoader): Promise<void> {
    const old = this.#loader!;
    this.#loader = null;
    this.#beforeClose();
    try {
      await old.close();
    } finally {
      this.#loader = loader;
      this.#started = false;
      this.#resumed = null;
    }
  }
}
