/**
 * What a server's sessions share: where their loader comes from and which slot ring their batches are copied
 * into. A {@link LoaderFactory} builds one loader (and one ring) per session, with the client's shard and first
 * epoch; a fixed loader serves one session at a time (another gets a `busy` error while one holds it), and its
 * sessions reuse one ring. What a session needs of its server's options ({@link SessionOptions}), and how it tells
 * a client that has gone from a failure ({@link isPeerGone}).
 * @module
 */

import { ServeError } from "../errors.ts";
import type { VideoClassificationLoader } from "../loader/loader.ts";
import { CudaSlots } from "../memory/cuda_slots.ts";
import { HostSlots, SlotRing } from "../memory/slot_ring.ts";
import type { NodeStats } from "./node_stats.ts";

/** What a session needs of its server's options. */
export interface SessionOptions {
  /** Batch slots of the session's ring (told to the client in `welcome`). */
  slots: number;
  /** Milliseconds the client has to send `hello` (default 10000). */
  helloTimeoutMs?: number;
  /**
   * Log the client's connection and disconnection, and the error that ends its session (default true; false
   * for a client that raises that error itself: the Python client's own server).
   */
  logConnections?: boolean;
  /** Where connection and failure lines go. */
  log: (line: string) => void;
  /** A node server's counters, for `stats` replies. */
  node?: () => NodeStats;
  /** Words an error for the client before it is sent (the server's `reword`). */
  reword?: (error: unknown) => unknown;
}

/** What a session asks a {@link LoaderFactory} for. */
export interface LoaderRequest {
  /** The client's rank (undefined: the factory's default shard). */
  rank?: number;
  /** The client's world size (given with `rank`). */
  worldSize?: number;
  /** The epoch the loader must run first. */
  firstEpoch: number;
  /** The CUDA device the client wants its batches on (NVDEC: the loader decodes there; its slots live there). */
  device?: number;
}

/** Builds a loader for one session; the server closes it when the session ends. */
export type LoaderFactory = (request: LoaderRequest) => Promise<VideoClassificationLoader>;

/** A session as the host sees it: whether it is closing, and when it is done. */
export interface LoaderHolder {
  readonly closing: boolean;
  readonly done: Promise<void>;
}

/** The loader source of a server's sessions, the fixed loader's holder and its ring; see the module docs. */
export class SessionHost {
  readonly #source: VideoClassificationLoader | LoaderFactory;
  readonly #slots: number;
  readonly #device: number;
  #holder: LoaderHolder | null = null;
  #holderGone: Promise<void> = Promise.resolve();
  #sharedRing: SlotRing | null = null;

  /** `slots` per ring; `device`: the CUDA device of a fixed NVDEC loader's ring. */
  constructor(source: VideoClassificationLoader | LoaderFactory, slots: number, device: number) {
    this.#source = source;
    this.#slots = slots;
    this.#device = device;
  }

  /** Whether loaders (and rings) are built per session. */
  get factory(): boolean {
    return typeof this.#source === "function";
  }

  /** The CUDA device of GPU slots when the client names none. */
  get defaultDevice(): number {
    return this.#device;
  }

  /** The loader for a session: built by the factory, or the fixed one once no other session holds it. */
  async loaderFor(
    session: LoaderHolder,
    request: LoaderRequest,
  ): Promise<{ loader: VideoClassificationLoader; owned: boolean }> {
    if (typeof this.#source === "function") {
      return { loader: await this.#source(request), owned: true };
    }
    if (this.#holder !== null && !this.#holder.closing) {
      throw new ServeError("busy", "the server's loader is serving another client");
    }
    await this.#holderGone;
    if (this.#holder !== null) throw new ServeError("busy", "the server's loader is serving another client");
    this.#holder = session;
    this.#holderGone = session.done.then(() => {
      this.#holder = null;
    });
    return { loader: this.#source, owned: false };
  }

  /** The ring for a session: one per session with a factory; the fixed loader's one ring otherwise. */
  ringFor(loader: VideoClassificationLoader, batchBytes: number, device: number): SlotRing {
    const make = () =>
      new SlotRing(
        this.#slots,
        batchBytes,
        (size) =>
          loader.decoder === "nvdec"
            ? new CudaSlots(size, device)
            : new HostSlots(`sluice-serve-${Deno.pid}`, size),
      );
    if (this.factory) return make();
    if (this.#sharedRing !== null && this.#sharedRing.slotBytes < batchBytes) {
      this.#sharedRing.close();
      this.#sharedRing = null;
    }
    this.#sharedRing ??= make();
    return this.#sharedRing;
  }

  /** Frees the fixed loader's ring. */
  close(): void {
    this.#sharedRing?.close();
    this.#sharedRing = null;
  }
}

/** Whether `e` is a socket error saying the peer has gone (closed its end, or died). */
export function isPeerGone(e: unknown): boolean {
  return e instanceof Deno.errors.BrokenPipe || e instanceof Deno.errors.ConnectionReset ||
    e instanceof Deno.errors.NotConnected || e instanceof Deno.errors.BadResource ||
    e instanceof Deno.errors.Interrupted;
}
