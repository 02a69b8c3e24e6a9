/**
 * The loader's front half in a backend child (`backend: "subprocess"`): `spawnBackend` running
 * `backend_module.ts` with the front's JSON arguments, as the source of the loader's pipeline. The child starts
 * planning and prefetching its first epoch as soon as it is spawned; a loader resumed after it was built
 * (`loadStateDict`, before its first epoch) restarts the child with the new arguments, and its pipeline keeps
 * iterating this one source.
 * @module
 */

import type { BackendStats } from "../../backend/backend_stats.ts";
import { type BackendSource, spawnBackend } from "../../backend/spawn.ts";
import type { FrontArgs } from "./front.ts";
import type { ClipItem } from "../clip/life.ts";

/** The loader's backend child; see the module docs. */
export class BackendFront implements AsyncIterable<ClipItem> {
  readonly #bufferSize: number;
  readonly #log: (line: string) => void;
  readonly #failure = new AbortController();
  readonly #closing: Promise<void>[] = [];
  #source: BackendSource;

  /**
   * @param args the front's arguments
   * @param bufferSize items the parent buffers (how far the child runs ahead)
   * @param log where the child's lines go
   */
  constructor(args: FrontArgs, bufferSize: number, log: (line: string) => void) {
    this.#bufferSize = bufferSize;
    this.#log = log;
    this.#source = this.#spawn(args);
  }

  #spawn(args: FrontArgs): BackendSource {
    const source = spawnBackend({
      module: new URL("./backend_module.ts", import.meta.url),
      export: "default",
      args,
      bufferSize: this.#bufferSize,
      permissions: ["--allow-read", "--allow-env", "--allow-ffi", "--allow-net"],
      isolated: true, // the loader's module imports only sluice's own files
      log: this.#log,
    });
    // A child replaced by a restart is closed on purpose: only the current one's failure ends the loader.
    source.failure.addEventListener("abort", () => {
      if (source === this.#source) this.#failure.abort(source.failure.reason);
    }, { once: true });
    return source;
  }

  /** Aborted with the current child's error when it fails (see `BackendSource.failure`). */
  get failure(): AbortSignal {
    return this.#failure.signal;
  }

  /** The current child's transport and pipeline stats. */
  stats(): BackendStats {
    return this.#source.stats();
  }

  /** Replaces the child by one started with `args` (before the loader's first epoch only). */
  restart(args: FrontArgs): void {
    const old = this.#source;
    this.#source = this.#spawn(args);
    this.#closing.push(old.close().catch(() => {})); // its failure is nobody's now
  }

  /** One epoch of the current child. */
  [Symbol.asyncIterator](): AsyncIterator<ClipItem> {
    return this.#source[Symbol.asyncIterator]() as AsyncIterator<ClipItem>;
  }

  /** Stops the child (and any replaced one still exiting). */
  async close(): Promise<void> {
    await Promise.all([...this.#closing, this.#source.close()]);
  }
}
