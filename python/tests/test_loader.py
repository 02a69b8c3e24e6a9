"""sluice.Loader against a real server: the batches are the in-process loader's, byte for byte; they view the
shared memory without a copy; slots are released by the documented rule; epochs, stats and the DataLoader
adapter."""
from __future__ import annotations

import ctypes
import hashlib

import numpy as np
import pytest
import torch

import sluice
import sluice.torch
from conftest import CLIP, reference


def sha(video) -> str:
    return hashlib.sha256(video.contiguous().numpy().tobytes()).hexdigest()


def options(dataset: str, **extra):
    o = {"dataset": dataset, "batchSize": 4, "clip": CLIP, "sampler": {"seed": 7}}
    o.update(extra)
    return o


def loader(dataset: str, **kw) -> sluice.Loader:
    args = dict(batch_size=4, num_frames=CLIP["numFrames"], width=CLIP["width"], height=CLIP["height"], seed=7)
    args.update(kw)
    return sluice.Loader(dataset, **args)


def served(l: sluice.Loader, epochs: int):
    got = []
    for _ in range(epochs):
        for b in l:
            got.append({"epoch": b.epoch, "index": b.index, "sha": sha(b.video), "shape": list(b.video.shape),
                        "labels": b.labels.tolist(), "clips": [[c["path"], c["start"]] for c in b.clips]})
    return got


@pytest.mark.parametrize("backend", ["inprocess", "subprocess"])
def test_batches_are_the_inprocess_loaders_byte_for_byte_over_3_epochs(dataset, backend):
    want = reference(options(dataset, backend=backend), 3)
    with loader(dataset, backend=backend) as l:
        assert len(l) == 3
        got = served(l, 3)
    assert len(want) == 9
    assert got == want


def test_planar_layout_matches_too(dataset):
    want = reference(options(dataset, layout="BCTHW"), 1)
    with loader(dataset, layout="BCTHW") as l:
        got = served(l, 1)
    assert got == want
    assert got[0]["shape"] == [4, 3, 8, 48, 64]


def test_video_views_the_shared_memory_and_copy_does_not(dataset):
    with loader(dataset) as l:
        it = iter(l)
        b = next(it)
        mm = l._mem
        base = ctypes.addressof(ctypes.c_char.from_buffer(mm))
        ptr = b.video.data_ptr()
        assert base <= ptr and ptr + b.video.numel() <= base + len(mm), "video is not a view of the slot mapping"
        assert ptr == base + b.slot * l._slot_bytes
        # the mapping is the memfd the server's loader assembles its batches in (its decode Workers write there),
        # opened through /proc
        maps = open("/proc/self/maps").read()
        assert f"memfd:sluice-batches-{l.welcome['pid']}" in maps
        for _ in it:
            pass
    with loader(dataset, copy=True) as l:
        b = next(iter(l))
        base = ctypes.addressof(ctypes.c_char.from_buffer(l._mem))
        ptr = b.video.data_ptr()
        assert not (base <= ptr < base + len(l._mem))


def released(l: sluice.Loader) -> int:
    return l.stats()["session"]["ring"]["released"]


def test_slot_of_batch_i_is_released_when_the_loop_takes_batch_i_plus_lag(dataset):
    with loader(dataset, clips_per_video=2, slots=4) as l:  # 6 batches per epoch
        assert len(l) == 6
        taken = []
        for i, b in enumerate(l):
            taken.append(b)
            # batches i-1 and i are held; everything before was released, in order
            assert released(l) == max(0, i - 1)
            # the batch taken before this one is intact
            if i >= 1:
                prev = taken[i - 1]
                assert prev.video.shape == b.video.shape
        assert released(l) == 4
        # the last two are released when the next epoch starts
        it = iter(l)
        next(it)
        assert released(l) == 6
        del it
    with loader(dataset, release_lag=1, slots=2) as l:
        for i, b in enumerate(l):
            assert released(l) == i


def test_copy_releases_at_once(dataset):
    want = reference(options(dataset), 1)
    with loader(dataset, copy=True, slots=1, release_lag=1) as l:
        got = []
        for i, b in enumerate(l):
            assert released(l) == i + 1
            got.append(b)
        # copies survive the slot being reused
        assert [sha(b.video) for b in got] == [w["sha"] for w in want]


def test_set_epoch_jumps_like_distributed_sampler(dataset):
    want = reference(options(dataset), 3)
    with loader(dataset) as l:
        l.set_epoch(2)
        assert served(l, 1) == [w for w in want if w["epoch"] == 2]
        l.set_epoch(1)
        assert served(l, 1) == [w for w in want if w["epoch"] == 1]
        assert l.epoch == 2


