"""The serve protocol (docs/serve_protocol.md), client side: framing and validation of server messages.

A frame is a 4-byte little-endian length followed by that many bytes of UTF-8 JSON (an object with a ``type``).
Every message from the server is checked here before the client uses any field of it.
"""
from __future__ import annotations

import json
import struct
from typing import Any, Dict, List, Literal, TypedDict, Union

from .errors import ProtocolError

#: Version of the serve protocol this client speaks.
PROTOCOL_VERSION = 1
#: Largest frame the client accepts from a server.
MAX_SERVER_MESSAGE = 16 * 1024 * 1024
#: Bytes per sample of each pixel type, and its numpy / ``__cuda_array_interface__`` type string.
DTYPES = {"uint8": (1, "|u1"), "float32": (4, "<f4")}
LAYOUTS = ("BTHWC", "BCTHW")

_LEN = struct.Struct("<I")


# The server's messages, as src/serve/protocol.ts declares them (python/tests/test_typing.py compares the keys).
# A key older servers may leave out is in a ``total=False`` part.


class _WelcomeRequired(TypedDict):
    type: Literal["welcome"]
    protocol: int
    server: str
    pid: int
    rank: int
    worldSize: int
    batchSize: int
    batchesPerEpoch: int
    clipsPerEpoch: int
    nextEpoch: int
    decoder: Literal["cpu", "nvdec"]
    slots: int


class WelcomeMessage(_WelcomeRequired, total=False):
    """The answer to the client's hello: the session's shard, batch size, epoch length, decoder and slots."""

    ahead: int
    """How many batches the server sends ahead of those the client took (it then wants ``taken`` messages)."""


class MemoryMessage(TypedDict):
    """Where the batch slots are: a memfd (``kind: "host"``, ``fd``) or a CUDA IPC handle (``"cuda"``)."""

    type: Literal["memory"]
    memory: Dict[str, Any]
    slots: int
    slotBytes: int


class AudioPlace(TypedDict):
    """Where a batch's audio lies in its slot: float32 ``[B, channels, samples]``."""

    offset: int
    nbytes: int
    shape: List[int]


class _BatchRequired(TypedDict):
    type: Literal["batch"]
    seq: int
    epoch: int
    index: int
    slot: int
    offset: int
    nbytes: int
    shape: List[int]
    dtype: Literal["uint8", "float32"]
    layout: Literal["BTHWC", "BCTHW"]
    labels: List[int]
    clips: List[Dict[str, Any]]


class BatchMessage(_BatchRequired, total=False):
    """A batch in a slot: its place, shape, type and layout, labels and each clip's metadata."""

    audio: AudioPlace
    """With the loader's ``audio`` option."""


class EpochEndMessage(TypedDict):
    """An epoch's end: how many batches and clips it sent, and whether it was cancelled."""

    type: Literal["epoch-end"]
    epoch: int
    batches: int
    clips: int
    cancelled: bool


class _StatsRequired(TypedDict):
    type: Literal["stats"]
    stats: Any


class StatsMessage(_StatsRequired, total=False):
    """The server's counters (the answer to ``stats``)."""

    text: str
    """The counters as ``sluice load`` prints them (absent from older servers)."""


class StateMessage(TypedDict):
    """The loader's state (the answer to ``state``), for ``load_state_dict``."""

    type: Literal["state"]
    state: Any


class ResumedMessage(TypedDict):
    """A state loaded: the epoch and the batches of it already taken."""

    type: Literal["resumed"]
    epoch: int
    batches: int


class PreviewMessage(TypedDict):
    """A preview written: where, and of how many clips at which size."""

    type: Literal["preview"]
    path: str
    clips: int
    width: int
    height: int


class _ErrorRequired(TypedDict):
    type: Literal["error"]
    code: str
    message: str
    fatal: bool


