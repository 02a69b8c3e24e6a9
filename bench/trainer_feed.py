#!/usr/bin/python3
"""Samples/s delivered into torch tensors inside the training process:

- sluice serve (``sluice.Loader``, CPU decode), backend "inprocess" and "subprocess";
- ``torch.utils.data.DataLoader(num_workers=2)`` over a PyAV ``Dataset`` that seeks and decodes the same clips
  (same videos, windows and order, taken from sluice's plan) to the same shape — checked to be the same frames
  (PSNR >= 35 dB against sluice's batches) before anything is timed;
- a Deno consumer iterating the same loader inside the sluice process (bench/fixtures/serve_consumer.ts): the
  serving overhead is sluice serve's clips/s against it.

Each is timed with no step (the feed's own rate), a simulated step (``--step-ms``, sleep: the GPU's time) and a
real one (the tiny 3D CNN of examples/train_r3d18.py, forward + backward on the CPU). Timing runs from the first
batch to the last over ``--epochs`` epochs (start-up excluded, the first batch's clips not counted); ``--repeat``
runs each that many times and reports the median. Ratios are within one run of this script: on a shared machine
trust them, not the absolute figures.

    /usr/bin/python3 bench/trainer_feed.py                    # synthetic dataset (made once in .cache/)
    /usr/bin/python3 bench/trainer_feed.py --quick            # a short run proving it works
    /usr/bin/python3 bench/trainer_feed.py --dataset DIR --json out.json
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

import av
import numpy as np
import torch
import torch.nn as nn
import torch.utils.data

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "examples"))
import sluice  # noqa: E402
from sluice._server import find_deno  # noqa: E402
from train_r3d18 import Tiny3d  # noqa: E402

DENO = find_deno(ROOT)


def make_dataset(root: Path, videos: int) -> str:
    d = root / f"videos_{videos}"
    if not d.exists():
        script = (f"import {{ makeSyntheticDataset }} from {json.dumps((ROOT / 'mod.ts').as_uri())};"
                  f"makeSyntheticDataset({json.dumps(str(d))}, {{ videos: {videos}, classes: 4, durationSec: 4, "
                  "width: 320, height: 240 });")
        print(f"making {videos} synthetic videos (320x240, 4 s) in {d} ...", file=sys.stderr, flush=True)
        subprocess.run([DENO, "eval", script], check=True, cwd=ROOT)
    return str(d)


# ---------------------------------------------------------------------------------------------- PyAV baseline


def decode_clip(path: str, start: float, end: float, frames: int, width: int, height: int) -> np.ndarray:
    """The first `frames` frames presented in [start, end), resized (bilinear) to RGB [T, H, W, 3]; a short clip
    is padded with its last frame (what sluice does)."""
    with av.open(path) as container:
        stream = container.streams.video[0]
        tb = stream.time_base
        container.seek(int(math.floor(start / tb)), stream=stream, backward=True, any_frame=False)
        out: List[np.ndarray] = []
        for frame in container.decode(stream):
            if frame.pts is None:
                continue
            t = float(frame.pts * tb)
            if t < start - 1e-6:
                continue
            if t >= end or len(out) == frames:
                break
            out.append(frame.to_ndarray(width=width, height=height, format="rgb24", interpolation="BILINEAR"))
    if not out:
        raise RuntimeError(f"{path}: no frame in [{start}, {end})")
    while len(out) < frames:
        out.append(out[-1])
    return np.stack(out)


class PyAVClips(torch.utils.data.Dataset):
    """The clips sluice planned, decoded with PyAV: item i is (uint8 [T, H, W, 3], label)."""

    def __init__(self, clips: List[Dict[str, Any]], frames: int, width: int, height: int) -> None:
        self.clips, self.frames, self.width, self.height = clips, frames, width, height

    def __len__(self) -> int:
        return len(self.clips)

    def __getitem__(self, i: int):
        c = self.clips[i]
        video = decode_clip(c["path"], c["start"], c["end"], self.frames, self.width, self.height)
        return torch.from_numpy(video), c["label"]


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return math.inf if mse == 0 else 10 * math.log10(255 * 255 / mse)


# ---------------------------------------------------------------------------------------------- timing


class Step:
    def __init__(self, kind: str, step_ms: float, classes: int = 4) -> None:
        self.kind = kind
        self.sleep = step_ms / 1000
        if kind == "tiny":
            torch.manual_seed(0)
            self.model = Tiny3d(classes)
            self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01)

    def __call__(self, video: torch.Tensor, labels: torch.Tensor) -> None:
        if self.kind == "sleep":
            time.sleep(self.sleep)
        elif self.kind == "tiny":
            x = video.permute(0, 4, 1, 2, 3).float().div_(255)  # [B, T, H, W, C] → [B, C, T, H, W]
            loss = nn.functional.cross_entropy(self.model(x), labels.long())
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()


def timed(batches, step: Step, epochs: int) -> float:
    """Clips/s from the first batch to the last (the first batch's clips not counted)."""
    t0, clips = None, 0
    for _ in range(epochs):
        for video, labels in batches():
            if t0 is None:
                t0 = time.perf_counter()
            else:
                clips += video.shape[0]
            step(video, labels)
    return clips / (time.perf_counter() - t0)


def run_sluice(args, backend: str, step: Step) -> float:
    with sluice.Loader(args.dataset, backend=backend, **args.loader_kw) as l:
        def batches():
            for b in l:
                yield b.video, b.labels
        return timed(batches, step, args.epochs)


def run_dataloader(args, clips: List[Dict[str, Any]], step: Step) -> float:
    ds = PyAVClips(clips, args.frames, args.width, args.height)
    per_epoch = len(clips) // args.epochs
    dl = torch.utils.data.DataLoader(ds, batch_size=args.batch_size, num_workers=args.workers, shuffle=False,
                                     persistent_workers=True)
    it = {"n": 0}

    def batches():  # one epoch = the next `per_epoch` clips of the plan (the DataLoader walks the whole list)
        for video, labels in inner:
            yield video, labels
            it["n"] += video.shape[0]
            if it["n"] % per_epoch == 0:
                return

    inner = iter(dl)
    rate = timed(batches, step, args.epochs)
    del inner, dl
    return rate


def run_deno(args, backend: str, step_ms: float) -> float:
    opts = {"dataset": os.path.abspath(args.dataset), "batchSize": args.batch_size, "backend": backend,
            "clip": {"numFrames": args.frames, "width": args.width, "height": args.height},
            "sampler": {"seed": args.seed, "clipsPerVideo": args.clips_per_video}}
    out = subprocess.run([DENO, "run", "-A", str(ROOT / "bench" / "fixtures" / "serve_consumer.ts"), json.dumps(opts),
                          str(args.epochs), str(step_ms)], check=True, capture_output=True, text=True, cwd=ROOT)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    return r["clips"] / r["seconds"]


# ---------------------------------------------------------------------------------------------- main


def plan_and_check(args) -> List[Dict[str, Any]]:
    """sluice's clips for `epochs` epochs, in order; checks PyAV decodes the first ones to the same frames.
    PyAV runs in a DataLoader worker only: this process forks workers later, and FFmpeg used here before a fork
    crashes the children (seen with PyAV 10)."""
    clips: List[Dict[str, Any]] = []
    mine: List[np.ndarray] = []
    with sluice.Loader(args.dataset, copy=True, **args.loader_kw) as l:
        for e in range(args.epochs):
            for b in l:
                for k, c in enumerate(b.clips):
                    clips.append({"path": c["path"], "start": c["start"], "end": c["end"], "label": c["label"]})
                    if len(mine) < args.check_clips:
                        mine.append(b.video[k].numpy().copy())
    check = torch.utils.data.DataLoader(PyAVClips(clips[: len(mine)], args.frames, args.width, args.height),
                                        batch_size=None, num_workers=1)
    worst = min(psnr(theirs.numpy(), ours) for (theirs, _), ours in zip(check, mine))
    if worst < 35:
        raise SystemExit(f"PyAV's frames differ from sluice's: worst clip PSNR {worst:.1f} dB < 35 dB")
    print(f"same clips, same frames: {len(mine)} clips compared, worst PSNR {worst:.1f} dB", file=sys.stderr)
    return clips


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", help="default: a synthetic dataset made once under .cache/trainer_feed")
    p.add_argument("--videos", type=int, default=32, help="synthetic videos (default 32)")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--frames", type=int, default=8)
    p.add_argument("--width", type=int, default=112)
    p.add_argument("--height", type=int, default=112)
    p.add_argument("--clips-per-video", type=int, default=4)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=2, help="DataLoader workers (default 2)")
    p.add_argument("--step-ms", type=float, default=50.0, help="simulated step, ms (default 50)")
    p.add_argument("--steps", default="none,sleep,tiny", help="step kinds to time (default none,sleep,tiny)")
    p.add_argument("--repeat", type=int, default=1, help="runs per configuration; the median is reported")
    p.add_argument("--check-clips", type=int, default=16, help="clips compared by PSNR before timing")
    p.add_argument("--quick", action="store_true", help="8 videos, 1 epoch, no repeat: proves the script works")
    p.add_argument("--json", help="write the results to this file")
    args = p.parse_args()
    if args.quick:
        args.videos, args.epochs, args.repeat, args.check_clips = 8, 1, 1, 8
    args.dataset = args.dataset or make_dataset(ROOT / ".cache" / "trainer_feed", args.videos)
    args.loader_kw = dict(batch_size=args.batch_size, num_frames=args.frames, width=args.width, height=args.height,
                          seed=args.seed, clips_per_video=args.clips_per_video)
    clips = plan_and_check(args)
    print(f"{len(clips)} clips over {args.epochs} epoch(s), batches of {args.batch_size} x {args.frames} frames "
          f"{args.width}x{args.height}; {os.cpu_count()} cores; torch {torch.__version__}, PyAV {av.__version__}",
          file=sys.stderr)
    results: Dict[str, Dict[str, float]] = {}
    kinds = [k for k in args.steps.split(",") if k]
    for kind in kinds:
        row: Dict[str, float] = {}
        configs = [
            ("sluice serve inprocess", lambda s: run_sluice(args, "inprocess", s)),
            ("sluice serve subprocess", lambda s: run_sluice(args, "subprocess", s)),
            (f"DataLoader({args.workers} workers)+PyAV", lambda s: run_dataloader(args, clips, s)),
        ]
        if kind != "tiny":
            ms = args.step_ms if kind == "sleep" else 0.0
            configs.append(("Deno consumer inprocess", lambda s, ms=ms: run_deno(args, "inprocess", ms)))
        for name, fn in configs:
            rates = [fn(Step(kind, args.step_ms)) for _ in range(args.repeat)]
            row[name] = statistics.median(rates)
            print(f"  step {kind:5s}  {name:32s} {row[name]:8.1f} clips/s", file=sys.stderr, flush=True)
        results[kind] = row
    base = f"DataLoader({args.workers} workers)+PyAV"
    print("\nclips/s delivered into torch tensors in the training process (median of "
          f"{args.repeat}); ratios against {base} and, for serving overhead, the Deno consumer:")
    print(f"{'step':6s} {'configuration':32s} {'clips/s':>9s} {'vs PyAV':>8s}")
    for kind, row in results.items():
        for name, rate in row.items():
            print(f"{kind:6s} {name:32s} {rate:9.1f} {rate / row[base]:7.2f}x")
        if "Deno consumer inprocess" in row:
            overhead = 1 - row["sluice serve inprocess"] / row["Deno consumer inprocess"]
            print(f"{kind:6s} serving overhead (inprocess): {overhead * 100:+.1f}% (target <= 5%)")
    if args.json:
        Path(args.json).write_text(json.dumps({"args": {k: v for k, v in vars(args).items() if k != "loader_kw"},
                                               "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
