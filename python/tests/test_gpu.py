"""GPU batches (decode "nvdec"): slots in device memory exported by CUDA IPC, opened by the client with
cuIpcOpenMemHandle and handed out through __cuda_array_interface__. Runs against sluice's ABI-level
libcuda/libnvcuvid test double (tests/nvdec/double), loaded through SLUICE_LIBCUDA on both sides; the double
maps an exported allocation into the other process, so the bytes the client reads are the server's."""
from __future__ import annotations

import ctypes
import gc
import hashlib

import pytest

import sluice
from conftest import CLIP, reference


@pytest.fixture()
def double_env(nvdouble, monkeypatch):
    monkeypatch.setenv("SLUICE_LIBCUDA", nvdouble)
    monkeypatch.setenv("SLUICE_LIBNVCUVID", nvdouble)
    return {"SLUICE_LIBCUDA": nvdouble, "SLUICE_LIBNVCUVID": nvdouble}


def test_gpu_batches_are_the_inprocess_nvdec_loaders(dataset, double_env, nvdouble):
    opts = {"dataset": dataset, "batchSize": 4, "clip": CLIP, "sampler": {"seed": 7}, "decode": "nvdec"}
    want = reference(opts, 2, env=double_env)
    got = []
    with sluice.Loader(dataset, batch_size=4, num_frames=CLIP["numFrames"], width=CLIP["width"],
                       height=CLIP["height"], seed=7, decode="nvdec") as l:
        assert l.decoder == "nvdec"
        for _ in range(2):
            for b in l:
                v = b.video
                cai = v.__cuda_array_interface__
                assert cai["shape"] == (4, CLIP["numFrames"], CLIP["height"], CLIP["width"], 3)
                assert cai["typestr"] == "|u1" and cai["version"] == 2 and cai["strides"] is None
                ptr, read_only = cai["data"]
                m = l._mem
                assert m.base <= ptr and ptr + v.nbytes <= m.base + m.size and not read_only
                assert ptr == m.base + b.slot * l._slot_bytes
                got.append({"epoch": b.epoch, "index": b.index, "sha": hashlib.sha256(v.to_bytes()).hexdigest(),
                            "labels": b.labels.tolist()})
        del b, v, m
    assert got == [{k: w[k] for k in ("epoch", "index", "sha", "labels")} for w in want]
    # the IPC mapping is closed once the last array is gone
    gc.collect()
    lib = ctypes.CDLL(nvdouble)
    assert lib.nvdouble_live_allocations() == 0


def test_gpu_batches_become_cuda_tensors_when_torch_has_cuda(dataset, double_env):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA here: the batch stays a __cuda_array_interface__ object (tested above)")
    with sluice.Loader(dataset, batch_size=4, num_frames=8, width=64, height=48, decode="nvdec") as l:
        b = next(iter(l))
        assert b.video.is_cuda and b.video.dtype == torch.uint8
