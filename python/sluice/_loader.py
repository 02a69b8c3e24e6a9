"""``sluice.Loader``: batches from a sluice server, as tensors viewing shared memory."""
from __future__ import annotations

import collections
import inspect
import mmap
import os
import re
import select
import socket as _socket
import struct
import time
import warnings
import weakref
from typing import Any, Deque, Dict, Iterator, List, Optional

import numpy as np

from . import _protocol as proto
from ._server import ServerProcess
from .errors import ProtocolError, ServeError, ServerDiedError, SluiceError, server_error

try:  # torch is optional: without it batches are numpy arrays
    import torch as _torch
except ImportError:  # pragma: no cover - exercised only where torch is absent
    _torch = None

__all__ = ["Loader", "Batch"]

CLIENT_NAME = "sluice-python/0.1.0"
#: How often a blocked receive wakes up to check that a spawned server is alive, seconds.
_POLL_S = 0.25

#: Keywords a running server (``socket=``) is told or checked against: ``batch_size`` is checked against its
#: batches, ``rank``/``world_size`` choose the shard in the hello, ``decode`` picks the CUDA device.
_SESSION_KEYWORDS = ("batch_size", "rank", "world_size", "decode")


class Batch:
    """One batch.

    ``video``: ``torch.Tensor`` (numpy array without torch; on the GPU a CUDA tensor, or a
    ``__cuda_array_interface__`` object when torch has no CUDA) shaped ``[B, T, H, W, 3]`` or ``[B, 3, T, H, W]``;
    ``labels``: int64 tensor ``[B]``; ``clips``: one dict per clip (path, video, label, start, end, pts, padded).
    Unless the loader copies (``copy=True``), ``video`` views the server's slot: see :class:`Loader` for how long.
    """

    __slots__ = ("video", "labels", "clips", "epoch", "index", "slot", "seq", "__weakref__")

    def __init__(self, video: Any, labels: Any, clips: List[Dict[str, Any]], epoch: int, index: int, slot: int,
                 seq: int) -> None:
        self.video = video
        self.labels = labels
        self.clips = clips
        self.epoch = epoch
        self.index = index
        self.slot = slot
        self.seq = seq

    def __len__(self) -> int:
        return len(self.clips)

    def __repr__(self) -> str:
        shape = tuple(getattr(self.video, "shape", ()))
        return f"Batch(epoch={self.epoch}, index={self.index}, video={shape}, labels={len(self.clips)})"


