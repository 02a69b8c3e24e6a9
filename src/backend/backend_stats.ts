/**
 * The shapes of a backend's stats: what `BackendSource.stats()` returns (and `loader.stats().backend`), with the
 * child's own STATS payload. A leaf: a module that only reads them loads no process machinery.
 * @module
 */

/** What `BackendSource.stats()` returns. */
export interface BackendStats {
  /** The child's process id. */
  pid: number;
  /** `"running"` while the child is alive; `"exited"` after it ended (closed, crashed or failed). */
  state: "running" | "exited";
  /** Epochs completed (END frames received). */
  epochs: number;
  /** Items received. */
  items: number;
  /** Encoded bytes of the items received. */
  bytes: number;
  /** Item failures reported by the child (counted, not thrown). */
  failures: number;
  /** The same, per stage of the child's pipeline. */
  failuresByStage: Record<string, number>;
  /** Items received but not yet taken by the consumer; never above `bufferSize`. */
  buffered: number;
  /** Their encoded bytes. */
  bufferedBytes: number;
  /** The highest `buffered` seen. */
  peakBuffered: number;
  /** The highest `bufferedBytes` seen. */
  peakBufferedBytes: number;
  /** Bytes held for a frame still arriving. */
  partialFrameBytes: number;
  /** The child's own per-stage pipeline stats, as last relayed (null before the first STATS frame). */
  child: ChildStats | null;
  /** Milliseconds since the child's last frame (heartbeats included). */
  silentMs: number;
  /** True while the child has been silent for longer than `stallWarningMs`. */
  stalled: boolean;
  /** Times the child went silent for longer than `stallWarningMs`. */
  stalls: number;
}

/** The child's STATS payload. */
export interface ChildStats {
  /** The child pipeline's `stats()` (a `PipelineStats`), or null when the backend is a plain AsyncIterable. */
  pipeline: unknown;
  /** The child's epoch number. */
  epoch: number;
  /** ITEM frames the child has sent in total. */
  sent: number;
  /** Credits the child held. */
  credits: number;
}
