"""A sluice server's ring of batch slots, mapped into this process, and each batch as a tensor viewing its slot.

Host slots are a memfd of the server, opened through ``/proc/<pid>/fd/<fd>`` and mapped with ``mmap`` (no
descriptor stays open); GPU slots are one CUDA allocation opened by IPC (``_cuda.py``). A batch's bytes are
described by one owner object (``__array_interface__`` or ``__cuda_array_interface__``) that every view of the
batch keeps alive, so the session can release the slot when the owner goes (``_session.Session.lease``).
"""
from __future__ import annotations

import mmap
import os
import warnings
from typing import Any, Dict, Optional, Tuple

import numpy as np

from . import _protocol as proto
from .errors import ProtocolError, ServerDiedError

try:  # torch is optional: without it batches are numpy arrays
    import torch
except ImportError:  # pragma: no cover - exercised only where torch is absent
    torch = None  # type: ignore[assignment]


class _SlotView:
    """One batch's bytes in the host slot mapping, as ``__array_interface__``: the array made from it has it as
    its ``base``, and a tensor made from that array (``torch.from_numpy``, views, ``.numpy()``) keeps the array,
    so this object lives exactly as long as anything references the batch's memory."""

    __slots__ = ("__array_interface__", "_mapping", "__weakref__")

    def __init__(self, mapping: np.ndarray, offset: int, shape: Tuple[int, ...], typestr: str) -> None:
        self._mapping = mapping  # keeps the mapping itself alive too
        self.__array_interface__ = {"data": (mapping.ctypes.data + offset, False), "shape": shape,
                                    "typestr": typestr, "version": 3}


class SlotMemory:
    """The server's current ring, mapped here: each ``memory`` message replaces it (:meth:`map`). Batches of an
    earlier mapping stay readable (their views keep it); it is unmapped when the last of them goes."""

    def __init__(self, decoder: str, peer_pid: int) -> None:
        #: ``"cpu"`` (host slots) or ``"nvdec"`` (GPU slots), from the server's welcome.
        self.decoder = decoder
        self._peer_pid = peer_pid
        #: The mapping: an ``mmap`` (host) or a ``CudaMapping`` (GPU); None before the first ``memory`` message.
        self.mem: Any = None
        self._whole: Optional[np.ndarray] = None  # the host mapping as bytes
        #: Slots of the ring, and the distance between slot starts in bytes (0 before the first mapping).
        self.slots = 0
        self.slot_bytes = 0

    def map(self, m: Dict[str, Any]) -> None:
        """Maps the ring a ``memory`` message announces (checked by ``_protocol.check_message``)."""
        mem = m["memory"]
        self.drop()
        if mem["kind"] == "host":
            if self.decoder != "cpu":
                raise ProtocolError("bad-message", "host slots from a server that decodes on the GPU")
            path = f"/proc/{self._peer_pid}/fd/{mem['fd']}"
            try:
                target = os.readlink(path)
            except OSError as e:
                raise ServerDiedError(f"cannot open the server's shared memory {path}: {e}") from None
            if not target.startswith("/memfd:"):
                raise ProtocolError("bad-message", f"{path} is {target}, not a memfd")
            fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
            try:
                if os.fstat(fd).st_size < mem["size"]:
                    raise ProtocolError("bad-message", f"{path} is smaller than the {mem['size']} bytes announced")
                self.mem = mmap.mmap(fd, mem["size"], mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            finally:
                os.close(fd)  # the mapping keeps the memory; no descriptor stays open
            self._whole = np.frombuffer(self.mem, dtype=np.uint8)
        else:
            if self.decoder != "nvdec":
                raise ProtocolError("bad-message", "GPU slots from a server that decodes on the CPU")
            from ._cuda import CudaMapping

            self.mem = CudaMapping(mem["handle"], mem["size"], mem["device"])
        self.slots = m["slots"]
        self.slot_bytes = m["slotBytes"]

    def drop(self) -> None:
        """Forgets the mapping (views of it may remain: it is unmapped when the last of them is gone)."""
        self.mem = None
        self._whole = None

    def owner(self, m: Dict[str, Any]) -> Any:
        """The object describing the bytes of the ``batch`` message ``m`` in its slot."""
        if self.mem is None:
            raise ProtocolError("bad-message", "a batch arrived before the server said where its memory is")
        slot, offset, nbytes = m["slot"], m["offset"], m["nbytes"]
        if slot >= self.slots or offset + nbytes > self.slot_bytes:
            raise ProtocolError("bad-message", f"batch {m['seq']} lies outside slot {slot} ({self.slots} slots)")
        start = slot * self.slot_bytes + offset
        shape = tuple(m["shape"])
        typestr = proto.DTYPES[m["dtype"]][1]
        if self.decoder == "nvdec":
            from ._cuda import CudaArray

            return CudaArray(self.mem, start, shape, typestr)
        assert self._whole is not None
        return _SlotView(self._whole, start, shape, typestr)

    def view(self, owner: Any) -> Any:
        """The batch's ``video`` over ``owner``, keeping it alive: a tensor (``torch.from_numpy`` of the array whose
        base is ``owner``; a numpy array without torch) or, on the GPU, a CUDA tensor (``torch.as_tensor`` holds a
        reference to the ``__cuda_array_interface__`` object) or ``owner`` itself when torch has no CUDA."""
        if self.decoder == "nvdec":
            if not cuda_available():
                return owner
            return torch.as_tensor(owner, device=f"cuda:{self.mem.device}")
        arr = np.asarray(owner)
        return arr if torch is None else torch.from_numpy(arr)

    def can_copy(self) -> bool:
        """Whether a batch can be copied out of its slot here (GPU batches need torch with CUDA)."""
        return self.decoder == "cpu" or cuda_available()

    def copy_out(self, video: Any, pin: bool) -> Any:
        """A copy of ``video`` that views no slot (into pinned memory with ``pin``; CUDA must be available)."""
        if self.decoder == "nvdec":
            return video.clone()
        if torch is None:
            return np.array(video, copy=True)
        out = torch.empty(video.shape, dtype=video.dtype, pin_memory=pin)
        out.copy_(video)
        return out

    def synchronize(self) -> None:
        """Waits for work queued on the device (it may still read a batch) before a GPU slot goes back."""
        if self.decoder == "nvdec" and self.mem is not None:
            self.mem.synchronize()


def cuda_available() -> bool:
    """Whether torch is here and has CUDA."""
    return torch is not None and torch.cuda.is_available()


def pin_possible(pin_memory: bool) -> bool:
    """Whether batches can be copied into pinned memory; warns when it was asked for and cannot be."""
    if pin_memory and not cuda_available():
        warnings.warn("pin_memory=True but CUDA is not available: batches are not pinned", stacklevel=4)
        return False
    return pin_memory


def labels_tensor(labels: Any) -> Any:
    """A batch's labels: an int64 tensor (numpy array without torch)."""
    arr = np.asarray(labels, dtype=np.int64)
    return arr if torch is None else torch.from_numpy(arr)
