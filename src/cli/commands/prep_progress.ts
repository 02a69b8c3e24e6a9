/**
 * How the dataset preparation commands (`transcode`, `pack`) report a long run on stderr: on a terminal one
 * progress line redrawn in place (count, percent, ETA, items/s, MB/s), fitted to the terminal's width at each
 * redraw (a line the terminal wraps would stack a new line on every redraw); otherwise JSON lines a log collector
 * can parse: a `progress` object at most once a second and at the end, and a `failed` object per failure
 * as it happens.
 * @module
 */

import { progressLine, type ProgressSnapshot } from "../../prep/progress.ts";
import { type Out, print, terminalSize } from "../tty.ts";

/** Reports snapshots and failures of one job to `out`; see the module docs. */
export class PrepProgress {
  readonly #out: Out;
  readonly #tty: boolean;
  readonly #everyMs: number;
  #last = -Infinity;

  constructor(out: Out = Deno.stderr, everyMs = 1000) {
    this.#out = out;
    this.#tty = out.isTerminal();
    this.#everyMs = everyMs;
  }

  /** One item finished: redraws the line, or prints a JSON line when one is due (always for the last item). */
  update(s: ProgressSnapshot, failure?: { path: string; error: string }): void {
    if (this.#tty) {
      if (failure) print(this.#out, `\r\x1b[2Kfailed: ${failure.path}: ${failure.error}`);
      // One column kept free: a line that fills the last one leaves some terminals waiting to wrap.
      const enc = new TextEncoder().encode(`\r\x1b[2K${progressLine(s, terminalSize().columns - 1)}`);
      this.#out.writeSync(enc);
      return;
    }
    if (failure) print(this.#out, JSON.stringify({ event: "failed", job: s.job, ...failure }));
    const now = performance.now();
    if (now - this.#last >= this.#everyMs || s.finished === s.total) {
      this.#last = now;
      print(this.#out, JSON.stringify({ event: "progress", ...s }));
    }
  }

  /** Ends the terminal line. */
  finish(): void {
    if (this.#tty) print(this.#out, "");
  }
}
