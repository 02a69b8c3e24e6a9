#!/usr/bin/python3
"""Train a video classifier on sluice batches: torchvision's R3D-18 (the model of the production study sluice
learns from), or ``--model tiny``, a small 3D CNN that learns the synthetic dataset's labels in a few minutes on
two CPU cores — proof that the right labels reach the trainer with the right frames.

    /usr/bin/python3 examples/train_r3d18.py --model tiny          # synthetic dataset, held-out accuracy
    /usr/bin/python3 examples/train_r3d18.py --steps 3 --batch-size 2 --frames 8   # R3D-18 (slow on a CPU)
    /usr/bin/python3 examples/train_r3d18.py --train data/train.csv --val data/val.csv --classes 400

Every step prints its time and the part of it spent waiting for data. Without ``--train``, a synthetic dataset
(sluice's labelled videos, ``makeSyntheticDataset``) is made once under ``.cache/train_demo``: 48 videos of 4 s
in 4 classes, 36 for training and 12 held out (different videos: different textures and motion). Under
torchrun, each rank trains on its own shard (sluice.Loader reads RANK and WORLD_SIZE); this script does not set
up DDP itself.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import torch
import torch.nn as nn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
import sluice  # noqa: E402
from sluice._server import find_checkout, find_deno  # noqa: E402

KINETICS_MEAN = (0.43216, 0.394666, 0.37645)
KINETICS_STD = (0.22803, 0.22145, 0.216989)


def synthetic_split(root: Path, videos: int = 48, classes: int = 4, held_out: int = 12) -> tuple:
    """Makes (once) a synthetic dataset and its train / held-out manifests; returns their paths."""
    data = root / "videos"
    train, val = root / "train.csv", root / "val.csv"
    if not (train.exists() and val.exists()):
        deno = find_deno(find_checkout())
        script = (f"import {{ makeSyntheticDataset }} from {json.dumps((ROOT / 'mod.ts').as_uri())};"
                  f"console.log(JSON.stringify(makeSyntheticDataset({json.dumps(str(data))}, "
                  f"{{ videos: {videos}, classes: {classes}, durationSec: 4, width: 160, height: 120 }})));")
        print(f"making {videos} synthetic videos in {data} ...", flush=True)
        paths = json.loads(subprocess.run([deno, "eval", script], check=True, capture_output=True, text=True,
                                          cwd=ROOT).stdout)
        # video n has label n mod classes: the last `held_out` videos cover every class
        rows = [f"{p},{n % classes}\n" for n, p in enumerate(paths)]
        train.write_text("path,label\n" + "".join(rows[: videos - held_out]))
        val.write_text("path,label\n" + "".join(rows[videos - held_out:]))
    return str(train), str(val)


class Tiny3d(nn.Module):
    """Two 3D convolutions, then a linear layer over a 4x8 spatial grid (where the synthetic videos draw their
    label)."""

    def __init__(self, classes: int) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv3d(3, 16, (1, 5, 5), stride=(1, 2, 2), padding=(0, 2, 2)), nn.BatchNorm3d(16), nn.ReLU(),
            nn.Conv3d(16, 32, 3, stride=(1, 2, 2), padding=1), nn.BatchNorm3d(32), nn.ReLU(),
            nn.AdaptiveAvgPool3d((1, 4, 8)),
        )
        self.head = nn.Linear(32 * 4 * 8, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).flatten(1))


def build_model(name: str, classes: int) -> nn.Module:
    if name == "tiny":
        return Tiny3d(classes)
    from torchvision.models.video import r3d_18

    return r3d_18(num_classes=classes)  # weights=None: trained from scratch (no download)


def to_input(video: torch.Tensor, model: str, device: torch.device) -> torch.Tensor:
    """uint8 [B, 3, T, H, W] → float on `device`, scaled (tiny) or normalised like Kinetics (R3D-18)."""
    x = video.to(device, non_blocking=True).float().div_(255)
    if model != "tiny":
        mean = torch.tensor(KINETICS_MEAN, device=device).view(1, 3, 1, 1, 1)
        std = torch.tensor(KINETICS_STD, device=device).view(1, 3, 1, 1, 1)
        x = (x - mean) / std
    return x


def evaluate(model: nn.Module, loader: sluice.Loader, args, device: torch.device) -> float:
    model.eval()
    right = total = 0
    with torch.no_grad():
        for batch in loader:
            pred = model(to_input(batch.video, args.model, device)).argmax(1).cpu()
            right += int((pred == batch.labels).sum())
            total += len(batch.labels)
    model.train()
    return right / max(total, 1)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", choices=["r3d18", "tiny"], default="r3d18")
    p.add_argument("--train", help="training dataset (directory tree or manifest); default: synthetic")
    p.add_argument("--val", help="held-out dataset; default: synthetic")
    p.add_argument("--classes", type=int, default=4)
    p.add_argument("--epochs", type=int, default=None, help="default: 6 (tiny), 1 (r3d18)")
    p.add_argument("--steps", type=int, default=None, help="stop after this many steps")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--frames", type=int, default=None, help="default: 8 (tiny), 16 (r3d18)")
    p.add_argument("--size", type=int, nargs=2, metavar=("W", "H"), default=None,
                   help="default: 64 48 (tiny), 112 112 (r3d18)")
    p.add_argument("--clips-per-video", type=int, default=4)
    p.add_argument("--lr", type=float, default=None, help="default: 3e-3 (tiny), 1e-3 (r3d18)")
    p.add_argument("--backend", choices=["inprocess", "subprocess"], default="inprocess")
    p.add_argument("--decode", choices=["cpu", "nvdec", "auto"], default="cpu")
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    p.add_argument("--json", help="write the run's summary to this file")
    args = p.parse_args()
    tiny = args.model == "tiny"
    epochs = args.epochs if args.epochs is not None else (6 if tiny else 1)
    frames = args.frames or (8 if tiny else 16)
    width, height = args.size or ((64, 48) if tiny else (112, 112))
    lr = args.lr or (3e-3 if tiny else 1e-3)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.train is None:
        args.train, val = synthetic_split(ROOT / ".cache" / "train_demo", classes=args.classes)
        args.val = args.val or val
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0"))) if torch.cuda.is_available() \
        else torch.device("cpu")
    torch.manual_seed(0)
    model = build_model(args.model, args.classes).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()
    common = dict(batch_size=args.batch_size, num_frames=frames, width=width, height=height, layout="BCTHW",
                  backend=args.backend, decode=args.decode)
    t_start = time.perf_counter()
    summary = {"model": args.model, "epochs": [], "steps": 0, "data_wait_s": 0.0, "step_s": 0.0}
    with sluice.Loader(args.train, clips_per_video=args.clips_per_video, seed=0, **common) as train:
        print(f"{args.model}: {len(train)} batches of {args.batch_size} clips x {frames} frames {width}x{height} "
              f"per epoch, {epochs} epoch(s), device {device}", flush=True)
        step = 0
        for epoch in range(epochs):
            train.set_epoch(epoch)
            it = iter(train)
            seen = right = 0
            while True:
                t0 = time.perf_counter()
                try:
                    batch = next(it)
                except StopIteration:
                    break
                t_data = time.perf_counter()
                x = to_input(batch.video, args.model, device)
                y = batch.labels.to(device)
                out = model(x)
                loss = loss_fn(out, y)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                if device.type == "cuda":
                    torch.cuda.synchronize(device)
                t1 = time.perf_counter()
                right += int((out.argmax(1) == y).sum())
                seen += len(y)
                step += 1
                summary["data_wait_s"] += t_data - t0
                summary["step_s"] += t1 - t0
                print(f"epoch {epoch} step {step:4d}  loss {loss.item():.4f}  step {t1 - t0:6.3f} s  "
                      f"data wait {t_data - t0:6.3f} s", flush=True)
                if args.steps is not None and step >= args.steps:
                    break
            entry = {"epoch": epoch, "train_accuracy": right / max(seen, 1)}
            if args.val:
                with sluice.Loader(args.val, clips_per_video=args.clips_per_video, seed=1, shuffle=False,
                                   placement="uniform", **common) as val:
                    entry["held_out_accuracy"] = evaluate(model, val, args, device)
            summary["epochs"].append(entry)
            print(f"epoch {epoch}: train accuracy {entry['train_accuracy']:.3f}"
                  + (f", held-out accuracy {entry['held_out_accuracy']:.3f}" if "held_out_accuracy" in entry
                     else ""), flush=True)
            if args.steps is not None and step >= args.steps:
                break
        stats = train.stats()
    summary["steps"] = step
    summary["wall_s"] = time.perf_counter() - t_start
    summary["bottleneck"] = stats["loader"]["pipeline"]["bottleneck"]
    summary["failed"] = {s["name"]: s["failed"] for s in stats["loader"]["pipeline"]["stages"] if s["failed"]}
    print(f"done: {step} steps in {summary['wall_s']:.1f} s; data wait {summary['data_wait_s']:.1f} s of "
          f"{summary['step_s']:.1f} s in steps; loader bottleneck: {summary['bottleneck']}; "
          f"failures: {summary['failed'] or 'none'}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
