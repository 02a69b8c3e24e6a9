/**
 * The rows of `Pipeline.stats()`, computed from the stages' counters (cumulative over epochs) and the queues'
 * counters (each epoch has new queues; {@link QueueTotals} sums the epochs before the current one so that the
 * rows' `totals` run on across epochs), and the bottleneck named from them.
 * @module
 */

import { bottleneckIndex, type Load, loadScore } from "./bottleneck.ts";
import type { Stage } from "./stage.ts";
import type { QueueCounters, StageStats, StageTotals } from "./stats.ts";

/** Name of the consumer row in stats. */
export const CONSUMER = "(consumer)";

/** The queue counters that add up over epochs. */
type Additive = Pick<QueueCounters, "putWaitMs" | "getWaitMs" | "elapsedMs" | "itemMs">;

/** The counters of the queues of past epochs, summed per queue position. */
export class QueueTotals {
  readonly #past: Additive[] = [];

  /** Adds an epoch's queue counters (at its end or later: the next epoch's start). */
  add(queues: readonly QueueCounters[]): void {
    queues.forEach((c, i) => {
      const p = this.#past[i] ??= { putWaitMs: 0, getWaitMs: 0, elapsedMs: 0, itemMs: 0 };
      p.putWaitMs += c.putWaitMs;
      p.getWaitMs += c.getWaitMs;
      p.elapsedMs += c.elapsedMs;
      p.itemMs += c.itemMs;
    });
  }

  /** The counters of queue `i` over every epoch: the past ones plus `now`, its current ones. */
  total(i: number, now: QueueCounters | undefined): Additive {
    const p = this.#past[i];
    if (now === undefined) return p ?? { putWaitMs: 0, getWaitMs: 0, elapsedMs: 0, itemMs: 0 };
    if (p === undefined) return now;
    return {
      putWaitMs: now.putWaitMs + p.putWaitMs,
      getWaitMs: now.getWaitMs + p.getWaitMs,
      elapsedMs: now.elapsedMs + p.elapsedMs,
      itemMs: now.itemMs + p.itemMs,
    };
  }
}

/** What the rows are computed from, at one instant. */
export interface RowsInput {
  stages: readonly Stage[];
  /** The current (or last) epoch's queue counters: queue `i` is stage `i`'s output, the last one the sink. */
  queues: readonly QueueCounters[];
  totals: QueueTotals;
  /** Items handed to the consumer. */
  consumed: number;
  /** Clock time now, ms. */
  now: number;
  /** Pipeline running time over all epochs, ms. */
  elapsedMs: number;
  /** How long `stage` has had work running with no progress, once that counts as a stall; else 0. */
  stalledMs: (stage: Stage, now: number) => number;
}

/** One row per stage, then the consumer's. */
export function statsRows(x: RowsInput): StageStats[] {
  const rows = x.stages.map((s, i) => stageRow(x, s, i));
  rows.push(consumerRow(x));
  return rows;
}

/** The name of the likely bottleneck among `rows` (see `bottleneck.ts`), or null. */
export function bottleneckOf(rows: readonly StageStats[]): string | null {
  const b = bottleneckIndex(rows.map(rowLoad));
  return b < 0 ? null : rows[b].name;
}

function stageRow(x: RowsInput, s: Stage, i: number): StageStats {
  const input = x.queues[i - 1], output = x.queues[i];
  const now = x.now;
  const lat = s.latency;
  const busyMs = s.busyMs(now), slotMs = s.slotMs(now);
  const utilization = slotMs > 0 ? Math.min(1, busyMs / slotMs) : 0;
  const inputFill = input === undefined ? 1 : input.meanOccupancy / input.capacity;
  const blockedPutMs = output?.putWaitMs ?? 0;
  const blockedFraction = slotMs > 0 ? Math.min(1, blockedPutMs / slotMs) : 0;
  const totals: StageTotals = {
    finished: s.done + s.dropped + s.failed,
    busyMs,
    slotMs,
    blockedPutMs: x.totals.total(i, output).putWaitMs,
    inputItemMs: i === 0 ? 0 : x.totals.total(i - 1, input).itemMs,
  };
  return {
    name: s.name,
    kind: s.kind,
    concurrency: s.concurrency,
    maxConcurrency: s.maxConcurrency,
    auto: s.auto,
    bound: s.bound ?? null,
    ordered: s.ordered,
    tasksIn: s.tasksIn,
    done: s.done,
    dropped: s.dropped,
    failed: s.failed,
    cancelled: s.cancelled,
    inFlight: s.inFlight,
    held: s.held,
    itemsOut: s.itemsOut,
    p50Ms: lat.quantile(0.5),
    p90Ms: lat.quantile(0.9),
    p99Ms: lat.quantile(0.99),
    meanMs: lat.mean,
    utilization,
    input: input ?? null,
    blockedPutMs,
    blockedFraction,
    starvedMs: input?.getWaitMs ?? 0,
    itemsPerSec: rate(s.itemsOut, x.elapsedMs),
    pressure: loadScore({ busy: utilization, blocked: blockedFraction, inputFill }),
    stalledMs: x.stalledMs(s, now),
    stalls: s.stalls,
    totals,
  };
}

function consumerRow(x: RowsInput): StageStats {
  const last = x.queues.length - 1;
  const sink: QueueCounters | undefined = x.queues[last];
  const utilization = sink === undefined || sink.elapsedMs <= 0
    ? 0
    : Math.max(0, 1 - sink.getWaitMs / sink.elapsedMs);
  const inputFill = sink === undefined ? 0 : sink.meanOccupancy / sink.capacity;
  // The consumer's slot is the sink's lifetime; it is busy whenever it is not waiting for the next item.
  const total = x.totals.total(last, sink);
  return {
    name: CONSUMER,
    kind: "consumer",
    concurrency: 1,
    maxConcurrency: 1,
    auto: false,
    bound: null,
    ordered: true,
    tasksIn: x.consumed,
    done: x.consumed,
    dropped: 0,
    failed: 0,
    cancelled: 0,
    inFlight: 0,
    held: 0,
    itemsOut: x.consumed,
    p50Ms: 0,
    p90Ms: 0,
    p99Ms: 0,
    meanMs: 0,
    utilization,
    input: sink ?? null,
    blockedPutMs: 0,
    blockedFraction: 0,
    starvedMs: sink?.getWaitMs ?? 0,
    itemsPerSec: rate(x.consumed, x.elapsedMs),
    pressure: loadScore({ busy: utilization, blocked: 0, inputFill }),
    stalledMs: 0,
    stalls: 0,
    totals: {
      finished: x.consumed,
      busyMs: total.elapsedMs - total.getWaitMs,
      slotMs: total.elapsedMs,
      blockedPutMs: 0,
      inputItemMs: total.itemMs,
    },
  };
}

function rowLoad(r: StageStats): Load {
  return {
    busy: r.utilization,
    blocked: r.blockedFraction,
    inputFill: r.input === null ? 1 : r.input.meanOccupancy / r.input.capacity,
  };
}

function rate(n: number, ms: number): number {
  return ms > 0 ? n / (ms / 1000) : 0;
}
