"""``sluice.Loader``: batches from a sluice server, as tensors viewing shared memory.

A thin façade: the server it starts (``_server.py``), the connection and its slot credits (``_session.py``),
and the slots mapped here (``_slots.py``) do the work.
"""
from __future__ import annotations

import inspect
import os
import re
import time
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Literal, Optional, Sequence, Union

from . import _node
from . import _keywords
from . import _signature
from ._server import ServerProcess
from ._session import Session
from ._slots import labels_tensor, pin_possible
from ._waits import DataWaits

if TYPE_CHECKING:
    from ._node import NodeConnection
from .errors import SluiceError

__all__ = ["Loader", "Batch", "Stats"]

#: Keywords a running server (``socket=``) is told or checked against: ``batch_size`` is checked against its
#: batches, ``rank``/``world_size`` choose the shard in the hello, ``decode`` picks the CUDA device.
_SESSION_KEYWORDS = ("batch_size", "rank", "world_size", "decode")

_HUMP = re.compile(r"(?<=[a-z0-9])[A-Z]")


def _python_clip(meta: Dict[str, Any]) -> Dict[str, Any]:
    """A clip's metadata in Python spelling: the server's camelCase keys in snake_case (``frameIndex`` →
    ``frame_index``), its nested objects' too (``replaces``); values as they are. ``fields`` stays as sent: its
    keys are the manifest's column names, the user's own."""
    return {_HUMP.sub(lambda h: "_" + h[0].lower(), k):
            _python_clip(v) if isinstance(v, dict) and k != "fields" else v for k, v in meta.items()}


@dataclass(eq=False, repr=False)
class Batch:
    """One batch. Unless the loader copies (``copy=True``), ``video`` views the server's slot, which stays the
    trainer's for as long as anything references that memory: see :class:`Loader` ("Slot lifetime")."""

    video: Any
    """``torch.Tensor`` (a numpy array without torch; on the GPU a CUDA tensor, or a ``__cuda_array_interface__``
    object when torch has no CUDA) shaped ``[B, T, H, W, 3]`` or ``[B, 3, T, H, W]`` (the ``layout``)."""
    labels: Any
    """int64 tensor ``[B]``: each clip's class index."""
    clips: List[Dict[str, Any]]
    """One dict per clip, keys in snake_case (path, video, label, start, end, pts, frame_index, frame_kind, held,
    padded, …; ``fields`` keeps the manifest's column names: see python/README.md, "Clip metadata")."""
    epoch: int
    """The epoch the batch belongs to."""
    index: int
    """The batch's index in its epoch."""
    slot: int
    """The server's slot it lies in."""
    seq: int
    """The server's sequence number of the batch (what its release names)."""
    audio: Any = None
    """With the loader's ``audio`` option: float32 tensor ``[B, channels, samples]`` viewing the same slot as
    ``video`` (it holds the slot too), else None; ``clips[b]["audio"]`` says whether clip ``b``'s audio is the
    track's (``"ok"``) or zeros (``"missing"``, ``"short"``, ``"error"``)."""
    data_wait_ms: float = 0.0
    """How long the training loop waited for this batch (from asking the loader for it to having it), ms."""

    def __len__(self) -> int:
        return len(self.clips)

    def __repr__(self) -> str:
        shape = tuple(getattr(self.video, "shape", ()))
        return f"Batch(epoch={self.epoch}, index={self.index}, video={shape}, labels={len(self.clips)})"


class Stats(dict):
    """What :meth:`Loader.stats` returns: the server's statistics as a dict (``session``, ``loader``), which
    prints (``str``, ``print``) as the text the server rendered: the session's line, then the loader's clip
    counts and per-stage table(s) with the bottleneck, the lines ``sluice load`` prints. ``repr`` stays the
    dict's."""

    def __init__(self, stats: Dict[str, Any], text: Optional[str]) -> None:
        super().__init__(stats)
        #: The rendered text (None from a server older than the ``text`` field).
        self.text = text

    def __str__(self) -> str:
        return self.text if self.text is not None else dict.__repr__(self)


def _own_keywords() -> List[str]:
    """The client's own keywords: the real ``__init__``'s parameters (its ``__signature__`` shows every keyword)."""
    code = Loader.__init__.__code__
    names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    return [n for n in names if n != "self"]