def test_an_abandoned_epoch_leaves_the_next_one_intact(dataset):
    want = reference(options(dataset), 2)
    with loader(dataset) as l:
        for b in l:
            break  # abandon epoch 0 after one batch
        assert served(l, 1) == [w for w in want if w["epoch"] == 1]


def test_stats_from_python(dataset):
    with loader(dataset) as l:
        for _ in l:
            pass
        s = l.stats()
    assert s["session"]["clips"] == 12 and s["session"]["batches"] == 3
    # zero copy: the decode Workers wrote every pixel into the slots this client maps; nothing was copied after
    # decode (the byte-identical tests above check those pixels against the in-process loader's)
    assert s["session"]["copiedBytes"] == 0
    assert s["session"]["ring"]["acquired"] == 3
    assert s["session"]["clipsPerSec"] > 0
    p = s["loader"]["pipeline"]
    assert "bottleneck" in p
    assert {st["name"] for st in p["stages"]} >= {"decode", "demux"}
    assert all(st["failed"] == 0 for st in p["stages"])


def test_iterable_dataset_with_dataloader(dataset):
    want = reference(options(dataset), 2)
    ds = sluice.torch.IterableDataset(dataset, batch_size=4, num_frames=CLIP["numFrames"], width=CLIP["width"],
                                      height=CLIP["height"], seed=7)
    try:
        dl = torch.utils.data.DataLoader(ds, batch_size=None)
        got = []
        for epoch in range(2):
            ds.set_epoch(epoch)
            for item in dl:
                assert isinstance(item["video"], torch.Tensor) and item["video"].dtype == torch.uint8
                assert item["labels"].dtype == torch.int64
                got.append((sha(item["video"]), item["labels"].tolist()))
        assert got == [(w["sha"], w["labels"]) for w in want]
        assert len(ds) == 3
    finally:
        ds.close()


def read_pattern(frame: np.ndarray):
    """(label, frame index) drawn into a synthetic frame [H, W, 3] (4x8 blocks; see src/prep/synthetic.ts), or
    None when its check byte does not match."""
    h, w, _ = frame.shape
    luma = frame[..., 0] * 0.299 + frame[..., 1] * 0.587 + frame[..., 2] * 0.114
    bw, bh = w / 8, h / 4
    rows = []
    for r in range(4):
        byte = 0
        for c in range(8):
            x0, y0 = int(c * bw + bw * 0.3), int(r * bh + bh * 0.3)
            x1, y1 = max(x0 + 1, int(c * bw + bw * 0.7)), max(y0 + 1, int(r * bh + bh * 0.7))
            byte = byte << 1 | int(luma[y0:y1, x0:x1].mean() > 125)
        rows.append(byte)
    label, hi, lo, check = rows
    return (label, hi << 8 | lo) if (label ^ lo ^ 0x5A) == check else None


def test_each_clip_holds_its_labels_frames_at_its_times(dataset):
    """The synthetic videos draw label and frame index into every frame: the labels and pts the trainer gets
    must be those of the pixels it gets."""
    seen = 0
    with loader(dataset, num_frames=4, width=128, height=96) as l:
        for b in l:
            v = b.video.numpy()  # [B, T, H, W, 3]
            for k in range(v.shape[0]):
                for t in range(v.shape[1]):
                    got = read_pattern(v[k, t])
                    assert got is not None
                    assert got[0] == int(b.labels[k]) == b.clips[k]["label"]
                    assert got[1] == round(b.clips[k]["pts"][t] * 25)
                    seen += 1
    assert seen == 12 * 4


def test_options_are_checked_before_starting(dataset):
    with pytest.raises(ValueError, match="slots"):
        loader(dataset, slots=2, release_lag=2)
    with pytest.raises(ValueError, match="num_frames"):
        sluice.Loader(dataset, batch_size=2, width=8, height=8)
    with pytest.raises(ValueError, match="dataset"):
        sluice.Loader(batch_size=2)
    with pytest.raises(sluice.ServeError, match=r"batchSize must be an integer in \[1, 65536\], got 0") as e:
        loader(dataset, batch_size=0)
    # the server's InvalidArgumentError, by its class name: a ServeError and a ValueError
    assert type(e.value) is sluice.errors.InvalidArgumentError and isinstance(e.value, ValueError)
    assert (e.value.code, e.value.name) == ("InvalidArgumentError", "InvalidArgumentError")