class ErrorMessage(_ErrorRequired, total=False):
    """An error: a ``ServeError``'s code or the class of another, its message, whether the session ends."""

    name: str
    """The server's class of the error (absent from older servers)."""


#: Any message from the server.
ServerMessage = Union[WelcomeMessage, MemoryMessage, BatchMessage, EpochEndMessage, StatsMessage, StateMessage,
                      ResumedMessage, PreviewMessage, ErrorMessage]


def encode(message: Dict[str, Any]) -> bytes:
    """One frame holding ``message``."""
    body = json.dumps(message, separators=(",", ":")).encode("utf-8")
    return _LEN.pack(len(body)) + body


class MessageReader:
    """Cuts bytes into frames and parses their JSON."""

    def __init__(self, max_bytes: int = MAX_SERVER_MESSAGE) -> None:
        self._buf = bytearray()
        self._max = max_bytes

    def push(self, chunk: bytes) -> List[Any]:
        self._buf += chunk
        out = []
        while len(self._buf) >= 4:
            (n,) = _LEN.unpack_from(self._buf, 0)
            if n > self._max:
                raise ProtocolError("bad-frame", f"server sent a frame of {n} bytes (limit {self._max})")
            if len(self._buf) - 4 < n:
                break
            body = bytes(self._buf[4 : 4 + n])
            del self._buf[: 4 + n]
            try:
                out.append(json.loads(body.decode("utf-8")))
            except (UnicodeDecodeError, ValueError) as e:
                raise ProtocolError("bad-frame", f"server sent a frame that is not UTF-8 JSON: {e}") from None
        return out


def _bad(msg_type: str, what: str) -> ProtocolError:
    return ProtocolError("bad-message", f"server's {msg_type} message: {what}")


def _int(m: Dict[str, Any], key: str, lo: int = 0, hi: int = 2**53) -> int:
    v = m.get(key)
    if not isinstance(v, int) or isinstance(v, bool) or v < lo or v > hi:
        raise _bad(m.get("type", "?"), f'"{key}" must be an integer in [{lo}, {hi}], got {v!r}')
    return v


def _str(m: Dict[str, Any], key: str) -> str:
    v = m.get(key)
    if not isinstance(v, str):
        raise _bad(m.get("type", "?"), f'"{key}" must be a string, got {type(v).__name__}')
    return v


