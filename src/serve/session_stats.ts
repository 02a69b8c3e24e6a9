/**
 * A session's counters and the text of a `stats` reply: the session's line, then the loader's clip counts and
 * per-stage table(s) exactly as `sluice load` prints them (`stats_text.ts`), so a client shows them as they are.
 * @module
 */

import type { LoaderStats } from "../loader/loader.ts";
import { formatLoaderStats, loaderStatsParts } from "../loader/stats_text.ts";
import type { SlotRingStats } from "../memory/slot_ring.ts";
import type { StatsMessage } from "./protocol.ts";
import type { DataWaitStats } from "./data_wait.ts";
import type { NodeStats } from "./node_stats.ts";

/** Counters of one session. */
export interface SessionStats {
  /** The client's name from its hello. */
  client: string;
  /** The shard served: rank … */
  rank: number;
  /** … of this many. */
  worldSize: number;
  /** The epoch streaming now, or null. */
  epoch: number | null;
  /** Batches sent so far. */
  sent: number;
  /**
   * Batches delivered to the client's code so far: those sent, less those it released unused (in flight when
   * it abandoned an epoch) and, in the reply to a `stats` request that says what it took (`taken`), those it
   * has not taken yet. The loader's `clips` stats count delivery the same way.
   */
  batches: number;
  /** Clips of those batches. */
  clips: number;
  /**
   * Pixel bytes copied after decode on their way to the client: 0 when the loader has `slots` and decodes on
   * the CPU (decode Workers write into the slots the client maps); otherwise each batch's bytes, copied into
   * the session's slot. Includes the loader's own slot copies (`BatchSlots.copiedBytes`).
   */
  copiedBytes: number;
  /** Clips per second since the session's first epoch started. */
  clipsPerSec: number;
  /** The slot ring (null before the first batch). */
  ring: SlotRingStats | null;
  /** The data waits its client reported (`data_wait.ts`). */
  dataWait: DataWaitStats;
}

/**
 * The text of a `stats` reply for a session's counters and its loader's stats (null before `hello`), and a node
 * server's counters.
 */
export function statsText(session: SessionStats, loader: LoaderStats | null, node?: NodeStats): string {
  return formatSessionStats(session) + (node === undefined ? "" : `\n${formatNodeStats(node)}`) +
    (loader === null ? "\n(no loader yet)" : `\n${formatLoaderStats(loaderStatsParts(loader))}`);
}

/** The `stats` reply: the counters (a node server's too), and their text ({@link statsText}). */
export function statsReply(
  session: SessionStats,
  loader: LoaderStats | null,
  node?: NodeStats,
): StatsMessage {
  const stats = node === undefined ? { session, loader } : { session, loader, node };
  return { type: "stats", stats, text: statsText(session, loader, node) };
}

/** One line of a node server's counters. */
export function formatNodeStats(n: NodeStats): string {
  const s = n.shares;
  return `node: ${n.ranks} ranks on ${n.workers} of ${n.poolSize} Workers (cpu budget ${n.cpuBudget}); ` +
    `${s.claimed} clips demuxed for another rank (${s.servedPackets} handed over as packets), ${s.passes} ` +
    `passes for ${s.passClips} clips of several ranks`;
}

/** One line of a session's counters (the first line of a `stats` message's text). */
export function formatSessionStats(s: SessionStats): string {
  const ring = s.ring === null
    ? "no slots yet"
    : `${s.ring.inUse} of ${s.ring.slots} slots out, waited ${(s.ring.waitedMs / 1000).toFixed(2)} s for one`;
  const epoch = s.epoch ?? "none", rate = s.clipsPerSec.toFixed(1);
  return `session ${s.client} rank ${s.rank} of ${s.worldSize}, epoch ${epoch}: ${s.batches} batches ` +
    `(${s.sent} sent), ${s.clips} clips, ${rate} clips/s, ${s.copiedBytes} bytes copied; ${ring}`;
}
