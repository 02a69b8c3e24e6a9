"""How long the training loop waited for its batches: each step's data wait, measured where the trainer feels it
(from asking the loader for the next batch to having it), and each epoch's time to first batch.

:class:`DataWaits` keeps them for :meth:`sluice.Loader.stats` (``data_wait``) and ``batch.data_wait_ms``, and
queues them for the server (``waits`` on the next ``release`` or ``stats`` message: the server's Prometheus
histogram ``sluice_data_wait_seconds``, docs/serving.md); :func:`sluice.torch.log_stats` writes them to a logger.
"""
from __future__ import annotations

import collections
import time
from typing import Any, Deque, Dict, List, Optional

#: Steps the percentiles are taken over (the most recent).
RECENT = 1024


def _percentile(sorted_ms: List[float], q: float) -> Optional[float]:
    if not sorted_ms:
        return None
    k = min(len(sorted_ms) - 1, max(0, int(round(q * (len(sorted_ms) - 1)))))
    return sorted_ms[k]


class DataWaits:
    """One rank's data waits (milliseconds); see the module docs."""

    def __init__(self, rank: int) -> None:
        self.rank = rank
        self.steps = 0
        self.total_ms = 0.0
        self.max_ms = 0.0
        self.last_ms: Optional[float] = None
        #: The time to first batch of the epoch iterated last (from ``iter(loader)`` to its first batch).
        self.first_batch_ms: Optional[float] = None
        self._recent: Deque[float] = collections.deque(maxlen=RECENT)
        #: Waits not yet told to the server (the session sends them with its next release or stats request).
        self.unreported: List[float] = []
        self._log_mark = (0, 0.0, 0.0, time.perf_counter())  # steps, total, max since, when: for since_mark()

    def record(self, ms: float) -> None:
        """Adds one step's wait."""
        self.steps += 1
        self.total_ms += ms
        self.max_ms = max(self.max_ms, ms)
        self.last_ms = ms
        self._recent.append(ms)
        if len(self.unreported) < 4 * RECENT:  # a server that never hears from us keeps this bounded
            self.unreported.append(ms)
        steps, total, _, when = self._log_mark
        self._log_mark = (steps, total, max(self._log_mark[2], ms), when)

    def summary(self) -> Dict[str, Any]:
        """Every figure: ``steps``, ``last_ms``, ``mean_ms``, ``p50_ms``, ``p90_ms``, ``p99_ms`` (over the last
        1024 steps), ``max_ms``, ``total_ms``, ``first_batch_ms`` (None before any)."""
        recent = sorted(self._recent)
        return {
            "rank": self.rank,
            "steps": self.steps,
            "last_ms": self.last_ms,
            "mean_ms": self.total_ms / self.steps if self.steps else None,
            "p50_ms": _percentile(recent, 0.5),
            "p90_ms": _percentile(recent, 0.9),
            "p99_ms": _percentile(recent, 0.99),
            "max_ms": self.max_ms if self.steps else None,
            "total_ms": self.total_ms,
            "first_batch_ms": self.first_batch_ms,
        }

    def since_mark(self) -> Dict[str, Any]:
        """The steps since the previous call (a logger's interval): ``steps``, ``mean_ms``, ``max_ms``, and
        ``fraction``, the share of the interval's wall time spent waiting (0..1); then starts a new interval."""
        steps0, total0, max_ms, when = self._log_mark
        now = time.perf_counter()
        steps, waited = self.steps - steps0, self.total_ms - total0
        wall_ms = (now - when) * 1000
        self._log_mark = (self.steps, self.total_ms, 0.0, now)
        return {
            "steps": steps,
            "mean_ms": waited / steps if steps else None,
            "max_ms": max_ms if steps else None,
            "fraction": min(1.0, waited / wall_ms) if wall_ms > 0 else None,
        }

    def text(self) -> str:
        """One line, as ``print(loader.stats())`` shows it."""
        s = self.summary()
        if not s["steps"]:
            return f"data wait (rank {self.rank}): no step yet"
        first = "" if s["first_batch_ms"] is None else f"; first batch of the epoch {s['first_batch_ms']:.1f} ms"
        return (f"data wait (rank {self.rank}): {s['steps']} steps, mean {s['mean_ms']:.1f} ms, p50 "
                f"{s['p50_ms']:.1f}, p90 {s['p90_ms']:.1f}, p99 {s['p99_ms']:.1f}, max {s['max_ms']:.1f} ms{first}")
