"""``sluice.Loader``: batches from a sluice server, as tensors viewing shared memory."""
from __future__ import annotations

import collections
import gc
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
from typing import Any, Deque, Dict, Iterator, List, Optional, Tuple

import numpy as np

from . import _protocol as proto
from ._server import ServerProcess
from .errors import ProtocolError, ServeError, ServerDiedError, SlotsHeldError, SluiceError, server_error

try:  # torch is optional: without it batches are numpy arrays
    import torch as _torch
except ImportError:  # pragma: no cover - exercised only where torch is absent
    _torch = None

__all__ = ["Loader", "Batch"]

CLIENT_NAME = "sluice-python/0.1.0"
#: How often a blocked receive wakes up to check that a spawned server is alive, seconds.
_POLL_S = 0.25
#: How long the next batch waits, once the trainer holds every slot, for another thread to let one go, seconds.
_HELD_WAIT_S = 1.0

#: Keywords a running server (``socket=``) is told or checked against: ``batch_size`` is checked against its
#: batches, ``rank``/``world_size`` choose the shard in the hello, ``decode`` picks the CUDA device.
_SESSION_KEYWORDS = ("batch_size", "rank", "world_size", "decode")


class _SlotView:
    """One batch's bytes in the host slot mapping, as ``__array_interface__``: the array made from it has it as
    its ``base``, and a tensor made from that array (``torch.from_numpy``, views, ``.numpy()``) keeps the array,
    so this object lives exactly as long as anything references the batch's memory. Its finalizer releases the
    slot (see :meth:`Loader._lease`)."""

    __slots__ = ("__array_interface__", "_mapping", "__weakref__")

    def __init__(self, mapping: np.ndarray, offset: int, shape: Tuple[int, ...], typestr: str) -> None:
        self._mapping = mapping  # keeps the mapping itself alive too
        self.__array_interface__ = {"data": (mapping.ctypes.data + offset, False), "shape": shape,
                                    "typestr": typestr, "version": 3}


