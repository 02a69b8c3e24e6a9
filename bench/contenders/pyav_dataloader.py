#!/usr/bin/python3
"""Contender: the loader most users run today, a PyTorch DataLoader(num_workers=2) over a PyAV Dataset.

Each item opens its video, seeks backward to the keyframe at or before the clip's start, decodes forward and keeps,
as sluice does (docs/clips.md), the frame on screen at the start (the latest presented at or before it) and then
the frames presented after it, `numFrames` in all, each converted by PyAV (swscale) to width x height RGB24 with
bilinear interpolation; the DataLoader's default collate stacks them into [B, T, H, W, 3] uint8 batches. PyAV's
decoder settings are its defaults (what a user gets). A seek that lands after the start (a keyframe whose decode
time is before the target but whose presentation time is after it) is retried from a second earlier, so the frame
on screen at the start is among those decoded.

`--mode reference` runs the same decode function in one process without torch: the oracle every contender's
frames are checked against (bench/contenders/harness.ts describes the modes and the output contract).

Needs Debian's /usr/bin/python3 with python3-torch, python3-av and python3-numpy.
"""

import argparse
import json
import math
import os
import sys
import time

import av
import numpy as np


def decode_clip(path, start, num_frames, width, height):
    """Returns (frames uint8 [T, H, W, 3], frame times in seconds, frames decoded)."""
    decoded = 0

    def rgb(frame):
        return frame.to_ndarray(width=width, height=height, format="rgb24", interpolation="BILINEAR")

    with av.open(path) as container:
        stream = container.streams.video[0]
        tb = stream.time_base
        target = start
        while True:
            container.seek(max(0, math.floor(target / tb)), stream=stream, backward=True)
            frames, pts, landed = [], [], None
            held = None  # the latest frame presented at or before start, and its time
            for frame in container.decode(stream):
                decoded += 1
                if frame.pts is None:
                    continue
                t = float(frame.pts * tb)
                if landed is None:
                    landed = t
                    if t > start and target > 0:
                        break  # landed past the start: the frame on screen there comes earlier
                if t <= start:
                    held = (frame, t)
                    continue
                if held is not None:
                    frames.append(rgb(held[0]))
                    pts.append(held[1])
                    held = None
                if len(frames) < num_frames:
                    frames.append(rgb(frame))
                    pts.append(t)
                if len(frames) == num_frames:
                    break
            if landed is not None and landed > start and target > 0:
                target = max(0.0, min(target, landed) - 1.0)
                continue
            if held is not None:  # the stream ended with the frame on screen at start
                frames.append(rgb(held[0]))
                pts.append(held[1])
            if not frames:
                raise RuntimeError(f"{path}: no frame on screen at or after {start}")
            while len(frames) < num_frames:  # the video ends inside the window: repeat the last frame
                frames.append(frames[-1])
                pts.append(pts[-1])
            return np.stack(frames), pts, decoded


def write_out(out_dir, clips, decode):
    with open(os.path.join(out_dir, "frames.bin"), "wb") as f:
        all_pts = []
        for frames, pts in decode():
            f.write(np.ascontiguousarray(frames).tobytes())
            all_pts.append(pts)
    with open(os.path.join(out_dir, "pts.json"), "w") as f:
        json.dump(all_pts, f)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--clips", required=True)
    ap.add_argument("--mode", choices=["reference", "verify", "time"], default="time")
    ap.add_argument("--out")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    with open(args.clips) as f:
        spec = json.load(f)
    n, w, h, bs = spec["numFrames"], spec["width"], spec["height"], spec["batchSize"]

    if args.mode == "reference":
        clips = spec["passes"][0]
        write_out(args.out, clips, lambda: (decode_clip(c["path"], c["start"], n, w, h)[:2] for c in clips))
        return

    import torch
    from torch.utils.data import DataLoader, Dataset

    class ClipDataset(Dataset):
        def __init__(self, clips):
            self.clips = clips

        def __len__(self):
            return len(self.clips)

        def __getitem__(self, i):
            c = self.clips[i]
            frames, pts, decoded = decode_clip(c["path"], c["start"], n, w, h)
            return torch.from_numpy(frames), c["label"], torch.tensor(pts, dtype=torch.float64), decoded

    def loader(clips):
        return DataLoader(ClipDataset(clips), batch_size=bs, shuffle=False, num_workers=args.workers)

    if args.mode == "verify":
        clips = spec["passes"][0]

        def batches():
            for video, _labels, pts, _decoded in loader(clips):
                for b in range(video.shape[0]):
                    yield video[b].numpy(), pts[b].tolist()

        write_out(args.out, clips, batches)
        return

    for p, clips in enumerate(spec["passes"]):
        print(json.dumps({"event": "start", "pass": p}), flush=True)
        t0 = time.perf_counter()
        count = decoded = 0
        for video, _labels, _pts, dec in loader(clips):
            assert tuple(video.shape[1:]) == (n, h, w, 3), video.shape
            count += video.shape[0]
            decoded += int(dec.sum())
        wall = time.perf_counter() - t0
        print(json.dumps({"event": "end", "pass": p, "wall": wall, "clips": count, "frames": count * n,
                          "decoded": decoded}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
