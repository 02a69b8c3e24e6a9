"""sluice.Loader against a real server: the batches are the in-process loader's, byte for byte; they view the
shared memory without a copy; slots are released by the documented rule; epochs, stats and the DataLoader
adapter."""
from __future__ import annotations

import ctypes
import hashlib
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Dict, List

import numpy as np
import pytest
import torch

import sluice
import sluice.torch
from conftest import CLIP, deno, reference


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


def presentation_order(path: str) -> List[float]:
    """ffprobe's frames of the video stream, sorted by presentation time: index k is the k-th frame shown."""
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                          "frame=pts_time,best_effort_timestamp_time", "-of", "json", path],
                         capture_output=True, text=True, check=True).stdout
    frames = json.loads(out)["frames"]
    return sorted(float(f.get("pts_time", f.get("best_effort_timestamp_time"))) for f in frames)


def camel_keys(meta, where="clip"):
    """Every key of a clip dict, nested ones too, that is not snake_case, with where it is (``fields`` aside: its
    keys are the manifest's)."""
    for k, v in meta.items():
        if k != k.lower():
            yield f"{where}[{k!r}]"
        if isinstance(v, dict) and k != "fields":
            yield from camel_keys(v, f"{where}[{k!r}]")


@pytest.mark.parametrize("backend", ["inprocess", "subprocess"])
def test_clip_dicts_give_each_frames_presentation_index_and_kind(dataset, backend):
    """Frame identity, in Python spelling: each slot's ``frame_index`` is ffprobe's presentation-order index of the
    frame with that pts; ``frame_kind`` says which slots are sampled, held or padded (as many as ``held`` and
    ``padded`` count); no key is camelCase. 2 s videos at 25 fps: clips of 12 frames from random starts (most
    windows are reached by a seek: their index comes from the keyframe table), and of 60 frames (longer than the
    video: the last frame repeated, held or padded)."""
    orders: Dict[str, List[float]] = {}
    kinds = set()
    for num_frames in (12, 60):
        with loader(dataset, backend=backend, clips_per_video=2, num_frames=num_frames) as l:
            clips = [c for b in l for c in b.clips]
        for c in clips:
            assert list(camel_keys(c)) == []
            order = orders.setdefault(c["path"], presentation_order(c["path"]))
            want = [min(range(len(order)), key=lambda k: abs(order[k] - t)) for t in c["pts"]]
            assert all(abs(order[k] - t) < 1e-6 for k, t in zip(want, c["pts"])), (c["path"], c["pts"])
            assert c["frame_index"] == want, (c["path"], c["start"])
            n = len(c["pts"]) - c["held"] - c["padded"]
            assert c["frame_kind"] == ["sampled"] * n + ["held"] * c["held"] + ["padded"] * c["padded"]
            kinds.update(c["frame_kind"])
            if c["start"] > 0.5:
                assert c["frame_index"][0] > 10  # a window well into the stream: not counted from its packets
    assert len(orders) == 12 and len(kinds) > 1 and "sampled" in kinds


def test_clip_dicts_are_snake_case_at_every_depth_but_fields_keep_the_manifests_names(cut_dataset, tmp_path):
    """A substitute's ``replaces`` (the failed clip's ``error_name``…) is snake_case too; ``fields`` holds the
    manifest's columns as the manifest names them (``myColumn``, and the keys of a JSON value), through
    ``sluice.torch.IterableDataset`` as well."""
    videos = sorted(str(p) for p in Path(cut_dataset).rglob("*.mp4"))
    column = {"innerKey": [1, {"deepKey": 2}]}
    manifest = tmp_path / "clips.jsonl"
    manifest.write_text("".join(json.dumps({"path": v, "label": i, "myColumn": column, "snake_col": i}) + "\n"
                                for i, v in enumerate(videos)))
    ds = sluice.torch.IterableDataset(str(manifest), batch_size=4, num_frames=CLIP["numFrames"],
                                      width=CLIP["width"], height=CLIP["height"], clips_per_video=4, seed=0)
    try:
        clips = [c for item in torch.utils.data.DataLoader(ds, batch_size=None) for c in item["clips"]]
    finally:
        ds.close()
    assert len(clips) == 4 * len(videos) == 16
    for c in clips:
        assert list(camel_keys(c)) == []
        assert {"frame_index", "frame_kind", "decoded_frames", "skipped_frames", "pass_clips"} <= set(c)
        assert c["fields"] == {"myColumn": column, "snake_col": c["label"]}
    failed = [c["replaces"] for c in clips if "replaces" in c]
    assert failed and all(f["error_name"] and f["path"].endswith("cut.mp4") for f in failed)


