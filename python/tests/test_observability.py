"""Data wait where trainers look: each batch's ``data_wait_ms`` is the time the loop spent asking for it (checked
against the time the test itself measures around ``next()``), ``loader.stats()`` and the server have them,
``sluice.torch.log_stats`` writes them with the per-stage rates and the bottleneck to a writer; the server's
Prometheus endpoint passes ``promtool check metrics`` and its counts are the loader's."""
from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import time
import urllib.request
from typing import Any, Dict, List, Tuple

import pytest

import sluice
import sluice.torch
from conftest import CLIP


def loader(dataset: str, **kw: Any) -> sluice.Loader:
    args = dict(batch_size=2, num_frames=CLIP["numFrames"], width=CLIP["width"], height=CLIP["height"], seed=7,
                concurrency={"decode": 1})
    args.update(kw)
    return sluice.Loader(dataset, **args)


class RecordingWriter:
    """What TensorBoard's SummaryWriter offers a logger: add_scalar (and add_text)."""

    def __init__(self) -> None:
        self.scalars: List[Tuple[str, float, int]] = []
        self.texts: List[Tuple[str, str, int]] = []

    def add_scalar(self, tag: str, value: float, step: int) -> None:
        self.scalars.append((tag, value, step))

    def add_text(self, tag: str, text: str, step: int) -> None:
        self.texts.append((tag, text, step))


def timed_epoch(l: sluice.Loader, pause: float = 0.0):
    """One epoch, timing each next() from outside: (batch waits, outside times, time from iter() to batch 0)."""
    waits, outside = [], []
    t_iter = time.perf_counter()
    it = iter(l)
    first = None
    while True:
        t0 = time.perf_counter()
        try:
            b = next(it)
        except StopIteration:
            break
        t1 = time.perf_counter()
        first = (t1 - t_iter) * 1000 if first is None else first
        outside.append((t1 - t0) * 1000)
        waits.append(b.data_wait_ms)
        del b
        time.sleep(pause)
    return waits, outside, first


def test_each_batch_says_how_long_the_loop_waited_and_stats_have_it(dataset):
    with loader(dataset) as l:
        waits, outside, first = timed_epoch(l, pause=0.02)
        assert len(waits) == len(l)
        for w, o in zip(waits, outside):
            # the wait is the time spent inside next(), less only the generator's own bookkeeping
            assert 0 <= w <= o + 0.5 and o - w < 50, (w, o)
        s = l.stats()
        dw = s["data_wait"]
        assert dw["steps"] == len(waits) and dw["rank"] == 0
        assert abs(dw["total_ms"] - sum(waits)) < 1e-6 and dw["max_ms"] == max(waits)
        assert waits[0] <= dw["first_batch_ms"] <= first + 0.5
        assert dw["p50_ms"] <= dw["p90_ms"] <= dw["p99_ms"] <= dw["max_ms"]
        # the waits reached the server with the stats request
        server = s["session"]["dataWait"]
        assert server["count"] == len(waits) and abs(server["sumMs"] - sum(waits)) < 1e-3
        assert "data wait (rank 0):" in str(s)


def test_log_stats_writes_waits_stage_rates_and_the_bottleneck(dataset):
    writer = RecordingWriter()
    with loader(dataset, clips_per_video=2) as l:
        it = iter(l)
        for _ in range(3):
            del _
            b = next(it)
            del b
        first = sluice.torch.log_stats(writer, l, step=3)
        for b in it:
            del b
        second = sluice.torch.log_stats(writer, l, step=6)
    tags = {t for t, _, _ in writer.scalars}
    for tag in ("sluice/data_wait_ms", "sluice/data_wait_ms_max", "sluice/data_wait_fraction", "sluice/first_batch_ms",
                "sluice/clips_per_sec", "sluice/stage/decode/items_per_sec", "sluice/stage/decode/busy",
                "sluice/bottleneck/decode"):
        assert tag in tags, tag
    assert {s for _, _, s in writer.scalars} == {3, 6}
    # the verdict as text: at the first call, then only when it changes
    assert writer.texts[0][::2] == ("sluice/bottleneck", 3) and len(writer.texts) <= 2
    assert {t for t, _, _ in writer.texts} == {"sluice/bottleneck"}
    assert 0 <= first["sluice/data_wait_fraction"] <= 1 and 0 <= second["sluice/data_wait_fraction"] <= 1
    assert sum(v for t, v in second.items() if t.startswith("sluice/bottleneck/")) <= 1
    assert second["sluice/stage/decode/items_per_sec"] > 0
    assert all(0 <= v <= 1.0001 for t, v in second.items() if t.endswith("/busy"))


