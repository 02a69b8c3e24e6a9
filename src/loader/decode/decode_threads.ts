/**
 * FFmpeg threads for the loader's decode tasks: the pool runs one task per Worker, one Worker per core, each
 * decoder single-threaded, which keeps every core busy while clips keep coming. When fewer clips are left than
 * cores (the tail of an epoch, a dataset of one long 4K video, a small epoch), a core would idle while one frame
 * after another of a big video runs on one core: then a task starting gets the idle cores as libavcodec threads.
 *
 * The decision ({@link decodeThreads}) is a pure function of what is in flight, made when a task starts (a
 * running decoder's thread count cannot change). A {@link ThreadBudget} of one token per Worker makes it hold:
 * every task (demux too, in-process) holds its threads' tokens while it runs, so threads in use never exceed the
 * budget; a task that finds no token free waits for one.
 * @module
 */

/**
 * Threads for a decode task starting now: the idle cores left after one for each clip still to start, at least 1.
 * @param cores the budget: cores (Workers) the decode pool may keep busy
 * @param busy threads held by the tasks running now
 * @param ahead clips of the epoch that have not started yet (each will want a core of its own)
 */
export function decodeThreads(cores: number, busy: number, ahead: number): number {
  return Math.max(1, cores - busy - ahead);
}

/** Tokens for threads, one per core of the pool; see the module docs. */
export class ThreadBudget {
  readonly #size: () => number;
  #held = 0;
  readonly #waiting: { want: number; grant: (n: number) => void }[] = [];

  /**
   * @param size tokens in all: a number, or a function read at each decision (the decode pool's Workers, which
   * an "auto" stage concurrency changes while the loader runs)
   */
  constructor(size: number | (() => number)) {
    this.#size = typeof size === "number" ? () => size : size;
  }

  /** Tokens in all, now. */
  get size(): number {
    return Math.max(1, this.#size());
  }

  /** Threads held by running tasks. */
  get busy(): number {
    return this.#held;
  }

  /**
   * Takes `want` tokens, or as many as are free (at least 1: waits for one when none is), in arrival order;
   * resolves to the number taken, which the caller gives back with {@link release}.
   */
  acquire(want: number): Promise<number> {
    const free = this.size - this.#held;
    if (free >= 1 && this.#waiting.length === 0) return Promise.resolve(this.#take(want));
    return new Promise((grant) => this.#waiting.push({ want, grant }));
  }

  /** Gives back `n` tokens (those {@link acquire} resolved to). */
  release(n: number): void {
    this.#held = Math.max(0, this.#held - n);
    while (this.#waiting.length > 0 && this.size - this.#held >= 1) {
      const w = this.#waiting.shift()!;
      w.grant(this.#take(w.want));
    }
  }

  #take(want: number): number {
    const n = Math.max(1, Math.min(want, this.size - this.#held));
    this.#held += n;
    return n;
  }
}