def test_video_views_the_shared_memory_and_copy_does_not(dataset):
    with loader(dataset) as l:
        it = iter(l)
        b = next(it)
        mm = l._session.slots.mem
        base = ctypes.addressof(ctypes.c_char.from_buffer(mm))
        ptr = b.video.data_ptr()
        assert base <= ptr and ptr + b.video.numel() <= base + len(mm), "video is not a view of the slot mapping"
        assert ptr == base + b.slot * l._session.slots.slot_bytes
        # the mapping is the memfd the server's loader assembles its batches in (its decode Workers write there),
        # opened through /proc
        maps = open("/proc/self/maps").read()
        assert f"memfd:sluice-batches-{l.welcome['pid']}" in maps
        for _ in it:
            pass
    with loader(dataset, copy=True) as l:
        b = next(iter(l))
        base = ctypes.addressof(ctypes.c_char.from_buffer(l._session.slots.mem))
        ptr = b.video.data_ptr()
        assert not (base <= ptr < base + len(l._session.slots.mem))


def released(l: sluice.Loader) -> int:
    return l.stats()["session"]["ring"]["released"]


def bytes_of(video) -> bytes:
    return video.contiguous().numpy().tobytes()


def in_mapping(l: sluice.Loader, video) -> bool:
    base = ctypes.addressof(ctypes.c_char.from_buffer(l._session.slots.mem))
    return base <= video.data_ptr() < base + len(l._session.slots.mem)


def copied_epochs(dataset: str, epochs: int, **kw):
    """Each epoch's batches as (bytes, labels), from a loader that copies every batch out of its slot."""
    with loader(dataset, copy=True, **kw) as l:
        return [[(bytes_of(b.video), b.labels.tolist()) for b in l] for _ in range(epochs)]


@pytest.mark.parametrize("backend", ["inprocess", "subprocess"])
def test_list_of_an_epoch_is_intact_or_a_clear_error(dataset, backend):
    """list(loader) keeps every batch of an epoch, each holding its slot: with fewer slots than batches that is a
    clear error (it used to be silently wrong: batches showing a later batch's pixels), with enough slots every
    batch is byte for byte the copying loader's."""
    want = copied_epochs(dataset, 3, backend=backend, clips_per_video=2)  # 6 batches an epoch
    with loader(dataset, backend=backend, clips_per_video=2) as l:  # 4 slots
        with pytest.raises(sluice.SluiceError, match="all 4 slots") as e:
            list(l)
        assert type(e.value).__name__ == "SlotsHeldError"
        # its advice is the number that works (it said "slots=5 or more", and list(l) then failed again)
        assert "slots=6 for list(loader)" in str(e.value), str(e.value)
        del e
    with loader(dataset, backend=backend, clips_per_video=2, slots=6) as l:
        for epoch in range(3):
            kept = list(l)
            assert all(in_mapping(l, b.video) for b in kept), "the batches are views of the slots, not copies"
            assert [(bytes_of(b.video), b.labels.tolist()) for b in kept] == want[epoch]
            del kept


def test_a_batch_kept_across_epochs_stays_intact(dataset):
    """A batch kept past its step (here for two more epochs) holds its slot: the server never writes another
    batch over it (it used to be released at the next epoch's start, then overwritten)."""
    want = copied_epochs(dataset, 3, clips_per_video=2)  # 6 batches an epoch, 4 slots
    with loader(dataset, clips_per_video=2) as l:
        first = next(iter(l))
        assert in_mapping(l, first.video)
        for epoch in (1, 2):
            assert [(bytes_of(b.video), b.labels.tolist()) for b in l] == want[epoch]
        assert (bytes_of(first.video), first.labels.tolist()) == want[0][0]