def check_message(m: Any) -> ServerMessage:
    """Checks the fields the client uses of a server message; returns it, typed (unknown types raise)."""
    if not isinstance(m, dict) or not isinstance(m.get("type"), str):
        raise ProtocolError("bad-message", f"server sent a message that is not an object with a type: {str(m)[:80]}")
    t = m["type"]
    if t == "welcome":
        _int(m, "protocol")
        _int(m, "pid", 1)
        _int(m, "worldSize", 1)
        _int(m, "rank", 0, m["worldSize"] - 1)
        _int(m, "batchSize", 1)
        _int(m, "batchesPerEpoch")
        _int(m, "clipsPerEpoch")
        _int(m, "nextEpoch")
        _int(m, "slots", 1, 1024)
        if "ahead" in m:  # a server that bounds how far it runs ahead (it then wants `taken` messages)
            _int(m, "ahead", 1)
        if m.get("decoder") not in ("cpu", "nvdec"):
            raise _bad(t, f'"decoder" must be "cpu" or "nvdec", got {m.get("decoder")!r}')
    elif t == "memory":
        mem = m.get("memory")
        if not isinstance(mem, dict):
            raise _bad(t, '"memory" must be an object')
        _int(m, "slots", 1, 1024)
        _int(m, "slotBytes", 1)
        size = _int(mem, "size", 1)
        if mem.get("kind") == "host":
            _int(mem, "fd", 0, 2**31 - 1)
        elif mem.get("kind") == "cuda":
            _int(mem, "device", 0, 1023)
            h = mem.get("handle")
            if not isinstance(h, str) or len(h) != 128 or any(c not in "0123456789abcdef" for c in h):
                raise _bad(t, '"handle" must be 128 lower-case hex digits')
        else:
            raise _bad(t, f'unknown memory kind {mem.get("kind")!r}')
        if m["slots"] * m["slotBytes"] > size:
            raise _bad(t, f'{m["slots"]} slots of {m["slotBytes"]} bytes do not fit {size} bytes')
    elif t == "batch":
        for k in ("seq", "epoch", "index", "slot", "offset"):
            _int(m, k)
        _int(m, "nbytes", 1)
        shape = m.get("shape")
        if not isinstance(shape, list) or len(shape) != 5 or any(
            not isinstance(d, int) or isinstance(d, bool) or d < 1 for d in shape
        ):
            raise _bad(t, f'"shape" must be 5 positive integers, got {shape!r}')
        dtype = m.get("dtype")
        if dtype not in DTYPES:
            raise _bad(t, f'unknown dtype {dtype!r}')
        layout = m.get("layout")
        if layout not in LAYOUTS:
            raise _bad(t, f'unknown layout {layout!r}')
        channels = shape[4] if layout == "BTHWC" else shape[1]
        if channels != 3:
            raise _bad(t, f"shape {shape} has {channels} channels for layout {layout}, expected 3")
        n = DTYPES[dtype][0]
        for d in shape:
            n *= d
        if n != m["nbytes"]:
            raise _bad(t, f'shape {shape} of {dtype} is {n} bytes, "nbytes" says {m["nbytes"]}')
        labels = m.get("labels")
        if not isinstance(labels, list) or len(labels) != shape[0] or any(
            not isinstance(x, int) or isinstance(x, bool) for x in labels
        ):
            raise _bad(t, f'"labels" must be {shape[0]} integers')
        clips = m.get("clips")
        if not isinstance(clips, list) or len(clips) != shape[0] or any(not isinstance(c, dict) for c in clips):
            raise _bad(t, f'"clips" must be {shape[0]} objects')
        audio = m.get("audio")
        if audio is not None:
            if not isinstance(audio, dict):
                raise _bad(t, '"audio" must be an object')
            _int(audio, "offset")
            _int(audio, "nbytes", 0)
            ashape = audio.get("shape")
            if not isinstance(ashape, list) or len(ashape) != 3 or any(
                not isinstance(d, int) or isinstance(d, bool) or d < 0 for d in ashape
            ) or ashape[0] != shape[0]:
                raise _bad(t, f'"audio" "shape" must be [{shape[0]}, channels, samples], got {ashape!r}')
            if 4 * ashape[0] * ashape[1] * ashape[2] != audio["nbytes"]:
                raise _bad(t, f'audio shape {ashape} of float32 is not {audio["nbytes"]} bytes')
            if audio["offset"] % 4 != 0 or audio["offset"] < m["offset"] + m["nbytes"]:
                raise _bad(t, f'audio offset {audio["offset"]} overlaps the video or is misaligned')
    elif t == "epoch-end":
        _int(m, "epoch")
        _int(m, "batches")
        _int(m, "clips")
        if not isinstance(m.get("cancelled"), bool):
            raise _bad(t, '"cancelled" must be a boolean')
    elif t == "stats":
        if "stats" not in m:
            raise _bad(t, 'no "stats"')
    elif t == "state":
        if not isinstance(m.get("state"), dict):
            raise _bad(t, '"state" must be an object')
    elif t == "resumed":
        _int(m, "epoch")
        _int(m, "batches")
    elif t == "preview":
        _str(m, "path")
        for k in ("clips", "width", "height"):
            _int(m, k)
    elif t == "error":
        _str(m, "code")
        _str(m, "message")
        if "name" in m:  # the server's class of the error; absent from an older server's messages
            _str(m, "name")
    else:
        raise ProtocolError("bad-message", f"server sent an unknown message type {t!r}")
    return m
