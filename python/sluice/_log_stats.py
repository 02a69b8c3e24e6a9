"""``sluice.torch.log_stats``: a loader's figures written where trainers look, a TensorBoard ``SummaryWriter`` or
any object with ``add_scalar(tag, value, step)`` (W&B's TensorBoard bridge, a logger of one's own)."""
from __future__ import annotations

import time
import weakref
from typing import Any, Dict, Optional

#: Each loader's previous counters, for rates over the interval between two calls.
_previous: "weakref.WeakKeyDictionary[Any, Dict[str, Any]]" = weakref.WeakKeyDictionary()


def _tag(name: str) -> str:
    return name.strip("()").replace(" ", "_") or "stage"


def log_stats(writer: Any, loader: Any, step: int, prefix: str = "sluice") -> Dict[str, float]:
    """Writes ``loader``'s figures since the previous call to ``writer`` at ``step`` and returns them by tag:

    - ``{prefix}/data_wait_ms`` and ``…_max``: the data wait of the steps since the previous call (mean, longest),
      ``{prefix}/data_wait_fraction``: the share of that time the loop spent waiting for batches (0..1), and
      ``{prefix}/first_batch_ms``: the time to first batch of the epoch iterated last;
    - ``{prefix}/clips_per_sec``: clips delivered per second (the server's session);
    - per stage of the loader's pipeline, over the same interval: ``{prefix}/stage/<name>/items_per_sec`` and
      ``{prefix}/stage/<name>/busy`` (its busy fraction, 0..1);
    - ``{prefix}/bottleneck/<name>``: 1 for the stage the loader names its bottleneck, 0 for the others (and, for a
      writer with ``add_text``, the verdict as text when it changes).

    A figure with no value yet (no step since the previous call) is left out. Call it every N steps on the rank
    that logs (each rank has its own figures). One ``stats()`` request to the server per call.
    """
    s = loader.stats()
    now = time.perf_counter()
    out: Dict[str, float] = {}

    def put(tag: str, value: Optional[float]) -> None:
        if value is not None:
            out[f"{prefix}/{tag}"] = float(value)

    w = loader.data_waits.since_mark()
    put("data_wait_ms", w["mean_ms"])
    put("data_wait_ms_max", w["max_ms"])
    put("data_wait_fraction", w["fraction"])
    put("first_batch_ms", loader.data_waits.first_batch_ms)
    put("clips_per_sec", s["session"].get("clipsPerSec"))
    pipeline = (s.get("loader") or {}).get("pipeline") or {}
    stages = pipeline.get("stages", [])
    before = _previous.get(loader)
    seconds = None if before is None else now - before["t"]
    totals: Dict[str, Dict[str, float]] = {}
    for st in stages:
        name, t = _tag(st["name"]), st.get("totals", {})
        totals[name] = {k: float(t.get(k, 0)) for k in ("finished", "busyMs", "slotMs")}
        was = None if before is None else before["totals"].get(name)
        if was is None or not seconds:
            put(f"stage/{name}/items_per_sec", st.get("itemsPerSec"))
            put(f"stage/{name}/busy", st.get("utilization"))
        else:
            put(f"stage/{name}/items_per_sec", (totals[name]["finished"] - was["finished"]) / seconds)
            slot = totals[name]["slotMs"] - was["slotMs"]
            put(f"stage/{name}/busy", (totals[name]["busyMs"] - was["busyMs"]) / slot if slot > 0 else 0.0)
    bottleneck = pipeline.get("bottleneck")
    for st in stages:
        put(f"bottleneck/{_tag(st['name'])}", 1.0 if st["name"] == bottleneck else 0.0)
    for tag, value in out.items():
        writer.add_scalar(tag, value, step)
    verdict = bottleneck or "none stands out"
    if hasattr(writer, "add_text") and (before is None or before["verdict"] != verdict):
        writer.add_text(f"{prefix}/bottleneck", verdict, step)
    _previous[loader] = {"t": now, "totals": totals, "verdict": verdict}
    return out
