/** Decode threads for the GPU kit: `n` Workers running `worker.ts`, one request at a time each. @module */

/** A reply of `worker.ts` (see there). */
// deno-lint-ignore no-explicit-any
export type Reply = Record<string, any>;

/** `n` decode Workers. */
export class DecodeThreads {
  readonly #workers: Worker[] = [];

  constructor(n: number) {
    for (let i = 0; i < n; i++) {
      this.#workers.push(new Worker(new URL("./worker.ts", import.meta.url).href, { type: "module" }));
    }
  }

  get size(): number {
    return this.#workers.length;
  }

  /** Sends `message` to Worker `i` and waits for its reply; a reply with `error` rejects. */
  ask(i: number, message: unknown): Promise<Reply> {
    const w = this.#workers[i];
    return new Promise((resolve, reject) => {
      w.onmessage = (e: MessageEvent<Reply>) =>
        e.data.error ? reject(new Error(e.data.error)) : resolve(e.data);
      w.onerror = (e) => {
        e.preventDefault();
        reject(new Error(`decode thread ${i}: ${e.message}`));
      };
      w.postMessage(message);
    });
  }

  /** Asks every Worker to release its decoder, then ends them. */
  async close(): Promise<void> {
    await Promise.allSettled(this.#workers.map((_, i) => this.ask(i, { op: "close" })));
    for (const w of this.#workers) w.terminate();
    this.#workers.length = 0;
  }
}
