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
                m = l._session.slots.mem
                assert m.base <= ptr and ptr + v.nbytes <= m.base + m.size and not read_only
                assert ptr == m.base + b.slot * l._session.slots.slot_bytes
                got.append({"epoch": b.epoch, "index": b.index, "sha": hashlib.sha256(v.to_bytes()).hexdigest(),
                            "labels": b.labels.tolist()})
        del b, v, m
    assert got == [{k: w[k] for k in ("epoch", "index", "sha", "labels")} for w in want]
    # the IPC mapping is closed once the last array is gone
    gc.collect()
    lib = ctypes.CDLL(nvdouble)
    assert lib.nvdouble_live_allocations() == 0


@pytest.mark.parametrize("copy", [False, True])
def test_gpu_batches_kept_stay_intact_and_hold_their_slots(dataset, double_env, copy):
    """The slot lifetime rule on the CUDA IPC path: a batch kept (list(loader)) holds its slot, so the server
    writes no later batch over it (without torch CUDA there is nothing to copy into: copy=True keeps the view,
    held the same way)."""
    opts = {"dataset": dataset, "batchSize": 4, "clip": CLIP, "sampler": {"seed": 7, "clipsPerVideo": 2},
            "decode": "nvdec"}
    want = reference(opts, 2, env=double_env)  # 6 batches an epoch
    with sluice.Loader(dataset, batch_size=4, num_frames=CLIP["numFrames"], width=CLIP["width"],
                       height=CLIP["height"], seed=7, clips_per_video=2, decode="nvdec", slots=6, copy=copy) as l:
        for epoch in range(2):
            kept = list(l)
            assert [hashlib.sha256(b.video.to_bytes()).hexdigest() for b in kept] == \
                [w["sha"] for w in want if w["epoch"] == epoch]
            assert l.stats()["session"]["ring"]["inUse"] == 6  # every slot held by the list
            del kept
            assert l.stats()["session"]["ring"]["inUse"] == 0  # and released with it


def test_a_gpu_slot_goes_back_only_after_the_device_finished_with_it(dataset, double_env, nvdouble):
    """Kernels queued on a batch may still read it after its last reference is dropped: the client synchronizes
    the context (cuCtxSynchronize, every stream) before it releases a GPU slot."""
    lib = ctypes.CDLL(nvdouble)  # the same library (and counters) the client loaded
    with sluice.Loader(dataset, batch_size=4, num_frames=8, width=64, height=48, decode="nvdec") as l:
        it = iter(l)
        b = next(it)
        before = lib.nvdouble_ctx_synchronizations()
        assert l.stats()["session"]["ring"]["released"] == 0
        assert lib.nvdouble_ctx_synchronizations() == before  # nothing to release, nothing to wait for
        del b, it
        assert l.stats()["session"]["ring"]["released"] == 1
        assert lib.nvdouble_ctx_synchronizations() == before + 1


def test_gpu_batches_become_cuda_tensors_when_torch_has_cuda(dataset, double_env):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA here: the batch stays a __cuda_array_interface__ object (tested above)")
    with sluice.Loader(dataset, batch_size=4, num_frames=8, width=64, height=48, decode="nvdec") as l:
        b = next(iter(l))
        assert b.video.is_cuda and b.video.dtype == torch.uint8
        t = b.video[1:]  # torch.as_tensor keeps the __cuda_array_interface__ object, and so the slot
        del b
        gc.collect()
        assert l.stats()["session"]["ring"]["released"] == 0
        del t
        assert l.stats()["session"]["ring"]["released"] == 1


def test_a_cuda_failure_here_and_one_on_the_server_are_one_class(double_env):
    """A driver call of this process that fails (the double refuses a handle it did not export with
    CUDA_ERROR_INVALID_VALUE, 1) raises the same sluice.errors.CudaError a server's CUDA failure maps to."""
    from sluice._cuda import CudaMapping
    from sluice.errors import CudaError, ServeError, server_error

    with pytest.raises(CudaError) as e:
        CudaMapping("00" * 64, 4096, 0)
    assert (e.value.call, e.value.result, e.value.name) == ("cuIpcOpenMemHandle_v2", 1, "CudaError")
    assert "cuIpcOpenMemHandle_v2 failed with CUresult 1" in str(e.value)
    remote = server_error("CudaError", "cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory",
                          "CudaError")
    assert type(remote) is CudaError and isinstance(remote, ServeError) and remote.call is None


