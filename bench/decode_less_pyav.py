"""The baseline of bench/decode_less.ts: PyTorch DataLoader(num_workers=2) over a PyAV Dataset.

Each clip: open the file, seek backward to the keyframe at or before the clip's start, decode forward, keep the
first `numFrames` frames presented at or after the start, each converted to `width`x`height` RGB24 by PyAV
(swscale, bilinear). The same fixed clip list as sluice's (JSON from bench/decode_less.ts); one DataLoader
iteration per pass, as a training loop runs an epoch (the workers start each time, PyTorch's default).

    /usr/bin/python3 bench/decode_less_pyav.py CLIPS.json time   -> JSON {"clipsPerSec": [...], "passes": N}
    /usr/bin/python3 bench/decode_less_pyav.py CLIPS.json verify OUT.raw -> pass 0's first clips, raw RGB24

FFmpeg is used only inside DataLoader workers (PyAV in the parent before forking makes workers crash).
"""

import json
import sys
import time

import av
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class Clips(Dataset):
    def __init__(self, clips, num_frames, width, height):
        self.clips = clips
        self.num_frames = num_frames
        self.width = width
        self.height = height

    def __len__(self):
        return len(self.clips)

    def __getitem__(self, i):
        c = self.clips[i]
        out = np.zeros((self.num_frames, self.height, self.width, 3), dtype=np.uint8)
        with av.open(c["path"]) as container:
            stream = container.streams.video[0]
            tb = stream.time_base
            container.seek(int(c["start"] / tb), stream=stream, backward=True, any_frame=False)
            n = 0
            last = None
            for frame in container.decode(stream):
                if frame.pts is None or frame.pts * tb < c["start"] - 1e-9:
                    continue
                last = frame.to_ndarray(width=self.width, height=self.height, format="rgb24",
                                        interpolation="BILINEAR")
                out[n] = last
                n += 1
                if n == self.num_frames:
                    break
            for k in range(n, self.num_frames):  # a short window: repeat the last frame, as sluice pads
                out[k] = last
        return torch.from_numpy(out), c["label"]


def loader(clips, spec):
    ds = Clips(clips, spec["numFrames"], spec["width"], spec["height"])
    return DataLoader(ds, batch_size=spec["batchSize"], num_workers=2, shuffle=False)


def main():
    spec = json.load(open(sys.argv[1]))
    mode = sys.argv[2]
    if mode == "verify":
        count = spec["verifyClips"]
        with open(sys.argv[3], "wb") as f:
            for frames, _ in loader(spec["passes"][0][:count], spec):
                f.write(frames.numpy().tobytes())
        return
    # One epoch per pass, as a training loop runs them: a DataLoader iteration (its workers start) per pass.
    rates = []
    for p, clips in enumerate(spec["passes"]):
        t0 = time.perf_counter()
        n = 0
        for frames, _ in loader(clips, spec):
            n += frames.shape[0]
        if p > 0:  # pass 0 warms the page cache
            rates.append(n / (time.perf_counter() - t0))
    print(json.dumps({"clipsPerSec": rates, "passes": len(rates)}))

if __name__ == "__main__":
    main()
