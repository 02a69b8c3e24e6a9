"""Ranks: four clients of one server, and four torchrun-style processes each with its own server, get disjoint
shards that together cover the dataset, epoch after epoch."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading

import sluice
from sluice._server import ServerProcess
from conftest import CLIP, PY


def check_shards(shards, videos: int) -> None:
    flat = [p for s in shards for p in s]
    assert len(flat) == videos, "every rank yields its share"
    assert len(set(flat)) == videos, "shards overlap"
    assert all(len(s) == videos // len(shards) for s in shards)


def test_four_concurrent_clients_of_one_server_get_disjoint_covering_shards(dataset):
    server = ServerProcess({"slots": 2, "loader": {"dataset": dataset, "batchSize": 2, "clip": CLIP,
                                                   "sampler": {"seed": 3}}})
    try:
        results = {}
        errors = []

        def rank(r: int) -> None:
            try:
                with sluice.Loader(socket=server.socket, rank=r, world_size=4) as l:
                    assert (l.rank, l.world_size) == (r, 4)
                    results[r] = [[c["path"] for b in l for c in b.clips] for _ in range(2)]
            except Exception as e:  # surfaced below
                errors.append(e)

        threads = [threading.Thread(target=rank, args=(r,)) for r in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        assert not errors, errors
        for epoch in range(2):
            check_shards([results[r][epoch] for r in range(4)], 12)
        assert results[0][0] != results[0][1], "each epoch reshuffles"
    finally:
        server.stop()


RANK_SCRIPT = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, {py!r})
    import sluice
    with sluice.Loader({dataset!r}, batch_size=3, num_frames=4, width=32, height=32, seed=5) as l:
        out = []
        for epoch in range(2):
            l.set_epoch(epoch)
            out.append([c["path"] for b in l for c in b.clips])
        print(json.dumps({{"rank": l.rank, "world": l.world_size, "shards": out}}))
""")


def test_torchrun_environment_shards_with_no_extra_code(dataset):
    procs = []
    for r in range(4):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE="4", LOCAL_RANK=str(r), LOCAL_WORLD_SIZE="4")
        procs.append(subprocess.Popen([sys.executable, "-c", RANK_SCRIPT.format(py=str(PY), dataset=dataset)],
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True))
    outs = [json.loads(p.communicate(timeout=300)[0]) for p in procs]
    assert [o["rank"] for o in outs] == [0, 1, 2, 3] and all(o["world"] == 4 for o in outs)
    for epoch in range(2):
        check_shards([o["shards"][epoch] for o in outs], 12)
