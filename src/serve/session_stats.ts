/**
 * A session's counters.
 * @module
 */

import type { SlotRingStats } from "../memory/slot_ring.ts";

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
   * it abandoned an epoch). The loader's `clips` stats count delivery the same way.
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
}