class Loader:
    """Batches of labelled clips from a sluice batch server, zero-copy.

    ``Loader(dataset, batch_size=8, num_frames=16, width=112, height=112)`` starts a server for ``dataset`` (a
    directory tree, a CSV/JSONL manifest or its URL) and stops it on :meth:`close`, at the end of a ``with``
    block, or when the interpreter exits. ``Loader(socket=PATH)`` connects to a running ``sluice serve``
    instead. ``**options`` are the loader's, in snake_case (``num_frames``, ``buffer_size=4``, ``shuffle=False``,
    ``clip={"dtype": "float32"}``, ``concurrency={"decode": 2}``…; the table of keywords with their types and
    defaults is in python/README.md). They go to the server as given: it checks them, once, and an unknown or
    misspelled one, at any depth, raises :class:`~sluice.errors.InvalidArgumentError` from ``Loader(...)``
    naming it and the closest valid keyword.

    Slot lifetime: a batch's ``video`` views its slot in shared memory, which the server reuses for a later
    batch once the slot is released. The loader releases batch *i* when the loop takes batch *i + release_lag*
    (default 2: the batch of this step and of the previous one stay valid). Keep a batch longer by copying it
    (``batch.video.clone()``), or pass ``copy=True`` to receive batches already copied (one copy, into pinned
    memory with ``pin_memory=True``) whose slots are released at once. Batches still held when an epoch ends are
    released when the next epoch starts or the loader closes.

    Distributed: ``rank`` and ``world_size`` default to the ``RANK`` and ``WORLD_SIZE`` environment variables
    (torchrun sets them), so each rank gets its own shard with no extra code; :meth:`set_epoch` works like
    ``DistributedSampler.set_epoch``. Without it, each iteration runs the next epoch.

    Failure: if the server dies, iteration raises :class:`~sluice.errors.ServerDiedError` at once (within
    ``0.25`` s for a server this loader started); ``timeout`` (seconds, default none) bounds the wait for any one
    batch.
    """

    def __init__(
        self,
        dataset: Optional[str] = None,
        *,
        socket: Optional[str] = None,
        copy: bool = False,
        pin_memory: bool = False,
        release_lag: int = 2,
        device: Optional[int] = None,
        timeout: Optional[float] = None,
        **options: Any,
    ) -> None:
        self._sock: Optional[_socket.socket] = None
        self._server: Optional[ServerProcess] = None
        self._closed = False
        if not isinstance(release_lag, int) or release_lag < 1:
            raise ValueError(f"release_lag must be an integer >= 1, got {release_lag!r}")
        self.copy = bool(copy)
        self.pin_memory = bool(pin_memory)
        self.release_lag = release_lag
        self.timeout = timeout
        env = os.environ
        rank, world_size = options.get("rank"), options.get("world_size")
        if rank is None and world_size is None and "RANK" in env and "WORLD_SIZE" in env:
            rank, world_size = int(env["RANK"]), int(env["WORLD_SIZE"])
        if device is None and options.get("decode") in ("nvdec", "auto"):
            device = int(env.get("LOCAL_RANK", "0"))
        self.device = device
        self._want_batch_size = options.get("batch_size")
        if socket is None:
            if dataset is None:
                raise ValueError("give a dataset (to start a server) or socket= (to connect to one)")
            self._server = ServerProcess(self._server_config(dataset, options))
            socket = self._server.socket
        elif dataset is not None:
            raise ValueError("give either a dataset (to start a server) or socket= (to connect to one), not both")
        else:
            if (rank is None) != (world_size is None):
                raise ValueError("rank and world_size go together (the server is told both)")
            ignored = sorted(set(options) - set(_SESSION_KEYWORDS))
            if ignored:
                raise ValueError(
                    f"{', '.join(ignored)}: a running server's own options apply (pass them to `sluice serve`); "
                    f"with socket= only {', '.join(_SESSION_KEYWORDS)} are used"
                )
        self.socket_path = socket
        self._frames = proto.FrameReader()
        self._pending: Deque[Dict[str, Any]] = collections.deque()  # the stream, in order
        self._stats: Deque[Dict[str, Any]] = collections.deque()  # replies to stats requests
        self._held: Deque[Batch] = collections.deque()
        self._mem: Any = None  # mmap (host) or CudaMapping (GPU)
        self._slots = 0
        self._slot_bytes = 0
        self._iterating = False
        self._open_epoch: Optional[int] = None
        self._finalizer = weakref.finalize(self, Loader._cleanup, self._server, None)
        self._connect(rank, world_size)
        self._finalizer.detach()
        self._finalizer = weakref.finalize(self, Loader._cleanup, self._server, self._sock)

    # ---- set-up -----------------------------------------------------------------------------------------

    @staticmethod
    def _server_config(dataset: Any, options: Dict[str, Any]) -> Dict[str, Any]:
        """The server's config: the user's keywords as given (the server checks them and names them back)."""
        if isinstance(dataset, os.PathLike) or (isinstance(dataset, str) and not re.match(r"^[a-z]+://", dataset)):
            dataset = os.path.abspath(os.fspath(dataset))  # the server's working directory may differ
        own = [p for p in inspect.signature(Loader.__init__).parameters if p not in ("self", "options")]
        return {"python": dict(options, dataset=dataset), "clientKeywords": own}

    def _connect(self, rank: Optional[int], world_size: Optional[int]) -> None:
        s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            s.connect(self.socket_path)
        except OSError as e:
            s.close()
            if self._server is not None:
                self._server.stop()
            raise SluiceError(f"cannot connect to a sluice server at {self.socket_path}: {e}") from None
        self._sock = s
        creds = s.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, struct.calcsize("3i"))
        self._peer_pid = struct.unpack("3i", creds)[0]
        hello: Dict[str, Any] = {"type": "hello", "protocol": proto.PROTOCOL_VERSION, "client": CLIENT_NAME}
        if rank is not None and world_size is not None:
            hello["rank"], hello["worldSize"] = rank, world_size
        if self.device is not None:
            hello["device"] = self.device
        try:
            self._send(hello)
            w = self._recv(None)
        except BaseException:
            self.close()
            raise
        if w["type"] != "welcome":
            self.close()
            raise ProtocolError("bad-message", f"expected welcome, got {w['type']}")
        if w["protocol"] != proto.PROTOCOL_VERSION:
            self.close()
            raise ServeError(
                "protocol-version",
                f"the server speaks serve protocol {w['protocol']}, this client {proto.PROTOCOL_VERSION}",
            )
        if w["pid"] != self._peer_pid:
            self.close()
            raise ProtocolError("bad-message", f"welcome names pid {w['pid']}, the socket's peer is {self._peer_pid}")
        want_b = self._want_batch_size
        if want_b is not None and want_b != w["batchSize"]:
            self.close()
            raise ValueError(f"batch_size={want_b} but the server's batches hold {w['batchSize']} clips")
        if not self.copy and w["slots"] <= self.release_lag:
            self.close()
            raise ValueError(
                f"the server's slots ({w['slots']}) must exceed release_lag ({self.release_lag}): the loop holds "
                "release_lag batches while the server fills the next slot"
            )
        self.welcome = w
        self.batch_size: int = w["batchSize"]
        self.rank: int = w["rank"]
        self.world_size: int = w["worldSize"]
        self.decoder: str = w["decoder"]
        self._next_epoch: int = w["nextEpoch"]

    # ---- public API -------------------------------------------------------------------------------------

    def __len__(self) -> int:
        """Batches per epoch (of this rank)."""
        return int(self.welcome["batchesPerEpoch"])

    @property
    def clips_per_epoch(self) -> int:
        return int(self.welcome["clipsPerEpoch"])

    @property
    def epoch(self) -> int:
        """The epoch the next iteration runs."""
        return self._next_epoch

    def set_epoch(self, epoch: int) -> None:
        """Makes the next iteration run ``epoch`` (like ``DistributedSampler.set_epoch``)."""
        if not isinstance(epoch, int) or epoch < 0:
            raise ValueError(f"epoch must be an integer >= 0, got {epoch!r}")
        self._next_epoch = epoch

    def __iter__(self) -> Iterator[Batch]:
        self._check_open()
        if self._iterating:
            raise SluiceError("this loader is already being iterated (one epoch at a time)")
        epoch = self._next_epoch
        self._next_epoch = epoch + 1
        self._release_held()
        self._send({"type": "epoch", "epoch": epoch})
        self._iterating = True
        self._open_epoch = epoch
        return self._epoch(epoch)

    def stats(self) -> Dict[str, Any]:
        """The server's statistics: ``session`` (clips/s, batches, slot ring) and ``loader`` (pipeline stats
        with ``bottleneck``, per-stage failures, backend child)."""
        self._check_open()
        self._send({"type": "stats"})
        return self._recv(self.timeout, want_stats=True)["stats"]

    def close(self) -> None:
        """Releases every slot, closes the connection and stops a server this loader started. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._held.clear()
        if self._sock is not None:
            try:
                self._sock.sendall(proto.encode({"type": "bye"}))
            except OSError:
                pass
        self._finalizer.detach()
        Loader._cleanup(self._server, self._sock)
        self._drop_memory()

    def __enter__(self) -> "Loader":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @staticmethod
    def _cleanup(server: Optional[ServerProcess], sock: Optional[_socket.socket]) -> None:
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass
        if server is not None:
            server.stop()

    # ---- epochs -----------------------------------------------------------------------------------------

    def _epoch(self, epoch: int) -> Iterator[Batch]:
        try:
            while True:
                m = self._recv(self.timeout)
                t = m["type"]
                if t == "batch":
                    if m["epoch"] != epoch:  # left over from an abandoned epoch
                        self._send_release(m["slot"], m["seq"])
                        continue
                    batch = self._batch(m)
                    if self.copy:
                        self._send_release(m["slot"], m["seq"])
                    else:
                        self._held.append(batch)
                        while len(self._held) > self.release_lag:
                            old = self._held.popleft()
                            self._send_release(old.slot, old.seq)
                    yield batch
                elif t == "epoch-end":
                    if m["epoch"] == epoch:
                        self._open_epoch = None
                        return
        finally:
            self._iterating = False

    def _batch(self, m: Dict[str, Any]) -> Batch:
        if self._mem is None:
            raise ProtocolError("bad-message", "a batch arrived before the server said where its memory is")
        slot, offset, nbytes = m["slot"], m["offset"], m["nbytes"]
        if slot >= self._slots or offset + nbytes > self._slot_bytes:
            raise ProtocolError("bad-message", f"batch {m['seq']} lies outside slot {slot} ({self._slots} slots)")
        start = slot * self._slot_bytes + offset
        shape = tuple(m["shape"])
        dtype = m["dtype"]
        if self.decoder == "nvdec":
            video = self._cuda_video(start, shape, dtype)
        else:
            size, typestr = proto.DTYPES[dtype]
            arr = np.frombuffer(self._mem, dtype=np.dtype(typestr), count=nbytes // size, offset=start).reshape(shape)
            video = arr if _torch is None else _torch.from_numpy(arr)
            if self.copy:
                video = self._copied(video)
        labels = np.asarray(m["labels"], dtype=np.int64)
        return Batch(video, labels if _torch is None else _torch.from_numpy(labels), m["clips"], m["epoch"],
                     m["index"], slot, m["seq"])

    def _copied(self, video: Any) -> Any:
        if _torch is None:
            return np.array(video, copy=True)
        pin = self.pin_memory and _torch.cuda.is_available()
        if self.pin_memory and not pin:
            warnings.warn("pin_memory=True but CUDA is not available: batches are not pinned", stacklevel=3)
            self.pin_memory = False
        out = _torch.empty(video.shape, dtype=video.dtype, pin_memory=pin)
        out.copy_(video)
        return out

    def _cuda_video(self, start: int, shape: tuple, dtype: str) -> Any:
        from ._cuda import CudaArray

        arr = CudaArray(self._mem, start, shape, proto.DTYPES[dtype][1])
        if _torch is not None and _torch.cuda.is_available():
            t = _torch.as_tensor(arr, device=f"cuda:{self._mem.device}")
            return t.clone() if self.copy else t
        return arr

    # ---- memory -----------------------------------------------------------------------------------------

    def _map(self, m: Dict[str, Any]) -> None:
        mem = m["memory"]
        self._drop_memory()
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
                self._mem = mmap.mmap(fd, mem["size"], mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            finally:
                os.close(fd)  # the mapping keeps the memory; no descriptor stays open
        else:
            if self.decoder != "nvdec":
                raise ProtocolError("bad-message", "GPU slots from a server that decodes on the CPU")
            from ._cuda import CudaMapping

            self._mem = CudaMapping(mem["handle"], mem["size"], mem["device"])
        self._slots = m["slots"]
        self._slot_bytes = m["slotBytes"]

    def _drop_memory(self) -> None:
        # Tensors may still view the mapping: it is unmapped when the last of them is gone, not here.
        self._mem = None

    # ---- socket -----------------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise SluiceError("this loader is closed")

    def _send(self, message: Dict[str, Any]) -> None:
        assert self._sock is not None
        try:
            self._sock.sendall(proto.encode(message))
        except OSError as e:
            raise self._died(f"sending to the server failed ({e})") from None

    def _send_release(self, slot: int, seq: int) -> None:
        self._send({"type": "release", "slot": slot, "seq": seq})

    def _release_held(self) -> None:
        while self._held:
            b = self._held.popleft()
            self._send_release(b.slot, b.seq)

    def _died(self, what: str) -> SluiceError:
        if self._server is not None:
            return self._server.died(what)
        return ServerDiedError(f"{what}: the sluice server at {self.socket_path} went away")

    def _recv(self, timeout: Optional[float], want_stats: bool = False) -> Dict[str, Any]:
        """The next message of the stream (welcome, batches, epoch ends; ``memory`` is mapped on the way, in
        order), or with ``want_stats`` the next stats reply. Raises on server death, protocol damage, an error
        message, or when ``timeout`` passes without a message."""
        deadline = None if timeout is None else time.monotonic() + timeout
        queue = self._stats if want_stats else self._pending
        while True:
            while queue:
                m = queue.popleft()
                if m["type"] == "memory":
                    self._map(m)
                    continue
                return m
            self._fill(deadline, timeout)

    def _fill(self, deadline: Optional[float], timeout: Optional[float]) -> None:
        """Waits for bytes and queues the messages they complete; an ``error`` message is raised at once (the
        server hangs up after it)."""
        assert self._sock is not None
        while True:
            wait = _POLL_S if deadline is None else max(0.0, min(_POLL_S, deadline - time.monotonic()))
            ready, _, _ = select.select([self._sock], [], [], wait)
            if ready:
                try:
                    chunk = self._sock.recv(1 << 20)
                except OSError as e:
                    raise self._died(f"the connection to the server broke ({e})") from None
                if not chunk:
                    raise self._died("the server closed the connection")
                for raw in self._frames.push(chunk):
                    m = proto.check_message(raw)
                    if m["type"] == "error":
                        raise server_error(m["code"], m["message"], m.get("name"))
                    (self._stats if m["type"] == "stats" else self._pending).append(m)
                return
            if self._server is not None and not self._server.alive():
                raise self._died("the server stopped")
            if deadline is not None and time.monotonic() >= deadline:
                raise SluiceError(f"no message from the sluice server within {timeout} s")
