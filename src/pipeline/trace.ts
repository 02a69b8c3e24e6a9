/**
 * Per-task tracing in Chrome trace-event JSON (opens in Perfetto or chrome://tracing): one complete span ("X")
 * per task per stage, each stage a process row with one thread lane per concurrent slot, and queue depths as
 * counters ("C"). Only allocates when tracing is on.
 * @module
 */

/** One Chrome trace event. */
interface TraceEvent {
  name: string;
  ph: "X" | "C" | "M";
  ts: number;
  dur?: number;
  pid: number;
  tid: number;
  args?: Record<string, unknown>;
}

/** Collects trace events in memory and writes them as a Chrome trace JSON file. */
export class Tracer {
  readonly path: string;
  readonly #events: TraceEvent[] = [];
  readonly #pids = new Map<string, number>();
  /** `performance.now()` origin in µs since the epoch, so traces from several runs line up. */
  readonly #origin = performance.timeOrigin * 1000;

  /** @param path where {@link write} puts the JSON */
  constructor(path: string) {
    this.path = path;
  }

  /** Records one task of `stage` on slot `lane`, from `t0` to `t1` (`performance.now()` ms). */
  span(stage: string, lane: number, t0: number, t1: number): void {
    const pid = this.#pid(stage);
    this.#events.push({ name: stage, ph: "X", ts: this.#us(t0), dur: (t1 - t0) * 1000, pid, tid: lane });
  }

  /** Records the depth of the queue named `queue`. */
  counter(queue: string, depth: number): void {
    const pid = this.#pid("queues");
    this.#events.push({
      name: queue,
      ph: "C",
      ts: this.#us(performance.now()),
      pid,
      tid: 0,
      args: { depth },
    });
  }

  /** Number of events recorded. */
  get size(): number {
    return this.#events.length;
  }

  /** Writes every event recorded so far (synchronously, replacing the file). */
  write(): void {
    const meta: TraceEvent[] = [];
    for (const [name, pid] of this.#pids) {
      meta.push({ name: "process_name", ph: "M", ts: 0, pid, tid: 0, args: { name } });
    }
    const body = JSON.stringify({ traceEvents: [...meta, ...this.#events], displayTimeUnit: "ms" });
    Deno.writeTextFileSync(this.path, body);
  }

  #pid(name: string): number {
    let pid = this.#pids.get(name);
    if (pid === undefined) {
      pid = this.#pids.size + 1;
      this.#pids.set(name, pid);
    }
    return pid;
  }

  #us(ms: number): number {
    return this.#origin + ms * 1000;
  }
}
