"""Node mode (``sluice.Loader(..., node=True)``): the ranks of one machine, started as torchrun starts them (its
environment: Debian's torchrun does not start on Python 3.11), share one server. Each rank's batches are those
its own server gives (pixels, labels, clips), across epochs, ``set_epoch`` and a resume; the clips the sampler
deals to different ranks are demuxed once; one server, whatever the race; a rank killed mid-epoch or stalled
holds up no other; the server leaves with the last rank, leaving nothing behind."""
from __future__ import annotations

import json
import os
import signal
import socket as _socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

from conftest import CLIP, PY

RANK = str(Path(__file__).with_name("node_rank.py"))


def options(**extra: Any) -> Dict[str, Any]:
    o = dict(batch_size=2, num_frames=CLIP["numFrames"], width=CLIP["width"], height=CLIP["height"], seed=5,
             clips_per_video=4, slots=2)
    o.update(extra)
    return o


def torchrun_env(rank: int, world: int, node_dir: str, port: int = 29517) -> Dict[str, str]:
    return dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank),
                LOCAL_WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                SLUICE_NODE_DIR=node_dir, PYTHONPATH=str(PY))


def start_ranks(plans: List[Dict[str, Any]], node_dir: str, port: int = 29517,
                extra: Optional[Dict[str, str]] = None) -> List[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, RANK, json.dumps(p)],
                             env={**torchrun_env(r, len(plans), node_dir, port), **(extra or {})},
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for r, p in enumerate(plans)]


def results(procs: List[subprocess.Popen], timeout: float = 600) -> List[Dict[str, Any]]:
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=timeout)
        lines = [line for line in stdout.splitlines() if line.startswith("{")]
        assert lines, f"rank exited with {p.returncode} and no result:\n{stderr[-3000:]}"
        out.append(json.loads(lines[-1]))
    return out


