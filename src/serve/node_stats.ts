/**
 * The counters of a node server (`node_hub.ts`), below the modules that report them (sessions' `stats` replies,
 * the server's stats, its metrics), so that none of them imports the hub.
 * @module
 */

import type { LaneShareStats } from "../loader/front/lane_share.ts";

/** The node's counters (`stats.node` of a node server's `stats` replies, and its metrics). */
export interface NodeStats {
  /** Decode Workers the node's CPU budget allows. */
  cpuBudget: number;
  /** The pool's size now (the budget, plus NVDEC ranks' engines). */
  poolSize: number;
  /** Workers running now. */
  workers: number;
  /** Ranks (lanes) served now. */
  ranks: number;
  /** Clips shared across ranks (`src/loader/front/lane_share.ts`). */
  shares: LaneShareStats;
}