class Loader:
    """Batches of labelled clips from a sluice batch server, zero-copy.

    ``Loader(dataset, batch_size=8, num_frames=16, width=112, height=112)`` starts a server for ``dataset`` (a
    directory tree, a CSV/JSONL manifest or its URL) and stops it on :meth:`close`, at the end of a ``with``
    block, or when the interpreter exits. ``Loader(socket=PATH)`` connects to a running ``sluice serve``
    instead. ``**options`` are the loader's, in snake_case (``num_frames``, ``buffer_size=4``, ``shuffle=False``,
    ``clip={"dtype": "float32"}``, ``concurrency={"decode": 2}``…; the table of keywords with their types and
    defaults is in python/README.md). They go to the server as given (numpy and torch scalars and arrays as
    Python numbers and lists): it checks them, once, and an unknown or misspelled one, at any depth, or one of
    the wrong type (``batch_size=8.0``: a float is no integer) raises :class:`~sluice.errors.InvalidArgumentError`
    from ``Loader(...)`` naming it as written; so do the client's own keywords (``timeout="5"``), checked here.

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

    Distributed: ``rank`` and ``world_size`` default to the ``RANK`` and ``WORLD_SIZE`` environment variables
    (torchrun sets them), so each rank gets its own shard with no extra code; :meth:`set_epoch` works like
    ``DistributedSampler.set_epoch``. Without it, each iteration runs the next epoch.

    One server per node: with ``node=True`` the ranks of this machine share one server (the first rank starts
    it, it leaves with the last): one decode pool of ``cpu_budget`` Workers (default: the cores less one per
    local rank) and one demux of each file for every rank's clips of it, each rank still getting exactly the
    batches its own server would give it. See docs/serving.md, "One server per node".

    Data wait: each batch's ``data_wait_ms`` is how long the loop waited for it; :meth:`stats` has them
    (``data_wait``: mean, percentiles, time to first batch) and ``sluice.torch.log_stats`` writes them to a
    TensorBoard ``SummaryWriter`` or any object with ``add_scalar``.

    Failure: if the server dies, iteration raises :class:`~sluice.errors.ServerDiedError` at once (within
    ``0.25`` s for a server this loader started); ``timeout`` (seconds, default none) bounds the wait for any one
    batch.
    """

    #: The server's welcome (its batch size, shard, decoder, batches per epoch, ...).
    welcome: Dict[str, Any]
    #: Clips per batch.
    batch_size: int
    #: This loader's rank and the number of ranks.
    rank: int
    world_size: int
    #: The decoder the server's loader uses (``"cpu"`` or ``"nvdec"``).
    decoder: str
    #: The CUDA device of an NVDEC loader, or None.
    device: Optional[int]
    #: The client's own keywords, as checked.
    copy: bool
    pin_memory: bool
    timeout: Optional[float]
    #: The server's socket.
    socket_path: str
    #: This rank's data waits (see :meth:`stats`, ``data_wait``).
    data_waits: DataWaits
    _server: Optional[ServerProcess]
    _node: Optional[NodeConnection]
    _session: Optional[Session]
    _closed: bool
    _finalizer: Optional[weakref.finalize]
    _next_epoch: int
    _iterating: bool
    _place: tuple
    _resume: Optional[tuple]
    _asked: Optional[float]

    if TYPE_CHECKING:
        # typed-init: made by scripts/python_options_table.ts from the options' tables
        def __init__(
            self,
            dataset: Optional[Union[str, os.PathLike[str]]] = None,
            *,
            socket: Optional[str] = None,
            copy: bool = False,
            pin_memory: bool = False,
            device: Optional[int] = None,
            timeout: Optional[float] = None,
            node: bool = False,
            batch_size: Optional[int] = None,
            num_frames: Optional[int] = None,
            width: Optional[int] = None,
            height: Optional[int] = None,
            frame_rate: Optional[float] = None,
            seed: int = 0,
            shuffle: bool = True,
            group_by_video: bool = True,
            clips_per_video: int = 1,
            clip_duration: Optional[float] = None,
            placement: Literal["random", "uniform"] = "random",
            keyframe_aligned: bool = False,
            rank: Optional[int] = None,
            world_size: Optional[int] = None,
            remainder: Literal["pad", "drop"] = "pad",
            shuffle_buffer: Optional[int] = None,
            layout: Literal["BTHWC", "BCTHW"] = "BTHWC",
            decode: Literal["cpu", "nvdec", "auto"] = "cpu",
            backend: Literal["inprocess", "subprocess"] = "inprocess",
            buffer_size: int = 3,
            ordered: bool = True,
            drop_last: bool = False,
            on_clip_error: Literal["replace", "skip", "fail"] = "replace",
            max_failures: Union[int, _signature.MaxFailuresKeywords] = {"rate": 0.5, "after": 20},
            slots: int = 4,
            cpu_budget: Optional[int] = None,
            metrics: Optional[str] = None,
            clip: Optional[_signature.ClipKeywords] = None,
            audio: Optional[_signature.AudioKeywords] = None,
            concurrency: Optional[_signature.ConcurrencyKeywords] = None,
            auto_concurrency: Optional[_signature.AutoConcurrencyKeywords] = None,
            fetch: Optional[_signature.FetchKeywords] = None,
            decode_less: Optional[_signature.DecodeLessKeywords] = None,
        ) -> None: ...
        # typed-init end
    else:
        # the run-time door: the client's own keywords here, the loader's sent as given for the server to check
        def __init__(
            self,
            dataset: Optional[str] = None,
            *,
            socket: Optional[str] = None,
            copy: bool = False,
            pin_memory: bool = False,
            device: Optional[int] = None,
            timeout: Optional[float] = None,
            node: bool = False,
            **options: Any,
        ) -> None:
            self._server: Optional[ServerProcess] = None
            self._node: Optional[_node.NodeConnection] = None
            self._session: Optional[Session] = None
            self._closed = False
            self._finalizer: Optional[weakref.finalize] = None
            # The door: the client's own keywords checked here, the loader's made JSON for the server to check.
            self.copy = _keywords.flag(copy, "copy")
            self.pin_memory = _keywords.flag(pin_memory, "pin_memory")
            self.timeout = _keywords.seconds(timeout, "timeout")
            device = _keywords.integer(device, "device", 0)
            socket = _keywords.path(socket, "socket")
            options = {k: _keywords.wire(v, k) for k, v in options.items()}
            env = os.environ
            rank, world_size = options.get("rank"), options.get("world_size")
            if rank is None and world_size is None and "RANK" in env and "WORLD_SIZE" in env:
                rank, world_size = int(env["RANK"]), int(env["WORLD_SIZE"])
            if device is None and options.get("decode") in ("nvdec", "auto"):
                device = int(env.get("LOCAL_RANK", "0"))
            self.device = device
            if node and socket is not None:
                raise ValueError("node=True starts or joins this machine's node server: give a dataset, not socket=")
            if socket is None:
                if dataset is None and not options:  # else the server names what is missing or misspelled (datset=)
                    raise ValueError("give a dataset (to start a server) or socket= (to connect to one)")
            elif dataset is not None:
                raise ValueError("give either a dataset (to start a server) or socket= (to connect to one), not both")
            else:
                # what the running server is told or checked against, checked here (its table checks only its own)
                _keywords.integer(options.get("batch_size"), "batch_size", 1)
                rank = _keywords.integer(rank, "rank", 0)
                world_size = _keywords.integer(world_size, "world_size", 1)
                if options.get("decode") not in (None, "cpu", "nvdec", "auto"):
                    raise _keywords.invalid(f"decode must be one of cpu, nvdec, auto, got {options['decode']!r}")
                if (rank is None) != (world_size is None):
                    raise ValueError("rank and world_size go together (the server is told both)")
                ignored = sorted(set(options) - set(_SESSION_KEYWORDS))
                if ignored:
                    raise ValueError(
                        f"{', '.join(ignored)}: a running server's own options apply (pass them to `sluice serve`); "
                        f"with socket= only {', '.join(_SESSION_KEYWORDS)} are used"
                    )
            hello: Dict[str, Any] = {}
            if rank is not None and world_size is not None:
                hello["rank"], hello["worldSize"] = rank, world_size
            if device is not None:
                hello["device"] = device
            self._next_epoch = 0
            self._iterating = False
            # The consumer's place, for state_dict(): ("at", epoch, batches) or ("after", epoch, position of the first
            # clip of the last batch taken); and a loaded state's (epoch, batches) until that epoch starts.
            self._place: tuple = ("at", 0, 0)
            self._resume: Optional[tuple] = None
            try:  # a failure or Ctrl-C anywhere from here on stops the server this loader started
                if node:
                    # The rank's own shard goes in its hello: ranks share the server's config.
                    shared = {k: v for k, v in options.items() if k not in ("rank", "world_size")}
                    self._node = _node.connect(self._server_config(dataset, shared), hello, copy=self.copy,
                                               batch_size=options.get("batch_size"))
                    self._session = self._node.session
                    socket = self._session.path
                elif socket is None:
                    self._server = ServerProcess(self._server_config(dataset, options))
                    socket = self._server.socket
                self.socket_path = socket
                if self._session is None:
                    self._session = Session(socket, self._server, hello, copy=self.copy,
                                            batch_size=options.get("batch_size"))
                self._finalizer = weakref.finalize(self, Loader._cleanup, self._server, self._session)
            except BaseException:
                self.close()
                raise
            w = self.welcome = self._session.welcome
            self.batch_size: int = w["batchSize"]
            self.rank: int = w["rank"]
            self.world_size: int = w["worldSize"]
            self.decoder: str = w["decoder"]
            self._next_epoch = w["nextEpoch"]
            self._place = ("at", self._next_epoch, 0)
            #: This rank's data waits (see :meth:`stats`, ``data_wait``).
            self.data_waits = DataWaits(self.rank)
            self._session.data_waits = self.data_waits
            self._asked: Optional[float] = None  # when the running epoch was asked for, until its first batch

    @staticmethod
    def _server_config(dataset: Any, options: Dict[str, Any]) -> Dict[str, Any]:
        """The server's config: the user's keywords as given (the server checks them and names them back)."""
        if isinstance(dataset, os.PathLike) or (isinstance(dataset, str) and not re.match(r"^[a-z]+://", dataset)):
            dataset = os.path.abspath(os.fspath(dataset))  # the server's working directory may differ
        dataset = _keywords.wire(dataset, "dataset")
        own = _own_keywords()
        return {"python": dict(options, dataset=dataset), "clientKeywords": own}

    @staticmethod
    def _cleanup(server: Optional[ServerProcess], session: Optional[Session]) -> None:
        if session is not None:
            session.close()
        if server is not None:
            server.stop()

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
        self._place, self._resume = ("at", epoch, 0), None

    def __iter__(self) -> Iterator[Batch]:
        session = self._open()
        if self._iterating:
            raise SluiceError("this loader is already being iterated (one epoch at a time)")
        epoch = self._next_epoch
        self._next_epoch = epoch + 1
        first = self._resume[1] if self._resume is not None and self._resume[0] == epoch else 0
        self._resume = None
        session.start_epoch(epoch, first)
        self._asked = time.perf_counter()
        self._place = ("at", epoch, first)
        self._iterating = True
        return self._epoch(session, epoch)

    def state_dict(self) -> Dict[str, Any]:
        """Where this loader's consumer is, as plain JSON-able data (save it with a checkpoint, e.g. in the dict
        given to ``torch.save``): the epoch and the batches of it the loop took, with the seed, shard, dataset
        fingerprint and batch-shaping options they hold for. Like ``torchdata``'s ``StatefulDataLoader``: after
        the epoch's last batch and its end, the state is the next epoch's start. Each rank has its own."""
        kind, epoch, n = self._place
        want = {"after": {"epoch": epoch, "position": n}} if kind == "after" else {"epoch": epoch, "batches": n}
        return self._open().request({"type": "state", **want}, self.timeout)["state"]

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Continues where ``state`` (from :meth:`state_dict` of a loader with the same dataset and options, in
        this process or another) left off: the next iteration runs the rest of its epoch, and the batches are
        the uninterrupted run's, byte for byte (failed clips' substitutes included); the clips before are never
        decoded. A state of another dataset, seed, shard or batch-shaping option raises
        :class:`~sluice.errors.InvalidArgumentError` naming the difference (and changes nothing)."""
        session = self._open()
        if self._iterating:
            raise SluiceError("load_state_dict() while an epoch is being iterated: finish or leave the loop first")
        if not isinstance(state, dict):
            raise TypeError(f"load_state_dict() takes the dict state_dict() returns, got {type(state).__name__}")
        m = session.resume(state, self.timeout)
        self._next_epoch = m["epoch"]
        self._resume = (m["epoch"], m["batches"])
        self._place = ("at", m["epoch"], m["batches"])

    def preview(self, path: Optional[str] = None, *, batches: int = 1, html: bool = False) -> Dict[str, Any]:
        """Writes a contact sheet of the first ``batches`` batches of the epoch the next iteration runs (from its
        start) to ``path`` (default ``preview.png``, or ``preview.html`` with ``html=True``: one page, each clip
        playable): a row per clip, its frames as the batch holds them, labelled with class, file, window and each
        frame's time; substitutes and padded frames marked. The server draws them with a loader of its own, so
        this loader's epochs are left as they are. Returns ``{"path", "clips", "width", "height"}``."""
        if not isinstance(batches, int) or isinstance(batches, bool) or batches < 1:
            raise ValueError(f"batches must be an integer >= 1, got {batches!r}")
        path = os.path.abspath(path if path is not None else ("preview.html" if html else "preview.png"))
        m = self._open().request({"type": "preview", "epoch": self._next_epoch, "batches": batches, "path": path,
                                  "html": bool(html)}, None)
        return {k: m[k] for k in ("path", "clips", "width", "height")}

    def stats(self) -> Stats:
        """The server's statistics: ``session`` (clips/s, batches, slot ring) and ``loader`` (pipeline stats
        with ``bottleneck``, per-stage failures, backend child); ``print(loader.stats())`` shows them as
        ``sluice load`` does (see :class:`Stats`). Delivered counts (the session's ``batches`` and ``clips``, the
        loader's ``clips``) are the batches this loader's iteration handed out: those the server sent ahead, not
        taken yet, count as ``sent`` only (their clips ``pending``)."""
        session = self._open()
        m = session.request({"type": "stats", "taken": session.taken_seq}, self.timeout)
        stats = dict(m["stats"], data_wait=self.data_waits.summary())
        text = m.get("text")
        if text is not None:  # after the session's line: this rank's waits
            first, _, rest = text.partition("\n")
            text = f"{first}\n{self.data_waits.text()}" + (f"\n{rest}" if rest else "")
        return Stats(stats, text)

    def close(self) -> None:
        """Closes the connection (the server frees every slot of this client) and stops a server this loader
        started. Batches still referenced stay readable: the mapping goes when the last of them does, and the
        server writes no more into it. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._finalizer is not None:
            self._finalizer.detach()
        Loader._cleanup(self._server, self._session)

    def __enter__(self) -> "Loader":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ---- epochs -----------------------------------------------------------------------------------------

    def _open(self) -> Session:
        if self._closed or self._session is None:
            raise SluiceError("this loader is closed")
        return self._session

    def _epoch(self, session: Session, epoch: int) -> Iterator[Batch]:
        try:
            asked = time.perf_counter()  # the loop asks for its next batch: its data wait starts
            while True:
                m = session.next(self.timeout)
                t = m["type"]
                if t == "batch":
                    if m["epoch"] != epoch:  # left over from an abandoned epoch: never handed out
                        session.release_unused(m["slot"], m["seq"])
                        continue
                    batch = self._batch(session, m)
                    session.took(m["seq"])
                    now = time.perf_counter()
                    batch.data_wait_ms = (now - asked) * 1000
                    self.data_waits.record(batch.data_wait_ms)
                    if self._asked is not None:
                        self.data_waits.first_batch_ms = (now - self._asked) * 1000
                        self._asked = None
                    self._place = ("after", epoch, batch.clips[0]["position"]) if batch.clips else self._place
                    yield batch
                    batch = None  # this frame's reference: the slot goes when the trainer's go
                    asked = time.perf_counter()
                elif t == "epoch-end":
                    if m["epoch"] == epoch:
                        session.ended()
                        if not m["cancelled"]:
                            self._place = ("at", epoch + 1, 0)
                        return
        finally:
            self._iterating = False

    def _batch(self, session: Session, m: Dict[str, Any]) -> Batch:
        slots = session.slots
        owner = slots.owner(m)
        release = session.lease(owner, m["slot"], m["seq"])
        video = slots.view(owner)
        audio_owner = slots.audio_owner(m, owner)
        audio = None if audio_owner is None else slots.view(audio_owner)
        del owner, audio_owner
        if self.copy and slots.can_copy():
            self.pin_memory = pin_possible(self.pin_memory)
            video = slots.copy_out(video, self.pin_memory)  # the view is gone: nothing can read the slot any more
            audio = None if audio is None else slots.copy_out(audio, self.pin_memory)
            release()
        clips = [_python_clip(c) for c in m["clips"]]
        batch = Batch(video, labels_tensor(m["labels"]), clips, m["epoch"], m["index"], m["slot"], m["seq"])
        batch.audio = audio
        return batch


# ``inspect.signature(Loader)`` (and help(), IDEs reading it at run time) shows every keyword, typed, with its default.
Loader.__init__.__signature__ = inspect.signature(_signature.typed_init)  # type: ignore[attr-defined]
