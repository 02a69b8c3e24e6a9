"""One rank of a node-mode test (python/tests/test_node.py), started with the environment torchrun sets (RANK,
WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT). Argument: a JSON plan:

- ``dataset``, ``options`` (``sluice.Loader`` keywords), ``node`` (bool);
- ``epochs``: whole epochs to run first (epoch 0, 1, …);
- ``resume_after``: then, in the next epoch (by ``set_epoch``), take this many batches, save ``state_dict()``,
  close, and run the rest of that epoch on a new loader from the state (omit to skip);
- ``die_after``: kill this process (SIGKILL) after taking this many batches of epoch 0 (holding them);
- ``pause_after`` and ``resume_when``: after this many batches of epoch 0, keep them and wait until the file
  ``resume_when`` exists (a stalled trainer), then go on;
- ``gloo``: join a gloo process group first (MASTER_ADDR/MASTER_PORT) and meet the others at a barrier.

Prints one JSON line: ``rank``, ``server`` (the server's pid from its welcome), ``batches`` (epoch, index, pixels'
SHA-256, labels, clips' path and start), ``stats`` (the last loader's stats, ``node`` included in node mode).
"""
from __future__ import annotations

import hashlib
import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import sluice  # noqa: E402


def record(b) -> dict:
    v = b.video
    data = v.to_bytes() if hasattr(v, "to_bytes") else v.contiguous().numpy().tobytes()  # GPU slots: the double's
    return {"epoch": b.epoch, "index": b.index, "sha": hashlib.sha256(data).hexdigest(),
            "labels": b.labels.tolist(), "clips": [[c["path"], c["start"]] for c in b.clips],
            "device": getattr(v, "device", None) if hasattr(v, "to_bytes") else None}


def main() -> None:
    plan = json.loads(sys.argv[1])
    if plan.get("gloo"):
        import torch.distributed as dist

        dist.init_process_group("gloo", rank=int(os.environ["RANK"]), world_size=int(os.environ["WORLD_SIZE"]))
        dist.barrier()
    make = lambda: sluice.Loader(plan["dataset"], node=plan["node"], **plan["options"])  # noqa: E731
    out = []
    loader = make()
    server = loader.welcome["pid"]
    held = []
    for epoch in range(plan.get("epochs", 1)):
        loader.set_epoch(epoch)
        for i, b in enumerate(loader):
            out.append(record(b))
            if epoch == 0 and plan.get("die_after") == i + 1:
                print(json.dumps({"rank": loader.rank, "server": server, "batches": out}), flush=True)
                os.kill(os.getpid(), signal.SIGKILL)
            if epoch == 0 and plan.get("pause_after") == i + 1:
                held.append(b)
                while not os.path.exists(plan["resume_when"]):
                    time.sleep(0.05)
                held.clear()
            elif epoch == 0 and plan.get("pause_after", 0) > i + 1:
                held.append(b)
            del b
        held.clear()
    if "resume_after" in plan:
        epoch = plan.get("epochs", 1)
        loader.set_epoch(epoch)
        it = iter(loader)
        for _ in range(plan["resume_after"]):
            out.append(record(next(it)))
        state = loader.state_dict()
        del it
        loader.close()
        loader = make()
        loader.load_state_dict(state)
        for b in loader:
            out.append(record(b))
            del b
    stats = loader.stats()
    loader.close()
    print(json.dumps({"rank": int(os.environ.get("RANK", "0")), "server": server, "batches": out, "stats": stats}),
          flush=True)


if __name__ == "__main__":
    main()
