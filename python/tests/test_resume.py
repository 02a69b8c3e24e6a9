"""Resuming (``state_dict`` / ``load_state_dict``, issue 25 item 1) and ``preview`` (item 4) through a server.

The oracle of resuming is the uninterrupted run: for seeds 0-4 and a state taken after batch 1, the middle and
the last batch of an epoch, the batches of the resumed run are the uninterrupted run's (SHA-256 of each),
failed clips' substitutes included (a cut file fails mid-way); the clips before the resume point are never
decoded (the loader's clip stats); a state of another seed, dataset, shard or batch size is refused naming the
difference. The oracle of ``preview`` is the in-process loader's sheet (same options), byte for byte.
"""
from __future__ import annotations

import hashlib
import json
import os
import pickle

import pytest
import torch

import sluice
import sluice.torch
from conftest import CLIP, deno

B = 4


def sha(video) -> str:
    return hashlib.sha256(video.contiguous().numpy().tobytes()).hexdigest()


def loader(dataset: str, **kw) -> sluice.Loader:
    args = dict(batch_size=B, num_frames=CLIP["numFrames"], width=CLIP["width"], height=CLIP["height"],
                clips_per_video=4, seed=0)
    args.update(kw)
    return sluice.Loader(dataset, **args)


def epoch_of(stats, epoch: int):
    return next(e for e in stats["loader"]["clips"]["epochs"] if e["epoch"] == epoch)


