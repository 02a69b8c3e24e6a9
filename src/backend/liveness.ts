/**
 * The watch on a backend child's liveness: the child sends a HEARTBEAT when it has nothing else to send, so any
 * silence is news. Silent for `warningMs`: one log line and `stalled` until it speaks again; silent for
 * `timeoutMs`: the owner is told (it kills the child and fails with `BackendStalledError`). The first frame may
 * take longer (Deno starting, modules loading): neither a warning nor a kill before a start-up grace. A tick that comes late means
 * this process's own event loop was blocked, so the child's frames may be waiting unread in the pipe: its
 * silence is then not evidence, and counting starts again.
 * @module
 */

import { type Clock, realClock } from "../pipeline/clock.ts";

/** Silence before the child's first frame that is still start-up, not a stall (a loaded machine is slow). */
const STARTUP_GRACE_MS = 10_000;

/** Options of {@link Liveness}. */
export interface LivenessOptions {
  /** The child's heartbeat interval, ms: ticks are at least this fine. */
  heartbeatIntervalMs: number;
  /** Silence reported as a stall, ms. */
  warningMs: number;
  /** Silence after which `onTimeout` is called (`Infinity`: never), ms. */
  timeoutMs: number;
  /** Where the warning and recovery lines go. */
  log: (line: string) => void;
  /** Called once, with the silence in ms, when it reaches `timeoutMs`; the watch stops. */
  onTimeout: (silentMs: number) => void;
  /** The time source (default: wall-clock time; tests pass a virtual clock). */
  clock?: Clock;
}

/** Watches the time since the child's last frame on a timer. */
export class Liveness {
  readonly #opts: LivenessOptions;
  readonly #tickMs: number;
  readonly #clock: Clock;
  #timer: unknown;
  #lastHeard: number;
  #lastTick: number;
  #heardAny = false;
  #stalled = false;
  #stalls = 0;

  constructor(opts: LivenessOptions) {
    this.#opts = opts;
    this.#clock = opts.clock ?? realClock;
    this.#lastHeard = this.#lastTick = this.#clock.now();
    // Ticks fine enough to notice silence within a fraction of the warning limit.
    this.#tickMs = Math.max(10, Math.min(opts.heartbeatIntervalMs, opts.warningMs / 4, 1000));
    this.#schedule();
  }

  /** Milliseconds since the child's last frame. */
  get silentMs(): number {
    return this.#clock.now() - this.#lastHeard;
  }

  /** True while the child has been silent for longer than `warningMs`. */
  get stalled(): boolean {
    return this.#stalled;
  }

  /** Times the child went silent for longer than `warningMs`. */
  get stalls(): number {
    return this.#stalls;
  }

  /** A frame arrived. */
  heard(): void {
    this.#lastHeard = this.#clock.now();
    this.#heardAny = true;
    if (!this.#stalled) return;
    this.#stalled = false;
    this.#opts.log("the child is responding again");
  }

  /** Stops watching (the child exited or is being stopped). */
  stop(): void {
    this.#clock.clearTimer(this.#timer);
    this.#timer = undefined;
  }

  #schedule(): void {
    this.#timer = this.#clock.setTimer(() => {
      this.#timer = undefined;
      if (this.#check()) this.#schedule();
    }, this.#tickMs);
  }

  /** Looks at the silence; false once the watch has ended (timed out). */
  #check(): boolean {
    const { warningMs, timeoutMs } = this.#opts;
    const now = this.#clock.now();
    if (now - this.#lastTick > 2 * this.#tickMs + 100) this.#lastHeard = Math.max(this.#lastHeard, now);
    this.#lastTick = now;
    const silent = now - this.#lastHeard;
    const grace = this.#heardAny ? 0 : STARTUP_GRACE_MS;
    const warnAfter = Math.max(warningMs, grace);
    if (silent >= Math.max(timeoutMs, grace)) {
      this.#opts.onTimeout(silent);
      return false;
    } else if (silent >= warnAfter && !this.#stalled) {
      this.#stalled = true;
      this.#stalls++;
      const limit = Number.isFinite(timeoutMs)
        ? `it is killed after ${timeoutMs / 1000} s of silence (stallTimeoutMs)`
        : "stallTimeoutMs is Infinity: waiting";
      this.#opts.log(
        `warning: no frame, not even a heartbeat, for ${
          (silent / 1000).toFixed(1)
        } s: the child is stopped ` +
          `(SIGSTOP?), hung in I/O or starved of CPU; ${limit}`,
      );
    }
    return true;
  }
}