@pytest.mark.parametrize("backend", ["inprocess", "subprocess"])
def test_dataloader_collating_sluice_batches_matches_copies(dataset, backend):
    """DataLoader(ds, batch_size=8) collates 8 whole sluice batches: with 8 slots they are all intact."""
    def run(**kw):
        ds = sluice.torch.IterableDataset(dataset, batch_size=2, num_frames=CLIP["numFrames"], width=CLIP["width"],
                                          height=CLIP["height"], seed=7, clips_per_video=2, backend=backend, **kw)
        try:
            dl = torch.utils.data.DataLoader(ds, batch_size=8)
            return [[(bytes_of(item["video"]), item["labels"].tolist()) for item in dl] for _ in range(3)]
        finally:
            ds.close()

    want = run(copy=True)
    got = run(slots=8)
    assert [len(e) for e in got] == [2, 2, 2]  # 12 sluice batches an epoch: 8 + 4
    assert got == want


def test_dataloader_batch_size_n_joins_batches_with_substitutes_and_the_short_last_one(cut_dataset):
    """The form docs/serving.md shows, DataLoader(IterableDataset(...), batch_size=N), on an epoch whose failed
    clips are replaced (a substitute's clip dict has ``replaces``, the others do not: default collation raised
    KeyError 'replaces') and whose last sluice batch is short (stacking raised 'stack expects each tensor to be
    equal size'): each item joins N batches' clips, and the epoch is the one batch_size=None yields."""
    def dataset(**kw):
        return sluice.torch.IterableDataset(cut_dataset, batch_size=3, num_frames=4, width=32, height=24, seed=1,
                                            clips_per_video=4, **kw)

    ds = dataset(copy=True)
    try:
        want = [(bytes_of(b["video"]), b["labels"].tolist(), b["clips"])
                for b in torch.utils.data.DataLoader(ds, batch_size=None)]
    finally:
        ds.close()
    assert [len(w[1]) for w in want] == [3, 3, 3, 3, 3, 1]  # 16 clips, the last batch short
    assert any("replaces" in c for w in want for c in w[2]), "the epoch holds substitutes"
    ds = dataset(slots=2)
    try:
        got = list(torch.utils.data.DataLoader(ds, batch_size=2))
    finally:
        ds.close()
    assert [tuple(g["video"].shape) for g in got] == [(6, 4, 24, 32, 3), (6, 4, 24, 32, 3), (4, 4, 24, 32, 3)]
    for g, pair in zip(got, [want[0:2], want[2:4], want[4:6]]):
        assert bytes_of(g["video"]) == b"".join(w[0] for w in pair)
        assert g["labels"].tolist() == [x for w in pair for x in w[1]]
        assert g["clips"] == [c for w in pair for c in w[2]]


def memfd_committed(pid: int, tag: str) -> int:
    """Bytes of memory the memfd of process ``pid`` whose name holds ``tag`` has committed (its pages)."""
    total = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if tag in os.readlink(f"/proc/{pid}/fd/{fd}"):
                total += os.stat(f"/proc/{pid}/fd/{fd}").st_blocks * 512
        except OSError:
            pass
    return total


def test_a_slow_trainer_is_not_decoded_slots_batches_ahead_of(dataset):
    """Issue 30 item 5: ``slots`` was also how far the server decoded ahead, so with a slow trainer and many
    slots its shared memory grew batch by batch (1.36 GB in 15 s). Ahead of the trainer's code now: the server's
    ``ahead`` batches (the ``welcome`` says 2), the loader's buffer and the clips in its pipeline."""
    with sluice.Loader(dataset, batch_size=2, num_frames=8, width=64, height=48, seed=7, clips_per_video=4,
                       slots=32, buffer_size=1, concurrency={"decode": 1}) as l:
        assert l.welcome["ahead"] == 2 and len(l) == 24
        pid, used, committed = l._server.pid, [], []
        for i, b in enumerate(l):
            del b  # one batch held at a time, as a training loop does
            time.sleep(0.2)  # a slow step: the server would have decoded the whole epoch by now
            ring = l.stats()["session"]["ring"]
            used.append(ring["inUse"])
            committed.append(memfd_committed(pid, "sluice-batches"))
            if i == 8:
                break
        slot_bytes = ring["slotBytes"]
    # held by the loop (1) + sent ahead (2) + the loader's buffer (1) + batches being assembled (<= 3)
    assert max(used) <= 7, used
    assert max(committed) <= 7 * slot_bytes, (committed, slot_bytes)