class Batch:
    """One batch.

    ``video``: ``torch.Tensor`` (numpy array without torch; on the GPU a CUDA tensor, or a
    ``__cuda_array_interface__`` object when torch has no CUDA) shaped ``[B, T, H, W, 3]`` or ``[B, 3, T, H, W]``;
    ``labels``: int64 tensor ``[B]``; ``clips``: one dict per clip (path, video, label, start, end, pts, padded).
    Unless the loader copies (``copy=True``), ``video`` views the server's slot, which stays the trainer's for
    as long as anything references that memory: see :class:`Loader` ("Slot lifetime").
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

    Slot lifetime: a batch's ``video`` views its slot in shared memory, and the slot goes back to the server
    (which then writes a later batch there) only when nothing in this process references that memory any more:
    not the batch, not its ``video`` tensor, nor any view, numpy array or slice of it. So keeping a batch,
    collating several (``DataLoader(ds, batch_size=8)``) or ``list(loader)`` is correct: each batch kept holds
    its slot. The server has ``slots`` (default 4) slots; when the trainer holds all of them, the next batch can
    never come, and asking for it raises :class:`~sluice.errors.SlotsHeldError` (after a ``gc.collect()`` and
    up to 1 s for another thread to drop one) saying how many batches are held. Then keep fewer, copy what you
    keep (``batch.video.clone()``), pass ``copy=True`` (batches arrive copied, into pinned memory with
    ``pin_memory=True``, and their slots are released at once), or raise ``slots``. A plain loop holds one
    batch while the next is made, so the server needs at least 2 slots unless ``copy=True``. Releases are sent
    by the loader itself, the next time it talks to the server (the next batch, ``stats()``, ``close()``).
    ``release_lag`` is accepted for compatibility and ignored (it used to release batches still referenced).

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
        release_lag: Optional[int] = None,
        device: Optional[int] = None,
        timeout: Optional[float] = None,
        **options: Any,
    ) -> None:
        self._sock: Optional[_socket.socket] = None
        self._server: Optional[ServerProcess] = None
        self._closed = False
        self._finalizer: Optional[weakref.finalize] = None
        if release_lag is not None:
            warnings.warn("release_lag is ignored: a batch's slot is released once nothing references the batch "
                          "(see sluice.Loader, 'Slot lifetime')", DeprecationWarning, stacklevel=2)
        self.copy = bool(copy)
        self.pin_memory = bool(pin_memory)
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
        self._frames = proto.FrameReader()
        self._pending: Deque[Dict[str, Any]] = collections.deque()  # the stream, in order
        self._stats: Deque[Dict[str, Any]] = collections.deque()  # replies to stats requests
        # Slots of batches gone, (generation, slot, seq), appended by finalizers: in any thread, at any
        # moment (even inside a send), so they only append here; the loader sends them (_flush_releases).
        self._released: Deque[Tuple[int, int, int]] = collections.deque()
        self._live: Dict[int, int] = {}  # seq → generation, of batches out and not yet released
        self._generation = 0  # counts memory messages: batches of an earlier mapping are no longer the server's
        self._mem: Any = None  # mmap (host) or CudaMapping (GPU)
        self._whole: Optional[np.ndarray] = None  # the host mapping as bytes
        self._slots = 0
        self._slot_bytes = 0
        self._iterating = False
        self._open_epoch: Optional[int] = None
        self._jumped = False
        self._stream_started = False
        self._taken = 0
        try:  # a failure or Ctrl-C anywhere from here on stops the server this loader started
            if socket is None:
                self._server = ServerProcess(self._server_config(dataset, options))
                socket = self._server.socket
            self.socket_path = socket
            self._connect(rank, world_size)
            self._finalizer = weakref.finalize(self, Loader._cleanup, self._server, self._sock)
        except BaseException:
            self.close()
            raise

    # ---- set-up -----------------------------------------------------------------------------------------

    @staticmethod
    def _server_config(dataset: Any, options: Dict[str, Any]) -> Dict[str, Any]:
        """The server's config: the user's keywords as given (the server checks them and names them back)."""
        if isinstance(dataset, os.PathLike) or (isinstance(dataset, str) and not re.match(r"^[a-z]+://", dataset)):
            dataset = os.path.abspath(os.fspath(dataset))  # the server's working directory may differ
        own = [p for p in inspect.signature(Loader.__init__).parameters if p not in ("self", "options")]
        return {"python": dict(options, dataset=dataset), "clientKeywords": own}

    def _connect(self, rank: Optional[int], world_size: Optional[int]) -> None:
        """Connects and says hello (the caller closes the loader if this raises)."""
        self._sock = s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            s.connect(self.socket_path)
        except OSError as e:
            raise SluiceError(f"cannot connect to a sluice server at {self.socket_path}: {e}") from None
        creds = s.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, struct.calcsize("3i"))
        self._peer_pid = struct.unpack("3i", creds)[0]
        hello: Dict[str, Any] = {"type": "hello", "protocol": proto.PROTOCOL_VERSION, "client": CLIENT_NAME}
        if rank is not None and world_size is not None:
            hello["rank"], hello["worldSize"] = rank, world_size
        if self.device is not None:
            hello["device"] = self.device
        self._send(hello)
        w = self._recv(None)
        if w["type"] != "welcome":
            raise ProtocolError("bad-message", f"expected welcome, got {w['type']}")
        if w["protocol"] != proto.PROTOCOL_VERSION:
            raise ServeError(
                "protocol-version",
                f"the server speaks serve protocol {w['protocol']}, this client {proto.PROTOCOL_VERSION}",
            )
        if w["pid"] != self._peer_pid:
            raise ProtocolError("bad-message", f"welcome names pid {w['pid']}, the socket's peer is {self._peer_pid}")
        want_b = self._want_batch_size
        if want_b is not None and want_b != w["batchSize"]:
            raise ValueError(f"batch_size={want_b} but the server's batches hold {w['batchSize']} clips")
        if not self.copy and w["slots"] < 2:
            raise ValueError(
                f"the server has {w['slots']} slot: at least 2 are needed unless copy=True (a loop holds its batch "
                "while the server fills the next slot)"
            )
        self.welcome = w
        self.batch_size: int = w["batchSize"]
        self.rank: int = w["rank"]
        self.world_size: int = w["worldSize"]
        self.decoder: str = w["decoder"]
        self._next_epoch: int = w["nextEpoch"]
        self._server_next: int = w["nextEpoch"]  # the epoch the server's loader runs next unless asked to jump

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
        self._send({"type": "epoch", "epoch": epoch})
        # A jump rebuilds the server's loader, and with it the ring its batches are in: until this epoch's
        # stream starts, batches held now may turn out not to hold any slot of it.
        self._jumped = epoch != self._server_next
        self._server_next = epoch + 1
        self._stream_started = False
        self._taken = 0  # batches of this epoch handed out
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
        """Closes the connection (the server frees every slot of this client) and stops a server this loader
        started. Batches still referenced stay readable: the mapping goes when the last of them does, and the
        server writes no more into it. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._sock is not None and getattr(self, "welcome", None) is not None:
            try:
                self._sock.sendall(proto.encode({"type": "bye"}))
            except OSError:
                pass
        if self._finalizer is not None:
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
                m = self._recv(self.timeout, stream=True)
                t = m["type"]
                if t == "batch":
                    if m["epoch"] != epoch:  # left over from an abandoned epoch: never handed out
                        self._send({"type": "release", "slot": m["slot"], "seq": m["seq"], "unused": True})
                        continue
                    batch = self._batch(m)
                    self._taken += 1
                    yield batch
                    batch = None  # this frame's reference: the slot goes when the trainer's go
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
        typestr = proto.DTYPES[m["dtype"]][1]
        if self.decoder == "nvdec":
            from ._cuda import CudaArray

            owner: Any = CudaArray(self._mem, start, shape, typestr)
        else:
            assert self._whole is not None
            owner = _SlotView(self._whole, start, shape, typestr)
        release = self._lease(owner, slot, m["seq"])
        video = self._view(owner)
        del owner
        if self.copy and (self.decoder == "cpu" or (_torch is not None and _torch.cuda.is_available())):
            video = self._copied(video)  # the view is gone: nothing can read the slot any more
            release()
        labels = np.asarray(m["labels"], dtype=np.int64)
        return Batch(video, labels if _torch is None else _torch.from_numpy(labels), m["clips"], m["epoch"],
                     m["index"], slot, m["seq"])

    def _lease(self, owner: Any, slot: int, seq: int) -> weakref.finalize:
        """Makes ``owner`` (the object every view of the batch keeps alive) hold the slot: its finalizer queues the
        slot's release. Returns the finalizer (calling it releases at once: only when nothing else can view the
        slot)."""
        self._live[seq] = self._generation
        fin = weakref.finalize(owner, self._released.append, (self._generation, slot, seq))
        fin.atexit = False
        return fin

    def _view(self, owner: Any) -> Any:
        """The batch's ``video`` over ``owner``, keeping it alive: a tensor (``torch.from_numpy`` of the array whose
        base is ``owner``; a numpy array without torch) or, on the GPU, a CUDA tensor (``torch.as_tensor`` holds a
        reference to the ``__cuda_array_interface__`` object) or ``owner`` itself when torch has no CUDA."""
        if self.decoder == "nvdec":
            if _torch is None or not _torch.cuda.is_available():
                return owner
            return _torch.as_tensor(owner, device=f"cuda:{self._mem.device}")
        arr = np.asarray(owner)
        return arr if _torch is None else _torch.from_numpy(arr)

    def _copied(self, video: Any) -> Any:
        if self.decoder == "nvdec":
            return video.clone()
        if _torch is None:
            return np.array(video, copy=True)
        pin = self.pin_memory and _torch.cuda.is_available()
        if self.pin_memory and not pin:
            warnings.warn("pin_memory=True but CUDA is not available: batches are not pinned", stacklevel=4)
            self.pin_memory = False
        out = _torch.empty(video.shape, dtype=video.dtype, pin_memory=pin)
        out.copy_(video)
        return out

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
            self._whole = np.frombuffer(self._mem, dtype=np.uint8)
        else:
            if self.decoder != "nvdec":
                raise ProtocolError("bad-message", "GPU slots from a server that decodes on the CPU")
            from ._cuda import CudaMapping

            self._mem = CudaMapping(mem["handle"], mem["size"], mem["device"])
        self._slots = m["slots"]
        self._slot_bytes = m["slotBytes"]
        # Batches of the previous mapping no longer hold the server's slots (it replaced that ring): they stay
        # readable, and their releases are not sent.
        self._generation += 1
        self._live.clear()

    def _drop_memory(self) -> None:
        # Tensors may still view the mapping: it is unmapped when the last of them is gone, not here.
        self._mem = None
        self._whole = None

    # ---- socket -----------------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise SluiceError("this loader is closed")

    def _send(self, message: Dict[str, Any]) -> None:
        """Sends ``message`` after the releases queued so far."""
        self._flush_releases()
        self._send_raw(message)

    def _send_raw(self, message: Dict[str, Any]) -> None:
        assert self._sock is not None
        try:
            self._sock.sendall(proto.encode(message))
        except OSError as e:
            raise self._died(f"sending to the server failed ({e})") from None

    def _flush_releases(self) -> None:
        """Sends the releases the finalizers of batches queued (only this thread, never a finalizer, writes)."""
        q = self._released
        synced = False
        while q:
            generation, slot, seq = q[0]  # taken off once sent: an interrupted flush loses no release
            if generation == self._generation and not self._closed:
                if self.decoder == "nvdec" and not synced:  # kernels queued on the batch may still read it
                    self._mem.synchronize()
                    synced = True
                self._send_raw({"type": "release", "slot": slot, "seq": seq})
            q.popleft()
            self._live.pop(seq, None)

    def _held(self) -> int:
        """Slots of the current mapping this process still holds (batches referenced, releases not yet sent)."""
        self._flush_releases()
        return len(self._live)

    def _all_held(self) -> SlotsHeldError:
        n = len(self._live)
        return SlotsHeldError(
            f"all {self._slots} slots of the sluice server hold batches this process still references ({n} "
            "batches: a list of batches, a DataLoader collating several, a batch kept from an earlier step…), so "
            "the next batch can never come. Keep fewer (drop each batch when its step is done), copy what you keep "
            f"(batch.video.clone()), pass copy=True (batches copied out of their slots), or raise slots (slots={n + 1}"
            " or more). A slot is released when nothing references its batch any more: see sluice.Loader, "
            "'Slot lifetime'.",
            held=n,
            slots=self._slots,
        )

    def _died(self, what: str) -> SluiceError:
        if self._server is not None:
            return self._server.died(what)
        return ServerDiedError(f"{what}: the sluice server at {self.socket_path} went away")

    def _recv(self, timeout: Optional[float], want_stats: bool = False, stream: bool = False) -> Dict[str, Any]:
        """The next message of the stream (welcome, batches, epoch ends; ``memory`` is mapped on the way, in
        order), or with ``want_stats`` the next stats reply. Raises on server death, protocol damage, an error
        message, when ``timeout`` passes without a message, or (``stream``: waiting for a batch) when this
        process holds every slot."""
        deadline = None if timeout is None else time.monotonic() + timeout
        queue = self._stats if want_stats else self._pending
        while True:
            self._flush_releases()
            while queue:
                m = queue.popleft()
                if m["type"] == "memory":
                    self._map(m)
                    continue
                return m
            self._fill(deadline, timeout, stream)

    def _fill(self, deadline: Optional[float], timeout: Optional[float], stream: bool = False) -> None:
        """Waits for bytes and queues the messages they complete, sending queued releases meanwhile; an ``error``
        message is raised at once (the server hangs up after it)."""
        assert self._sock is not None
        collected = False
        held_until: Optional[float] = None
        while True:
            wait = _POLL_S if deadline is None else max(0.0, min(_POLL_S, deadline - time.monotonic()))
            held = self._held()  # sends queued releases too
            if (stream and self._slots > 0 and held >= self._slots and (self._stream_started or not self._jumped)
                    and self._taken < len(self)):
                # The next batch cannot come (only the epoch's end needs no slot): unless a batch held only by a
                # reference cycle (a traceback) or by another thread goes soon, say so rather than wait forever.
                if not collected:
                    collected = True
                    gc.collect()
                    continue
                now = time.monotonic()
                if held_until is None:
                    held_until = now + _HELD_WAIT_S
                elif now >= held_until:
                    raise self._all_held()
                wait = min(wait, 0.02)
            else:
                held_until = None
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
                    t = m["type"]
                    if t == "error":
                        raise server_error(m["code"], m["message"], m.get("name"))
                    if t == "memory" or (t == "batch" and m["epoch"] == self._open_epoch):
                        self._stream_started = True
                    (self._stats if t == "stats" else self._pending).append(m)
                return
            if self._server is not None and not self._server.alive():
                raise self._died("the server stopped")
            if deadline is not None and time.monotonic() >= deadline:
                raise SluiceError(f"no message from the sluice server within {timeout} s")
