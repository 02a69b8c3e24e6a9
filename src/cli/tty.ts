/**
 * Terminal output helpers for the CLI: a progress bar and a block of lines redrawn in place (the live view),
 * with log lines printed above it. Both use ANSI escapes only when the stream is a terminal; otherwise a
 * progress bar prints nothing until it ends and a live block draws nothing (log lines still go through, one
 * per line), so logs and pipes stay clean.
 *
 * On a terminal every drawn line is fitted to the terminal's width, read at each draw (so a resized window or a
 * tmux pane is followed): a line that would wrap is broken at word boundaries, because a redraw moves the
 * cursor up by the number of lines it drew and a line the terminal wrapped would leave a fragment behind.
 * @module
 */

const encoder = new TextEncoder();

/** A writable stream of the CLI (stdout or stderr). */
export interface Out {
  /** Writes some of `p`; returns how many bytes were written (as `Deno.stdout.writeSync`). */
  writeSync(p: Uint8Array): number;
  /** True when the stream is a terminal (escapes are drawn only then). */
  isTerminal(): boolean;
}

function write(out: Out, s: string): void {
  const bytes = encoder.encode(s);
  let n = 0;
  while (n < bytes.length) n += out.writeSync(bytes.subarray(n));
}

/** Writes text to a stream synchronously, ending it with a newline. */
export function print(out: Out, text: string): void {
  write(out, text.endsWith("\n") ? text : text + "\n");
}

/** The terminal's size: `Deno.consoleSize()`, else `$COLUMNS`/`$LINES`, else 80×24. */
export function terminalSize(): { columns: number; rows: number } {
  try {
    const { columns, rows } = Deno.consoleSize();
    if (columns > 0 && rows > 0) return { columns, rows };
  } catch {
    // not a terminal: fall through
  }
  const env = (name: string, dflt: number) => {
    const v = Number(Deno.env.get(name));
    return Number.isInteger(v) && v > 0 ? v : dflt;
  };
  return { columns: env("COLUMNS", 80), rows: env("LINES", 24) };
}

/**
 * Breaks `line` into pieces of at most `width` characters, at spaces where it can (a word longer than `width`
 * is cut); continuation pieces keep the line's leading indentation.
 */
export function wrapLine(line: string, width: number): string[] {
  if (line.length <= width) return [line];
  const indent = line.match(/^ */)![0].slice(0, Math.floor(width / 2));
  const out: string[] = [];
  let rest = line;
  while (rest.length > width) {
    const space = rest.lastIndexOf(" ", width);
    const cut = space > indent.length ? space : width;
    out.push(rest.slice(0, cut).trimEnd());
    rest = indent + rest.slice(cut).trimStart();
  }
  out.push(rest);
  return out;
}

/** A one-line progress bar: `label [#####.....] 12/40 (30%)`. */
export class ProgressBar {
  readonly #out: Out;
  readonly #label: string;
  readonly #total: number;
  readonly #tty: boolean;
  readonly #t0 = performance.now();

  /** A bar for `total` steps, drawn on `out` (only when it is a terminal; `finish` prints either way). */
  constructor(out: Out, label: string, total: number) {
    this.#out = out;
    this.#label = label;
    this.#total = total;
    this.#tty = out.isTerminal();
  }

  /** Redraws the bar at `done` (a no-op when not a terminal). */
  update(done: number): void {
    if (!this.#tty) return;
    write(this.#out, `\r\x1b[2K${this.#line(done, terminalSize().columns - 1)}`);
  }

  /** Prints the final state on its own line. */
  finish(done: number): void {
    const secs = ((performance.now() - this.#t0) / 1000).toFixed(1);
    const width = this.#tty ? terminalSize().columns - 1 : Infinity;
    write(
      this.#out,
      `${this.#tty ? "\r\x1b[2K" : ""}${this.#line(done, width - 8 - secs.length)} in ${secs} s\n`,
    );
  }

  #line(done: number, width: number): string {
    const frac = this.#total > 0 ? Math.min(1, done / this.#total) : 1;
    const count = ` ${done}/${this.#total} (${Math.round(frac * 100)}%)`;
    const bar = Math.max(0, Math.min(30, width - this.#label.length - count.length - 3));
    const fill = Math.round(frac * bar);
    const text = `${this.#label} [${"#".repeat(fill)}${".".repeat(bar - fill)}]${count}`;
    return text.length <= width ? text : text.slice(0, Math.max(0, width));
  }
}

/**
 * A block of lines redrawn in place on a terminal (the cursor moves up over the previous block), fitted to the
 * terminal's width and height, with log lines printed above it.
 */
export class LiveBlock {
  readonly #out: Out;
  readonly #tty: boolean;
  readonly #size: () => { columns: number; rows: number };
  /** Lines on screen now. */
  #lines = 0;
  #text: string | null = null;

  /** `size` reports the terminal's size (default {@link terminalSize}); tests pass a fixed one. */
  constructor(out: Out, size: () => { columns: number; rows: number } = terminalSize) {
    this.#out = out;
    this.#tty = out.isTerminal();
    this.#size = size;
  }

  /** True when drawing actually happens. */
  get active(): boolean {
    return this.#tty;
  }

  /** The terminal's width now, in columns. */
  get columns(): number {
    return this.#size().columns;
  }

  /** Replaces the block with `text`. */
  draw(text: string): void {
    if (!this.#tty) return;
    this.#text = text;
    write(this.#out, this.#up() + this.#body(text));
  }

  /**
   * Prints `line` above the block (on a terminal: the block is erased, the line written, the block drawn again
   * below it), so log lines and the live view never overwrite each other.
   */
  log(line: string): void {
    if (!this.#tty || this.#text === null) {
      print(this.#out, line);
      return;
    }
    write(this.#out, `${this.#up()}\x1b[0J${line}\n${this.#body(this.#text)}`);
  }

  /** Erases the block; later log lines are printed plainly. */
  clear(): void {
    this.#text = null;
    if (!this.#tty || this.#lines === 0) return;
    write(this.#out, `${this.#up()}\x1b[0J`);
    this.#lines = 0;
  }

  #up(): string {
    const up = this.#lines > 0 ? `\x1b[${this.#lines}F` : "";
    this.#lines = 0;
    return up;
  }

  #body(text: string): string {
    const { columns, rows } = this.#size();
    // One column is kept free: a line that fills the last column leaves some terminals waiting to wrap.
    let lines = text.split("\n").flatMap((l) => wrapLine(l, Math.max(1, columns - 1)));
    const room = Math.max(2, rows - 1);
    if (lines.length > room) {
      // Too tall: keep the top (header, table head) and the last line (the bottleneck verdict).
      const hidden = lines.length - room + 1;
      lines = [...lines.slice(0, room - 2), `… ${hidden} more lines`, lines[lines.length - 1]];
    }
    this.#lines = lines.length;
    return lines.map((l) => `\x1b[2K${l}`).join("\n") + "\x1b[0J\n";
  }
}