@pytest.mark.parametrize("backend", ["inprocess", "subprocess"])
def test_a_served_nvdec_epoch_never_leaves_the_gpu(dataset, double_env, monkeypatch, tmp_path, backend):
    """The server's slots are its loader's device batch slots: decode Workers write each clip there on the GPU, so
    2 served epochs copy no pixel device-to-host or host-to-device (the server's double reports its byte counters
    and what it still holds when the server exits), copiedBytes is 0, and the batches are the in-process NVDEC
    loader's for BTHWC/BCTHW x uint8/float32 (that loader's match with the CPU's: tests/nvdec/loader_nvdec_test.ts)."""
    for layout in ("BTHWC", "BCTHW"):
        for dtype in ("uint8", "float32"):
            log = tmp_path / f"{backend}-{layout}-{dtype}.log"
            monkeypatch.setenv("NVDOUBLE_LOG", str(log))
            clip = {**CLIP, "dtype": dtype, **({"mean": [0.5, 0.5, 0.5]} if dtype == "float32" else {})}
            opts = {"dataset": dataset, "batchSize": 4, "clip": clip, "sampler": {"seed": 7}, "decode": "nvdec",
                    "layout": layout}
            want = reference(opts, 2, env={**double_env, "NVDOUBLE_LOG": str(tmp_path / "reference.log")})
            got = []
            py_clip = {"dtype": dtype, **({"mean": [0.5, 0.5, 0.5]} if dtype == "float32" else {})}
            with sluice.Loader(dataset, batch_size=4, num_frames=CLIP["numFrames"], width=CLIP["width"],
                               height=CLIP["height"], clip=py_clip, seed=7, decode="nvdec", layout=layout,
                               backend=backend) as l:
                for _ in range(2):
                    for b in l:
                        cai = b.video.__cuda_array_interface__
                        ptr = cai["data"][0]
                        # the tensor's address is its slot's offset in the server's IPC allocation
                        assert ptr == l._session.slots.mem.base + b.slot * l._session.slots.slot_bytes
                        assert cai["typestr"] == ("<f4" if dtype == "float32" else "|u1")
                        got.append(hashlib.sha256(b.video.to_bytes()).hexdigest())
                        del b, cai
                assert l.stats()["session"]["copiedBytes"] == 0
            assert got == [w["sha"] for w in want], f"{layout} {dtype}"
            exits = [line for line in log.read_text().splitlines() if line.startswith("exit ")]
            assert len(exits) == 1, exits  # the server's (this process's double reports when pytest exits)
            assert exits[0].startswith("exit violations=0 primary-retains=0 device-allocations=0 "), exits[0]
            counts = dict(kv.split("=") for kv in exits[0].split()[1:])
            assert (counts["htod"], counts["dtoh"]) == ("0", "0"), exits[0]


def test_the_clients_device_picks_the_servers_gpu(dataset, double_env, nvdouble, monkeypatch):
    """Under torchrun each local rank's server decodes on its own GPU: the client sends its device (LOCAL_RANK's
    by default, tests/test_distributed.py) in its hello and the server's NVDEC loader decodes there and keeps its
    slots there (not the server's own default, device 0 without LOCAL_RANK)."""
    monkeypatch.setenv("NVDOUBLE_DEVICES", "2")  # the server's double
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    lib = ctypes.CDLL(nvdouble)  # this process's double (the client's), configured once already: 2 GPUs now
    lib.nvdouble_configure(None, None, 2, 4096, 4096, 3)
    try:
        with sluice.Loader(dataset, batch_size=4, num_frames=8, width=64, height=48, decode="nvdec",
                           device=1) as l:
            b = next(iter(l))
            assert l._session.slots.mem.device == 1
            assert b.video.__cuda_array_interface__["data"][0] == \
                l._session.slots.mem.base + b.slot * l._session.slots.slot_bytes
            del b
    finally:
        gc.collect()
        lib.nvdouble_configure(None, None, 1, 4096, 4096, 3)


def test_node_ranks_decode_on_their_own_gpus_into_their_own_slots(dataset, double_env, tmp_path):
    """Node mode with NVDEC: 2 ranks of a 2-GPU machine (the double's NVDOUBLE_DEVICES) share one server; each
    decodes on its own GPU (LOCAL_RANK) into that GPU's IPC slots, and gets the in-process NVDEC loader's batches
    of its shard."""
    from test_node import options, results, start_ranks, wait_gone

    env = dict(double_env, NVDOUBLE_DEVICES="2")
    opts = options(decode="nvdec")
    node_dir = str(tmp_path / "sluice-node-gpu")
    got = results(start_ranks([{"dataset": dataset, "options": opts, "epochs": 1, "node": True}] * 2, node_dir,
                              port=29530, extra=env))
    assert len({g["server"] for g in got}) == 1
    for r in range(2):
        want = reference({"dataset": dataset, "batchSize": 2, "clip": CLIP, "decode": "nvdec", "device": r,
                          "sampler": {"seed": 5, "clipsPerVideo": 4, "rank": r, "worldSize": 2}}, 1,
                         env=env)
        assert [b["device"] for b in got[r]["batches"]] == [r] * len(want)
        assert [(b["sha"], b["labels"], b["clips"]) for b in got[r]["batches"]] == \
            [(w["sha"], w["labels"], w["clips"]) for w in want], f"rank {r}"
    wait_gone(node_dir)
