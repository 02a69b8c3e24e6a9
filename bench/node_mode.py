#!/usr/bin/python3
"""Per-rank servers against one node server (issue 34), in one run: 1, 2 and 4 ranks on this machine, each rank a
process started with the environment torchrun sets (Debian's torchrun does not start on Python 3.11), each
iterating ``sluice.Loader`` batches as a trainer that does no work would; then the same with one rank 5× slower
than the others.

Workload: the ``sampler`` and ``rows`` shapes of ``bench/compare.ts`` (``bench/node_mode_set.ts``: 48 videos of
340×256 at keyint 30, 16 frames → 112×112, batches of 4; ``sampler`` with 4 clips per video, so a video's clips
are dealt to different ranks; ``rows`` with one manifest row per clip, 2–4 rows per video, shuffled). Per-rank
servers split the cores by ``LOCAL_WORLD_SIZE`` as they do under torchrun; the node server gets ``--cpu-budget``
Workers (default: every core, what one rank's own server uses, so the comparison is of the machinery, not of the
budget; the node's own default leaves each local rank a core).

Measured, between the end of the ranks' warm-up epochs and the end of their timed epochs (every rank waits for
the others at both ends): total clips/s; CPU seconds per clip of every process of the run (ranks and servers,
from /proc); the servers' peak memory (summed RSS, sampled every 0.2 s) and threads. The slow-rank run: rank 0
sleeps 4× the others' mean step time after each batch (so it takes its batches 5× slower) and runs until the
others finish; reported is the others' clips/s against theirs when no rank is slow, for each mode.

Output: a table of ratios to 1 rank's own server (and node mode to per-rank servers at the same rank count), with
what the node server shared (clips one rank's demux cut for another, passes decoding clips of several ranks),
printed and written to ``--out`` (markdown). Figures from a loaded machine say little: run it on a quiet one.

Run: ``/usr/bin/python3 bench/node_mode.py [--ranks 1,2,4] [--shapes sampler,rows] [--epochs 3] [--warmup 1]
[--videos 48] [--set gop30] [--cpu-budget N] [--slow-factor 5] [--out bench/NODE_MODE.md]``; a quick check of
the script itself: ``--videos 12 --epochs 1 --ranks 1,2``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

REPO = Path(__file__).resolve().parents[1]
DENO = os.environ.get("SLUICE_DENO") or str(REPO / "node_modules" / ".bin" / "deno")
TICK = os.sysconf("SC_CLK_TCK")


# ------------------------------------------------------------------------------------------ one rank (a child)

def rank_main(plan: Dict[str, Any]) -> None:
    """A rank: warm-up epochs, then timed epochs (or, slow, until told to stop), coordinated through files."""
    sys.path.insert(0, str(REPO / "python"))
    import sluice

    work = Path(plan["work"])
    rank = int(os.environ["RANK"])

    def wait_for(name: str) -> None:
        while not (work / name).exists():
            time.sleep(0.005)

    loader = sluice.Loader(node=plan["node"], **plan["options"])
    epoch = 0
    for _ in range(plan["warmup"]):
        loader.set_epoch(epoch)
        for b in loader:
            del b
        epoch += 1
    (work / f"warm.{rank}").touch()
    wait_for("go")
    clips = steps = 0
    t0 = time.perf_counter()
    slow = plan.get("sleep", 0.0) if rank == 0 else 0.0
    done = False
    while not done:
        loader.set_epoch(epoch)
        for b in loader:
            clips += len(b)
            steps += 1
            del b
            if slow:
                time.sleep(slow)
                if (work / "stop").exists():
                    break
        epoch += 1
        done = (work / "stop").exists() if slow else epoch >= plan["warmup"] + plan["epochs"]
    elapsed = time.perf_counter() - t0
    shares = loader.stats().get("node", {}).get("shares") if plan["node"] else None
    (work / f"done.{rank}").write_text(json.dumps({"rank": rank, "clips": clips, "steps": steps,
                                                   "seconds": elapsed, "shares": shares}))
    wait_for("stop")
    loader.close()


# ------------------------------------------------------------------------------------------ the process tree

def tree(root: int) -> List[int]:
    """``root``'s descendants (a node server stays one: it is its starting rank's child)."""
    kids: Dict[int, List[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                ppid = int(Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(d))
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        for k in kids.get(p, []):
            out.append(k)
            todo.append(k)
    return out


def cpu_seconds(pids: List[int]) -> Dict[int, float]:
    out = {}
    for p in pids:
        try:
            f = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            out[p] = (int(f[11]) + int(f[12])) / TICK
        except (OSError, IndexError, ValueError):
            pass
    return out


def is_server(pid: int) -> bool:
    try:
        return b"serve/main.ts" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def server_memory(pids: List[int]) -> tuple:
    """(summed RSS in bytes, threads) of the server processes among ``pids``."""
    rss = threads = 0
    for p in pids:
        if not is_server(p):
            continue
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    rss += int(line.split()[1]) * 1024
                elif line.startswith("Threads:"):
                    threads += int(line.split()[1])
        except OSError:
            pass
    return rss, threads


# ------------------------------------------------------------------------------------------ one run

def run(options: Dict[str, Any], ranks: int, node: bool, args: argparse.Namespace,
        sleep: float = 0.0) -> Dict[str, Any]:
    """``ranks`` rank processes over ``options``; see the module docs. Returns the window's figures."""
    work = Path(tempfile.mkdtemp(prefix="sluice-node-bench-"))
    node_dir = work / "sluice-node"
    opts = dict(options)
    if node:
        opts["cpu_budget"] = args.cpu_budget
    plan = {"work": str(work), "node": node, "options": opts, "warmup": args.warmup, "epochs": args.epochs,
            "sleep": sleep}
    procs = []
    port = 29600 + os.getpid() % 1000  # one job: every rank the same (it is part of the node server's key)
    for r in range(ranks):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(ranks), LOCAL_RANK=str(r), LOCAL_WORLD_SIZE=str(ranks),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), SLUICE_NODE_DIR=str(node_dir))
        procs.append(subprocess.Popen([sys.executable, __file__, "--as-rank", json.dumps(plan)], env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
    errs: List[str] = []
    for p in procs:
        threading.Thread(target=lambda p=p: errs.append(p.stderr.read()), daemon=True).start()

    def all_exist(prefix: str, which: range) -> bool:
        return all((work / f"{prefix}.{r}").exists() for r in which)

    def check_alive() -> None:
        for p in procs:
            if p.poll() is not None and p.returncode != 0:
                time.sleep(0.3)
                raise SystemExit(f"a rank failed (status {p.returncode}):\n" + "\n".join(e[-3000:] for e in errs))

    while not all_exist("warm", range(ranks)):
        check_alive()
        time.sleep(0.02)
    me = os.getpid()
    pids = tree(me)
    cpu0 = cpu_seconds(pids)
    t0 = time.perf_counter()
    (work / "go").touch()
    timed = range(1 if sleep else 0, ranks)  # the slow rank runs until the others are done
    peak_rss = peak_threads = 0
    while not all_exist("done", timed):
        check_alive()
        pids = tree(me)
        rss, threads = server_memory(pids)
        peak_rss, peak_threads = max(peak_rss, rss), max(peak_threads, threads)
        time.sleep(0.2)
    wall = time.perf_counter() - t0
    cpu1 = cpu_seconds(tree(me))
    (work / "stop").touch()
    for p in procs:
        p.wait(120)
    done = [json.loads((work / f"done.{r}").read_text()) for r in range(ranks)]
    clips = sum(d["clips"] for d in done if d["rank"] in timed)
    cpu = sum(c - cpu0.get(p, 0.0) for p, c in cpu1.items())
    steps = [d["seconds"] / d["steps"] for d in done if d["rank"] in timed and d["steps"]]
    shares = max((d["shares"] for d in done if d.get("shares")), key=lambda x: x["claimed"], default=None)
    subprocess.run(["rm", "-rf", str(work)])
    return {"ranks": ranks, "node": node, "clips": clips, "wall": wall, "clips_per_sec": clips / wall,
            "cpu_per_clip": cpu / clips if clips else float("nan"), "peak_rss": peak_rss,
            "threads": peak_threads, "step_s": sum(steps) / len(steps) if steps else 0.0, "shares": shares}


# ------------------------------------------------------------------------------------------ the report

def table(rows: List[List[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    line = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"  # noqa: E731
    return "\n".join([line(rows[0]), "| " + " | ".join("-" * w for w in widths) + " |", *map(line, rows[1:])])


def shared(s: Optional[Dict[str, Any]]) -> str:
    """The node's sharing since it started (warm-up included): clips another rank's demux cut, shared passes."""
    return "-" if not s else f"{s['claimed']} demuxed for another rank, {s['passes']} passes of {s['passClips']}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--as-rank")
    ap.add_argument("--ranks", default="1,2,4")
    ap.add_argument("--shapes", default="sampler,rows")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--videos", type=int, default=48)
    ap.add_argument("--set", default="gop30")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cpu-budget", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--slow-factor", type=float, default=5.0)
    ap.add_argument("--out", default=str(REPO / "bench" / "NODE_MODE.md"))
    args = ap.parse_args()
    if args.as_rank:
        return rank_main(json.loads(args.as_rank))
    made = subprocess.run([DENO, "run", "-A", str(REPO / "bench" / "node_mode_set.ts"), "--set", args.set,
                           "--videos", str(args.videos), "--seed", str(args.seed)], check=True, text=True,
                          stdout=subprocess.PIPE)
    workload = json.loads(made.stdout.strip().splitlines()[-1])
    counts = [int(x) for x in args.ranks.split(",")]
    load0 = Path("/proc/loadavg").read_text().split()[:3]
    started = time.strftime("%Y-%m-%d %H:%M:%S")
    report = [
        "# Per-rank servers against one node server",
        "",
        f"`bench/node_mode.py` on {os.cpu_count()} cores, {started}; {args.videos} videos ({args.set}), 16 frames "
        f"→ 112², batches of 4; {args.warmup} warm-up and {args.epochs} timed epochs per rank; node cpu budget "
        f"{args.cpu_budget}; load average before {' '.join(load0)}.",
        "",
    ]
    for shape in args.shapes.split(","):
        options = workload["shapes"][shape]
        results: Dict[tuple, Dict[str, Any]] = {}
        for n in counts:
            for node in (False, True):
                print(f"{shape}: {n} rank(s), {'node server' if node else 'per-rank servers'} …", file=sys.stderr)
                results[(n, node)] = run(options, n, node, args)
        base = results[(counts[0], False)]
        rows = [["ranks", "servers", "clips/s", "× 1 rank", "× per-rank", "CPU ms/clip", "× 1 rank", "× per-rank",
                 "server RSS MiB", "server threads", "shared clips"]]
        for n in counts:
            for node in (False, True):
                r, own = results[(n, node)], results[(n, False)]
                rows.append([str(n), "one node server" if node else "one per rank", f"{r['clips_per_sec']:.1f}",
                             f"{r['clips_per_sec'] / base['clips_per_sec']:.2f}",
                             f"{r['clips_per_sec'] / own['clips_per_sec']:.2f}", f"{1000 * r['cpu_per_clip']:.1f}",
                             f"{r['cpu_per_clip'] / base['cpu_per_clip']:.2f}",
                             f"{r['cpu_per_clip'] / own['cpu_per_clip']:.2f}", f"{r['peak_rss'] / 2 ** 20:.0f}",
                             str(r["threads"]), shared(r["shares"])])
        title = {"sampler": f"sampler: {options['sampler'].get('clips_per_video')} clips per video",
                 "rows": "rows: a manifest row per clip, shuffled"}.get(shape, shape)
        report += [f"## {title}", "", table(rows), ""]
        # one rank slow: the others' clips/s against theirs when none is
        n = counts[-1]
        if n >= 2:
            slow_rows = [["servers", "others' clips/s, none slow", "others' clips/s, rank 0 slow", "ratio"]]
            for node in (False, True):
                normal = results[(n, node)]
                sleep = (args.slow_factor - 1) * normal["step_s"]
                print(f"{shape}: {n} ranks, rank 0 {args.slow_factor:g}× slower, "
                      f"{'node server' if node else 'per-rank servers'} …", file=sys.stderr)
                slow = run(options, n, node, args, sleep=sleep)
                others = normal["clips_per_sec"] * (n - 1) / n
                slow_rows.append(["one node server" if node else "one per rank", f"{others:.1f}",
                                  f"{slow['clips_per_sec']:.1f}", f"{slow['clips_per_sec'] / others:.2f}"])
            report += [f"{n} ranks, rank 0 {args.slow_factor:g}× slower than the others (it sleeps "
                       f"{args.slow_factor - 1:g}× their step time after each batch); 'none slow' is {n - 1}/{n} of the "
                       "run above:", "", table(slow_rows), ""]
    report += [f"Load average after: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}.", ""]
    text = "\n".join(report)
    print(text)
    Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