def test_holding_every_slot_is_a_clear_error_not_a_hang(dataset):
    want = copied_epochs(dataset, 2, batch_size=2)
    ds = sluice.torch.IterableDataset(dataset, batch_size=2, num_frames=CLIP["numFrames"], width=CLIP["width"],
                                      height=CLIP["height"], seed=7)  # 4 slots, 6 batches an epoch
    try:
        with pytest.raises(sluice.SluiceError, match=r"all 4 slots .* \(4 batches.*copy=True.*slots=5") as e:
            list(torch.utils.data.DataLoader(ds, batch_size=8))
        assert type(e.value).__name__ == "SlotsHeldError" and (e.value.held, e.value.slots) == (4, 4)
        del e
        # nothing is lost: the next epoch runs as usual
        assert [(bytes_of(b["video"]), b["labels"].tolist()) for b in ds] == want[1]
    finally:
        ds.close()


def test_batches_held_across_an_epoch_jump_stay_intact(dataset):
    """set_epoch(n) to another epoch rebuilds the server's loader, with a new ring: batches held from before (here
    every slot of the old ring) stay readable and unchanged, and hold none of the new ring's slots."""
    want = copied_epochs(dataset, 1, clips_per_video=2)[0]
    jump = reference(options(dataset, sampler={"seed": 7, "clipsPerVideo": 2}), 4)
    with loader(dataset, clips_per_video=2, timeout=60) as l:  # 4 slots, 6 batches an epoch
        it = iter(l)
        kept = [next(it) for _ in range(4)]
        del it
        l.set_epoch(3)
        assert [sha(b.video) for b in l] == [w["sha"] for w in jump if w["epoch"] == 3]
        assert [(bytes_of(b.video), b.labels.tolist()) for b in kept] == want[:4]
        del kept
        assert l.stats()["session"]["ring"]["inUse"] == 0


def test_a_slot_is_released_when_the_last_reference_to_its_batch_goes(dataset):
    with loader(dataset, clips_per_video=2, slots=4) as l:  # 6 batches an epoch
        it = iter(l)
        first = next(it)
        keep = first.video[1:3].numpy()  # a numpy view of a slice: the last reference
        want = keep.copy()
        del first
        for b in it:
            assert released(l) == b.index - 1  # every batch before this one, but the first
            assert np.array_equal(keep, want)
        del b
        assert released(l) == 5
        del keep
        assert released(l) == 6  # the first batch's slot went with the slice
    with loader(dataset, slots=2) as l:  # a plain loop needs only 2 slots: one held, one filling
        for i, b in enumerate(l):
            assert released(l) == i


def test_copy_releases_at_once(dataset):
    want = reference(options(dataset), 1)
    with loader(dataset, copy=True, slots=1) as l:
        got = []
        for i, b in enumerate(l):
            assert released(l) == i + 1
            got.append(b)
        # copies survive the slot being reused
        assert [sha(b.video) for b in got] == [w["sha"] for w in want]


def test_batches_of_an_abandoned_epoch_are_not_counted_delivered(dataset):
    with loader(dataset, clips_per_video=2) as l:  # 6 batches of 4 an epoch, 4 slots
        it = iter(l)
        first = next(it)
        while l.stats()["session"]["sent"] < 3:  # the server sends `ahead` (2) beyond the batch the loop took
            time.sleep(0.05)
        del first, it  # abandon epoch 0 having taken one batch: two more are on their way
        for b in l:  # epoch 1 discards them unused
            pass
        del b
        s = l.stats()
    e0, e1 = s["loader"]["clips"]["epochs"]
    assert (e0["epoch"], e0["complete"], e0["delivered"], e0["pending"]) == (0, False, 4, 20)
    assert (e1["epoch"], e1["complete"], e1["delivered"], e1["pending"]) == (1, True, 24, 0)
    assert (s["session"]["sent"], s["session"]["batches"], s["session"]["clips"]) == (9, 7, 28)