def servers_of(sock_dir: str) -> List[int]:
    """Processes running a sluice server whose socket is in ``sock_dir`` (node servers name it in their config)."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{d}/cmdline").read_bytes()
            state = Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if b"serve/main.ts" in cmd and sock_dir.encode() in cmd and state != "Z":
            pids.append(int(d))
    return pids


def wait_gone(sock_dir: str, timeout: float = 20) -> None:
    """The node server leaves with its last rank: no process, and nothing left in its directory."""
    deadline = time.monotonic() + timeout
    while servers_of(sock_dir) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert servers_of(sock_dir) == [], "the node server outlived its last rank"
    left = os.listdir(sock_dir) if os.path.isdir(sock_dir) else []
    assert left == [], f"left in the socket directory: {left}"


def shm_names() -> set:
    return set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()


def test_node_ranks_get_their_own_servers_batches_sharing_one_server(dataset, tmp_path):
    """4 ranks, clips_per_video=4 (each video's clips dealt to different ranks): 2 epochs, then a resume in the
    third, byte for byte what each rank's own server gives, from one server that shares the ranks' clips."""
    shm = shm_names()
    plan = {"dataset": dataset, "options": options(), "epochs": 2, "resume_after": 1}
    node_dir = str(tmp_path / "sluice-node-a")
    own = results(start_ranks([dict(plan, node=False)] * 4, node_dir))
    got = results(start_ranks([dict(plan, node=True, gloo=True)] * 4, node_dir, port=29518))
    for r in range(4):
        assert got[r]["rank"] == r
        assert got[r]["batches"] == own[r]["batches"], f"rank {r}"
        assert len(got[r]["batches"]) == 3 * 6  # 12 videos × 4 clips / 4 ranks / batches of 2, 3 epochs
    # one server for all (the resumed loaders joined it again), not one per rank
    assert len({g["server"] for g in got}) == 1 and len({o["server"] for o in own}) == 4
    node = got[0]["stats"]["node"]
    assert node["cpuBudget"] == max(1, (os.cpu_count() or 1) - 4)
    assert node["shares"]["claimed"] > 0, node
    wait_gone(node_dir)
    assert shm_names() - shm == set()


def test_node_rank_killed_mid_epoch_others_finish(dataset, tmp_path):
    node_dir = str(tmp_path / "sluice-node-b")
    base = {"dataset": dataset, "options": options(), "epochs": 1, "node": True}
    own = results(start_ranks([dict(base, node=False)] * 3, node_dir, port=29519))
    procs = start_ranks([dict(base, die_after=1), base, base], node_dir, port=29520)
    got = results(procs)
    assert procs[0].returncode == -signal.SIGKILL
    for r in (1, 2):
        assert got[r]["batches"] == own[r]["batches"], f"rank {r}"
    assert got[0]["batches"] == own[0]["batches"][:1]
    wait_gone(node_dir)


def test_a_stalled_rank_holds_only_its_own_slots(dataset, tmp_path):
    """Rank 0 keeps both of its slots and stops asking; the others finish their epoch meanwhile."""
    node_dir = str(tmp_path / "sluice-node-c")
    go = str(tmp_path / "go")
    base = {"dataset": dataset, "options": options(), "epochs": 1, "node": True}
    own = results(start_ranks([dict(base, node=False)] * 3, node_dir, port=29521))
    procs = start_ranks([dict(base, pause_after=2, resume_when=go), base, base], node_dir, port=29522)
    got = results(procs[1:], timeout=300)  # they finish while rank 0 waits
    assert procs[0].poll() is None, "rank 0 should still be stalled"
    Path(go).touch()
    got = results(procs[:1]) + got
    for r in range(3):
        assert got[r]["batches"] == own[r]["batches"], f"rank {r}"
    wait_gone(node_dir)


def test_ranks_racing_to_start_get_one_server_and_a_stale_socket_is_replaced(dataset, tmp_path):
    node_dir = tmp_path / "sluice-node-d"
    node_dir.mkdir(mode=0o700)
    sys.path.insert(0, str(PY))
    from sluice import _node
    from sluice._loader import Loader

    from sluice._server import find_checkout, find_entry

    env = torchrun_env(0, 4, str(node_dir), port=29523)
    saved = dict(os.environ)
    os.environ.update(env)  # the key holds the job (MASTER_ADDR, MASTER_PORT) as the ranks see it
    try:
        config = Loader._server_config(dataset, options())
        key = _node.node_key(dict(config, node=True), str(find_entry(find_checkout())))
    finally:
        os.environ.clear()
        os.environ.update(saved)
    # a socket file nobody listens on (a server killed -9 leaves one)
    stale = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    stale.bind(str(node_dir / f"{key}.sock"))
    stale.close()
    # and a rank killed while it started the server: its pid file names a process that is no server
    (node_dir / f"{key}.sock.pid").write_text(str(os.getpid()))
    plan = {"dataset": dataset, "options": options(), "epochs": 1, "node": True}
    got = results(start_ranks([plan] * 4, str(node_dir), port=29523))
    assert len({g["server"] for g in got}) == 1
    wait_gone(str(node_dir))


def test_a_rank_killed_while_starting_the_server_leaves_it_to_the_next(dataset, tmp_path):
    """The rank that starts the server dies before it connects: the next rank joins that server (or, had it died
    too, starts one), never a second one."""
    node_dir = str(tmp_path / "sluice-node-e")
    plan = {"dataset": dataset, "options": options(), "epochs": 1, "node": True}
    first = start_ranks([plan], node_dir, port=29524)[0]
    deadline = time.monotonic() + 120
    while not (os.path.isdir(node_dir) and any(f.endswith(".pid") for f in os.listdir(node_dir))):
        assert time.monotonic() < deadline and first.poll() is None, "the first rank started no server"
        time.sleep(0.005)
    first.kill()  # while the server it started is starting
    first.communicate()
    started = servers_of(node_dir)
    assert len(started) == 1
    got = results(start_ranks([plan], node_dir, port=29524))
    assert got[0]["server"] == started[0]
    wait_gone(node_dir)
