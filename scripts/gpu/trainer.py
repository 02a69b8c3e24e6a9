#!/usr/bin/env python3
"""Phase ``trainer`` of the GPU kit's run: what a PyTorch trainer gets.

- CUDA IPC into this process (CUDA only, no NVDEC): a Deno process exports device memory as sluice's batch slots do
  (scripts/gpu/ipc_export.ts); the client's ``CudaMapping`` opens it and reads the bytes the exporter wrote.
- The same memory as a torch CUDA tensor, without a copy (its ``data_ptr`` is the mapping's address).
- The served trainer feed: ``sluice.Loader(..., decode="nvdec")`` for 2 epochs, BTHWC uint8 and BCTHW float32,
  against the same loader decoding on the CPU (same seed): same labels and clips, PSNR, the server's
  ``copiedBytes`` 0, and each batch a CUDA tensor over its slot in the server's allocation.

Each check appends one JSON line to ``$GPU_RESULT`` as it ends (scripts/gpu/result.ts describes the lines).
"""
from __future__ import annotations

import ctypes
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
KIT = Path(os.environ.get("GPU_KIT", ROOT / ".gpu-kit")).resolve()
RESULT = os.environ.get("GPU_RESULT", "")


def write(line: Dict[str, Any]) -> None:
    text = json.dumps(line, default=str)
    if RESULT:
        with open(RESULT, "a") as f:
            f.write(text + "\n")
    else:
        print(text)


def outcome(status: str, reason: str = "", **figures: Any) -> Dict[str, Any]:
    out: Dict[str, Any] = {"status": status, "figures": figures}
    if reason:
        out["reason"] = reason
    return out


def check(name: str, fn: Callable[[], Dict[str, Any]]) -> Dict[str, Any]:
    write({"running": name})
    t0 = time.monotonic()
    try:
        out = fn()
    except Exception as e:  # a failed check never stops the phase
        out = outcome("fail", f"{type(e).__name__}: {e}"[:600])
    write({"check": name, **out, "seconds": round(time.monotonic() - t0, 2)})
    print(f"gpu: {name}: {out['status']}" + (f" ({out['reason']})" if out.get("reason") else ""), file=sys.stderr)
    return out


def library_missing(env: str, soname: str) -> str:
    """Why ``soname`` (or ``$env``) cannot be loaded here, '' when it can."""
    path = os.environ.get(env) or soname
    try:
        ctypes.CDLL(path)
        return ""
    except OSError as e:
        return f"{path}: {e}"


def torch_cuda() -> str:
    """'' when torch has CUDA here, else why not."""
    try:
        import torch
    except ImportError as e:
        return f"torch is not installed ({e})"
    if not torch.cuda.is_available():
        return f"torch {torch.__version__} has no CUDA here"
    return ""


def dataset_size() -> tuple:
    """The kit's dataset frame size (kit.json records sluice make-dataset's options)."""
    words = json.loads((KIT / "kit.json").read_text())["dataset"].split()
    return int(words[words.index("--width") + 1]), int(words[words.index("--height") + 1])


def psnr(a, b) -> float:
    import numpy as np

    d = a.astype(np.float64) - b.astype(np.float64)
    mse = float(np.mean(d * d))
    return math.inf if mse == 0 else 10 * math.log10(255 * 255 / mse)


def db(x: float) -> Any:
    return "inf" if math.isinf(x) else round(x, 2)