def run(l: sluice.Loader, epochs: int, states=None):
    """(epoch, index, sha, clip paths and starts) of each batch of ``epochs`` epochs; ``states[k]`` gets the
    state after the k-th batch of the first."""
    got = []
    for e in range(epochs):
        for i, b in enumerate(l):
            got.append((b.epoch, b.index, sha(b.video), [(c["path"], c["start"]) for c in b.clips]))
            if states is not None and e == 0 and i + 1 in states:
                states[i + 1] = l.state_dict()
    return got


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_resumed_after_batch_1_the_middle_and_the_last_gives_the_uninterrupted_runs_batches(cut_dataset, seed):
    with loader(cut_dataset, seed=seed) as l:
        n = len(l)
        assert n == 4
        states = {1: None, n // 2: None, n - 1: None, n: None}  # n - 1: the last batch is the one resumed
        whole = run(l, 2, states)
        stats = l.stats()
        assert stats["loader"]["clips"]["total"]["replaced"] > 0, "some clips fail and are replaced"
        for k, state in states.items():
            state = json.loads(json.dumps(state))  # plain JSON: what a checkpoint file gives back
            assert (state["epoch"], state["batches"]) == (0, k)
            l.load_state_dict(state)  # this loader ran its epochs: the server resumes a loader of its own
            assert l.epoch == 0
            rest = run(l, 2)
            assert rest == whole[k:], f"seed {seed}, resumed after batch {k}"
            e0 = epoch_of(l.stats(), 0)
            assert e0["skipped"] == k * B, "the positions before the resume point are skipped, not consumed"
            assert e0["planned"] == e0["delivered"] + e0["failed"] + e0["dropped"] + e0["skipped"]


def test_a_new_process_resumes_from_a_torch_save_and_decodes_nothing_before_the_resume_point(dataset, tmp_path):
    opts = dict(decode_less={"once": False})  # each clip's own frames: the decoded frames add up clip by clip
    with loader(dataset, **opts) as l:
        whole = []
        frames = []
        for b in l:
            whole.append(sha(b.video))
            frames.append(sum(c["decoded_frames"] for c in b.clips))
        assert epoch_of(l.stats(), 0)["decodedFrames"] == sum(frames)
    k = 2
    with loader(dataset, **opts) as l:
        it = iter(l)
        for _ in range(k):
            b = next(it)
        del b
        torch.save({"step": k, "data": l.state_dict()}, tmp_path / "ckpt.pt")
    # a fresh loader (its own server), as after the job was stopped
    with loader(dataset, **opts) as l:
        l.load_state_dict(torch.load(tmp_path / "ckpt.pt")["data"])
        rest = [sha(b.video) for b in l]
        assert rest == whole[k:]
        e0 = epoch_of(l.stats(), 0)
        assert e0["skipped"] == k * B
        assert e0["decodedFrames"] == sum(frames[k:]), "no frame of a clip before the resume point is decoded"
        assert e0["decodedFrames"] < sum(frames)


@pytest.mark.parametrize("kw", [dict(backend="subprocess"), dict(concurrency={"decode": "auto", "demux": "auto"})],
                         ids=["subprocess", "auto"])
def test_resume_with_the_subprocess_backend_and_auto_concurrency(cut_dataset, kw):
    with loader(cut_dataset, seed=3, **kw) as l:
        states = {2: None}
        whole = run(l, 1, states)
    with loader(cut_dataset, seed=3, **kw) as l:
        l.load_state_dict(states[2])
        assert run(l, 1) == whole[2:]


def test_state_after_an_epoch_is_the_next_epochs_start_and_set_epoch_moves_it(dataset):
    with loader(dataset) as l:
        s0 = l.state_dict()
        assert (s0["epoch"], s0["batches"]) == (0, 0)
        for _ in l:
            pass
        s1 = l.state_dict()
        assert (s1["epoch"], s1["batches"]) == (1, 0)
        l.set_epoch(5)
        assert (l.state_dict()["epoch"], l.state_dict()["batches"]) == (5, 0)
        for b in l:
            break
        del b
        assert (l.state_dict()["epoch"], l.state_dict()["batches"]) == (5, 1)
        pickle.dumps(s1)  # plain data


def test_per_rank_states_under_ddp(dataset):
    with loader(dataset, rank=1, world_size=2) as l:
        states = {1: None}
        whole = run(l, 1, states)
    assert (states[1]["rank"], states[1]["worldSize"]) == (1, 2)
    with loader(dataset, rank=0, world_size=2) as l:
        with pytest.raises(sluice.errors.InvalidArgumentError, match=r"rank 1 of 2's; this loader is rank 0 of 2"):
            l.load_state_dict(states[1])
    with loader(dataset, rank=1, world_size=2) as l:
        l.load_state_dict(states[1])
        assert run(l, 1) == whole[1:]


def test_a_mismatched_state_is_refused_naming_the_difference_and_changes_nothing(dataset, cut_dataset):
    with loader(cut_dataset, seed=1) as l:
        other_dataset = l.state_dict()
    with loader(dataset, seed=1) as l:
        other_seed = l.state_dict()
    with loader(dataset, seed=1, batch_size=2) as l:
        other_batch = l.state_dict()
    with loader(dataset, seed=2) as l:
        want = run(l, 1)
        with pytest.raises(sluice.errors.InvalidArgumentError, match="another dataset"):
            l.load_state_dict(other_dataset)
        with pytest.raises(sluice.errors.InvalidArgumentError, match=r"seed: the state's 1, this loader's 2"):
            l.load_state_dict(other_seed)
        with pytest.raises(sluice.errors.InvalidArgumentError, match=r"batchSize: the state's 2, this loader's 4"):
            l.load_state_dict(other_batch)
        with pytest.raises(sluice.errors.InvalidArgumentError, match="not a loader state"):
            l.load_state_dict({"epoch": "x"})
        with pytest.raises(TypeError):
            l.load_state_dict("state")  # type: ignore[arg-type]
        # the session goes on: the next epoch is the loader's own
        assert [s for (_, _, s, _) in run(l, 1)] != [], "still streams"
        l.set_epoch(0)
        assert run(l, 1) == want


def test_the_iterable_dataset_saves_and_loads_the_state(dataset):
    ds = sluice.torch.IterableDataset(dataset, batch_size=B, num_frames=CLIP["numFrames"], width=CLIP["width"],
                                      height=CLIP["height"], seed=4)
    try:
        whole = [sha(item["video"]) for item in torch.utils.data.DataLoader(ds, batch_size=None)]
    finally:
        ds.close()
    ds = sluice.torch.IterableDataset(dataset, batch_size=B, num_frames=CLIP["numFrames"], width=CLIP["width"],
                                      height=CLIP["height"], seed=4)
    try:
        for i, item in enumerate(torch.utils.data.DataLoader(ds, batch_size=None)):
            if i == 1:
                break
        del item
        state = ds.state_dict()
    finally:
        ds.close()
    ds = sluice.torch.IterableDataset(dataset, batch_size=B, num_frames=CLIP["numFrames"], width=CLIP["width"],
                                      height=CLIP["height"], seed=4)
    try:
        ds.load_state_dict(state)
        assert [sha(item["video"]) for item in torch.utils.data.DataLoader(ds, batch_size=None)] == whole[2:]
    finally:
        ds.close()


def reference_sheet(options, out: str, batches: int, html: bool) -> None:
    """The in-process loader's preview (no server), written to ``out``."""
    deno("eval", "import { videoClassificationLoader } from './src/loader/loader.ts';"
         f"await using l = await videoClassificationLoader({{ ...{json.dumps(options)}, log: () => {{}} }});"
         f"const p = await l.preview({{ batches: {batches}, html: {json.dumps(html)} }});"
         f"if ({json.dumps(html)}) await Deno.writeTextFile({json.dumps(out)}, p.html);"
         f"else await Deno.writeFile({json.dumps(out)}, p.png);")


def test_preview_writes_the_in_process_loaders_sheet_and_leaves_the_epochs_alone(dataset, tmp_path):
    options = {"dataset": dataset, "batchSize": B, "clip": CLIP, "sampler": {"seed": 6, "clipsPerVideo": 4}}
    reference_sheet(options, str(tmp_path / "want.png"), 2, False)
    reference_sheet(options, str(tmp_path / "want.html"), 1, True)
    with loader(dataset, seed=6) as l:
        want = run(l, 1)
        l.set_epoch(0)
        got = l.preview(str(tmp_path / "sheet.png"), batches=2)
        assert got["path"] == str(tmp_path / "sheet.png") and got["clips"] == 2 * B
        png = (tmp_path / "sheet.png").read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        assert int.from_bytes(png[16:20], "big") == got["width"] and int.from_bytes(png[20:24], "big") == got["height"]
        assert png == (tmp_path / "want.png").read_bytes()
        cwd = os.getcwd()
        os.chdir(tmp_path)
        try:
            page = l.preview(html=True)
        finally:
            os.chdir(cwd)
        assert page["path"] == str(tmp_path / "preview.html") and page["clips"] == B
        assert (tmp_path / "preview.html").read_text() == (tmp_path / "want.html").read_text()
        assert run(l, 1) == want, "the loader's own epoch 0 is as it was"
        with pytest.raises(ValueError, match="batches must be an integer >= 1"):
            l.preview(batches=0)