def test_stats_mid_epoch_count_the_batches_the_loop_took_not_those_sent_ahead(dataset):
    """`delivered` used to count every batch the server had sent, though the loop had taken one."""
    with loader(dataset, clips_per_video=2) as l:  # 6 batches of 4 an epoch, 4 slots
        it = iter(l)
        first = next(it)
        while l.stats()["session"]["sent"] < 3:  # the server sends `ahead` (2) beyond the batch the loop took
            time.sleep(0.05)
        s = l.stats()
        e0 = s["loader"]["clips"]["epochs"][0]
        assert (e0["planned"], e0["delivered"], e0["pending"], e0["complete"]) == (24, 4, 20, False)
        assert (s["session"]["sent"], s["session"]["batches"], s["session"]["clips"]) == (3, 1, 4)
        assert " epoch 0: 1 batches (3 sent), 4 clips, " in str(s)
        assert "\nclips: planned 24, delivered 4, failed 0, not reached 20; " in str(s)
        del first
        for b in it:
            del b
        s = l.stats()
    e0 = s["loader"]["clips"]["epochs"][0]
    assert e0["complete"] and e0["planned"] == e0["delivered"] + e0["failed"] + e0["dropped"] == 24
    assert e0["pending"] == 0
    assert (s["session"]["sent"], s["session"]["batches"], s["session"]["clips"]) == (6, 6, 24)
    assert " 6 batches (6 sent), 24 clips, " in str(s)


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


def test_printed_stats_are_the_table_sluice_load_prints(dataset, capsys):
    with loader(dataset) as l:
        clips = sum(len(b) for b in l)
        s = l.stats()
        print(s)
    printed = capsys.readouterr().out.rstrip("\n").split("\n")
    # A dict all the same, whose repr is the dict's (a notebook shows the dict).
    assert isinstance(s, dict) and repr(s) == repr(dict(s)) and s["session"]["clips"] == clips == 12
    assert printed[0].startswith("session sluice-python/0.1.0 rank 0 of 1, epoch none: 3 batches (3 sent), 12 clips")
    # Every stage of the stats' pipeline has its row: name, concurrency, in, out, dropped, failed.
    rows = {line.split()[0]: line.split()[:6] for line in printed if line and not line.startswith(" ")}
    for st in s["loader"]["pipeline"]["stages"]:
        assert rows[st["name"]] == [st["name"], str(st["concurrency"]), str(st["tasksIn"]), str(st["itemsOut"]),
                                    str(st["dropped"]), str(st["failed"])]
    assert printed[-1].startswith("bottleneck: ")
    # `sluice load` over the same dataset and clips: the same clip line, failures line, table header and rows
    # (their counters; the timings differ).
    cli = deno("run", "-A", "src/cli/main.ts", "load", dataset, "--batch-size", "4", "--frames",
               str(CLIP["numFrames"]), "--width", str(CLIP["width"]), "--height", str(CLIP["height"]), "--seed", "7",
               "--epochs", "1").rstrip("\n").split("\n")
    at = cli.index(next(line for line in cli if line.startswith("clips: ")))

    def counters(lines):
        return [line.split()[:6] if line.split() and line.split()[0] in rows else line
                for line in lines if not line.startswith(("decode: ", "bottleneck: ")) and " consumed in " not in line]

    # then this rank's data waits (the client's own line), then the loader's lines as `sluice load` prints them
    assert printed[1].startswith("data wait (rank 0): 3 steps, mean ")
    assert printed[2] == cli[at] == "clips: planned 12, delivered 12, failed 0; padded frames 0, held frames 0"
    assert counters(printed[2:]) == counters(cli[at:])


def test_stats_without_text_print_as_the_dict():
    from sluice._loader import Stats

    s = Stats({"session": {"clips": 3}}, None)  # an older server sends no text
    assert str(s) == repr(s) == "{'session': {'clips': 3}}"


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
    with pytest.raises(ValueError, match="at least 2 are needed unless copy=True"):
        loader(dataset, slots=1)
    with pytest.raises(sluice.errors.InvalidArgumentError, match="sluice.Loader: unknown option release_lag"):
        loader(dataset, release_lag=2)
    with pytest.raises(ValueError, match="num_frames"):
        sluice.Loader(dataset, batch_size=2, width=8, height=8)
    with pytest.raises(ValueError, match="dataset"):
        sluice.Loader(batch_size=2)
    with pytest.raises(sluice.ServeError, match=r"batch_size must be an integer from 1 to 65536, got 0") as e:
        loader(dataset, batch_size=0)
    # the server's InvalidArgumentError, by its class name: a ServeError and a ValueError
    assert type(e.value) is sluice.errors.InvalidArgumentError and isinstance(e.value, ValueError)
    assert (e.value.code, e.value.name) == ("InvalidArgumentError", "InvalidArgumentError")
