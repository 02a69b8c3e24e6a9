/**
 * Terminal output helpers for the CLI: a progress bar and a block of lines redrawn in place. Both use ANSI escapes
 * only when the stream is a terminal; otherwise a progress bar prints nothing until it ends and a live block
 * prints nothing at all (the final summary is printed by the caller), so logs and pipes stay clean.
 * @module
 */

const encoder = new TextEncoder();

/** A writable stream of the CLI (stdout or stderr). */
export interface Out {
  writeSync(p: Uint8Array): number;
  isTerminal(): boolean;
}

function write(out: Out, s: string): void {
  const bytes = encoder.encode(s);
  let n = 0;
  while (n < bytes.length) n += out.writeSync(bytes.subarray(n));
}

/** A one-line progress bar: `label [#####.....] 12/40 (30%)`. */
export class ProgressBar {
  readonly #out: Out;
  readonly #label: string;
  readonly #total: number;
  readonly #tty: boolean;
  readonly #t0 = performance.now();

  constructor(out: Out, label: string, total: number) {
    this.#out = out;
    this.#label = label;
    this.#total = total;
    this.#tty = out.isTerminal();
  }

  /** Redraws the bar at `done` (a no-op when not a terminal). */
  update(done: number): void {
    if (!this.#tty) return;
    write(this.#out, `\r\x1b[2K${this.#line(done)}`);
  }

  /** Prints the final state on its own line. */
  finish(done: number): void {
    const secs = ((performance.now() - this.#t0) / 1000).toFixed(1);
    write(this.#out, `${this.#tty ? "\r\x1b[2K" : ""}${this.#line(done)} in ${secs} s\n`);
  }

  #line(done: number): string {
    const width = 30;
    const frac = this.#total > 0 ? Math.min(1, done / this.#total) : 1;
    const fill = Math.round(frac * width);
    return `${this.#label} [${"#".repeat(fill)}${".".repeat(width - fill)}] ${done}/${this.#total} ` +
      `(${Math.round(frac * 100)}%)`;
  }
}

/** A block of lines redrawn in place on a terminal (cursor moved up over the previous block). */
export class LiveBlock {
  readonly #out: Out;
  readonly #tty: boolean;
  #lines = 0;

  constructor(out: Out) {
    this.#out = out;
    this.#tty = out.isTerminal();
  }

  /** True when drawing actually happens. */
  get active(): boolean {
    return this.#tty;
  }

  /** Replaces the block with `text`. */
  draw(text: string): void {
    if (!this.#tty) return;
    const up = this.#lines > 0 ? `\x1b[${this.#lines}F` : "";
    const body = text.split("\n").map((l) => `\x1b[2K${l}`).join("\n");
    write(this.#out, `${up}${body}\x1b[0J\n`);
    this.#lines = text.split("\n").length;
  }

  /** Erases the block. */
  clear(): void {
    if (!this.#tty || this.#lines === 0) return;
    write(this.#out, `\x1b[${this.#lines}F\x1b[0J`);
    this.#lines = 0;
  }
}

/** Writes text to a stream synchronously. */
export function print(out: Out, text: string): void {
  write(out, text.endsWith("\n") ? text : text + "\n");
}