def ipc() -> None:
    state: Dict[str, Any] = {}

    def export() -> Dict[str, Any]:
        missing = library_missing("SLUICE_LIBCUDA", "libcuda.so.1")
        if missing:
            return outcome("skip", f"no CUDA driver: {missing}")
        import numpy as np
        from sluice._cuda import CudaArray, CudaMapping

        size = 1 << 20
        deno = os.environ.get("SLUICE_DENO", "deno")
        proc = subprocess.Popen([deno, "run", "--allow-all", "--no-lock", str(ROOT / "scripts/gpu/ipc_export.ts"),
                                 str(size)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT)
        state["proc"] = proc
        line = proc.stdout.readline().decode()
        if not line:
            proc.wait(10)
            return outcome("fail", f"the exporter exited with {proc.returncode} before printing its handle")
        d = json.loads(line)
        mapping = CudaMapping(d["handle"], d["size"], d["device"])
        arr = CudaArray(mapping, 0, (size,), "|u1")
        want = (np.arange(size, dtype=np.int64) * 31 + 7) % 251
        got = np.frombuffer(arr.to_bytes(), dtype=np.uint8)
        state["arr"], state["want"] = arr, want
        same = bool(np.array_equal(got, want))
        return outcome("pass" if same else "fail", "" if same else "the mapped bytes differ from the exporter's",
                       bytes=size, device=d["device"])

    def into_torch() -> Dict[str, Any]:
        if "arr" not in state:
            return outcome("skip", "no IPC mapping (the check before)")
        why = torch_cuda()
        if why:
            return outcome("skip", why)
        import torch

        arr = state["arr"]
        t = torch.as_tensor(arr, device=f"cuda:{arr.device}")
        zero_copy = t.data_ptr() == arr.ptr
        same = bool((t.cpu().numpy().astype("int64") == state["want"]).all())
        total = int(t.to(torch.int64).sum().item())  # a kernel reading the mapping on the device
        ok = zero_copy and same and total == int(state["want"].sum())
        return outcome("pass" if ok else "fail", "" if ok else
                       f"zero copy {zero_copy}, bytes equal {same}, device sum {total} vs {int(state['want'].sum())}",
                       zeroCopy=zero_copy, torch=torch.__version__, device=torch.cuda.get_device_name(arr.device))

    try:
        check("CUDA IPC into this process", export)
        check("CUDA IPC into a torch CUDA tensor", into_torch)
    finally:
        state.pop("arr", None)
        proc = state.get("proc")
        if proc:
            proc.stdin.close()
            proc.wait(20)


def served() -> None:
    import numpy as np

    import sluice

    nvdec = library_missing("SLUICE_LIBNVCUVID", "libnvcuvid.so.1")
    cuda_torch = torch_cuda()
    width, height = dataset_size()
    common = dict(batch_size=4, num_frames=8, width=width, height=height, seed=7)

    def host(video) -> "np.ndarray":
        """A batch's pixels on the host (the check's own copy; the feed itself copies nothing)."""
        if hasattr(video, "is_cuda"):
            return video.cpu().numpy()
        if hasattr(video, "to_bytes"):
            dtype = np.float32 if video.typestr == "<f4" else np.uint8
            return np.frombuffer(video.to_bytes(), dtype=dtype).reshape(video.shape)
        return np.asarray(video).copy()

    def epochs(decode: str, layout: str, clip: Dict[str, Any]) -> Dict[str, Any]:
        out: Dict[str, Any] = {"batches": [], "zeroCopy": True, "cuda": True}
        with sluice.Loader(str(KIT / "dataset"), decode=decode, layout=layout, clip=clip, **common) as loader:
            for _ in range(2):
                for b in loader:
                    v = b.video
                    if decode == "nvdec":
                        slots = loader._session.slots
                        want = slots.mem.base + b.slot * slots.slot_bytes
                        ptr = v.data_ptr() if hasattr(v, "data_ptr") else v.__cuda_array_interface__["data"][0]
                        out["zeroCopy"] = out["zeroCopy"] and ptr == want
                        out["cuda"] = out["cuda"] and bool(getattr(v, "is_cuda", False))
                    out["batches"].append({"labels": [int(x) for x in b.labels],
                                           "clips": [(c["video"], c["start"], list(c["pts"])) for c in b.clips],
                                           "data": host(v)})
                    del b, v
            out["copiedBytes"] = loader.stats()["session"]["copiedBytes"]
            out["decoder"] = loader.decoder
        return out

    for layout, clip in (("BTHWC", {}), ("BCTHW", {"dtype": "float32", "mean": [0.45] * 3, "std": [0.225] * 3})):
        what = f"{layout} {clip.get('dtype', 'uint8')}"

        def run() -> Dict[str, Any]:
            if nvdec:
                return outcome("skip", f"no NVDEC: {nvdec}")
            cpu = epochs("cpu", layout, clip)
            gpu = epochs("nvdec", layout, clip)
            worst = math.inf
            for g, c in zip(gpu["batches"], cpu["batches"]):
                a, b = g["data"], c["data"]
                if a.dtype == np.float32:  # back to the 0-255 scale: PSNR comparable with uint8's
                    a, b = (a * 0.225 + 0.45) * 255, (b * 0.225 + 0.45) * 255
                worst = min(worst, psnr(a, b))
            same = [(g["labels"], g["clips"]) for g in gpu["batches"]] == \
                [(c["labels"], c["clips"]) for c in cpu["batches"]]
            figures = dict(batches=len(gpu["batches"]), cpuBatches=len(cpu["batches"]), worstPsnrDb=db(worst),
                           copiedBytes=gpu["copiedBytes"], zeroCopy=gpu["zeroCopy"], torchCudaTensors=gpu["cuda"],
                           size=f"{width}x{height}", decoder=gpu["decoder"])
            why = []
            if gpu["decoder"] != "nvdec":
                why.append(f"the server decoded with {gpu['decoder']}")
            if not same or len(gpu["batches"]) != len(cpu["batches"]) or not gpu["batches"]:
                why.append("labels or clips differ from the CPU loader's")
            if worst < 40:
                why.append(f"worst batch {db(worst)} dB (bound 40)")
            if gpu["copiedBytes"] != 0:
                why.append(f"copiedBytes {gpu['copiedBytes']}")
            if not gpu["zeroCopy"]:
                why.append("a batch is not at its slot's address in the server's allocation")
            if not cuda_torch and not gpu["cuda"]:
                why.append("torch has CUDA but a batch is not a CUDA tensor")
            return outcome("fail" if why else "pass", "; ".join(why), **figures)

        check(f"served NVDEC feed, 2 epochs, {what}", run)

    if cuda_torch and not nvdec:
        check("served batches as torch CUDA tensors", lambda: outcome(
            "skip", f"{cuda_torch}: the batches stay __cuda_array_interface__ objects (compared above by a host copy)"))

if __name__ == "__main__":
    ipc()
    served()