def test_log_stats_with_tensorboards_summary_writer(dataset, tmp_path):
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as e:  # Debian packages no tensorboard
        pytest.skip(f"torch.utils.tensorboard is not available here ({e}); the recording writer stands in")
    writer = SummaryWriter(str(tmp_path))
    with loader(dataset) as l:
        for b in l:
            del b
        written = sluice.torch.log_stats(writer, l, step=1)
    writer.close()
    assert "sluice/data_wait_ms" in written and any(p.name.startswith("events.") for p in tmp_path.iterdir())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        assert r.headers["content-type"].startswith("text/plain; version=0.0.4")
        return r.read().decode()


def sample(text: str, name: str, **labels: str) -> float:
    want = ",".join(f'{k}="{v}"' for k, v in labels.items())
    m = re.search(rf"^{re.escape(name)}\{{{re.escape(want)}\}} (\S+)$", text, re.M)
    assert m, f"{name}{{{want}}} not in the metrics"
    return float(m.group(1))


def promtool(text: str) -> None:
    if shutil.which("promtool") is None:
        pytest.skip("promtool is not installed (Debian's prometheus package; scripts/setup.sh --dev installs it)")
    r = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_metrics_endpoint_passes_promtool_and_counts_what_the_loader_counts(dataset):
    port = free_port()
    with loader(dataset, metrics=f"127.0.0.1:{port}") as l:
        steps = 0
        for b in l:
            steps += 1
            del b
        s = l.stats()  # also carries the last waits to the server
        text = scrape(port)
    promtool(text)
    assert sample(text, "sluice_clips_delivered_total", rank="0") == s["loader"]["clips"]["total"]["delivered"] == 12
    assert sample(text, "sluice_clips_planned_total", rank="0") == 12
    assert sample(text, "sluice_data_wait_seconds_count", rank="0") == steps
    assert sample(text, "sluice_data_wait_seconds_bucket", rank="0", le="+Inf") == steps
    assert abs(sample(text, "sluice_data_wait_seconds_sum", rank="0") - s["data_wait"]["total_ms"] / 1000) < 1e-6
    assert sample(text, "sluice_stage_items_total", rank="0", stage="decode") == 12
    assert sample(text, "sluice_batches_sent_total", rank="0") == s["session"]["sent"]
    assert "# TYPE sluice_data_wait_seconds histogram" in text


def test_node_server_metrics_have_each_rank(dataset, tmp_path, monkeypatch):
    monkeypatch.setenv("SLUICE_NODE_DIR", str(tmp_path / "sluice-node-m"))
    port = free_port()
    kw = dict(node=True, world_size=2, metrics=f"127.0.0.1:{port}", cpu_budget=1, clips_per_video=2)
    with loader(dataset, rank=0, **kw) as a, loader(dataset, rank=1, **kw) as b:
        assert a.welcome["pid"] == b.welcome["pid"]
        for x, y in zip(a, b):
            del x, y
        a.stats(), b.stats()
        text = scrape(port)
    promtool(text)
    for rank in ("0", "1"):
        assert sample(text, "sluice_clips_delivered_total", rank=rank) == 12
        assert sample(text, "sluice_data_wait_seconds_count", rank=rank) == 6
    assert re.search(r"^sluice_node_cpu_budget 1$", text, re.M)
    assert re.search(r"^sluice_clients 2$", text, re.M)
