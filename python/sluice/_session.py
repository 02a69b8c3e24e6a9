"""One connection to a sluice server (docs/serve_protocol.md): the hello, framed messages read in order, the
epoch stream, and slot credits.

Credits: a batch's slot stays this process's while anything references the batch (:meth:`Session.lease`); its
finalizer, which may run in any thread at any moment (even inside a send), only queues the release, and the
session sends queued releases itself the next time it talks to the server. When the process holds every slot
while it waits for a batch that needs one, that batch can never come: the session says so
(:class:`~sluice.errors.SlotsHeldError`) rather than wait forever.
"""
from __future__ import annotations

import collections
import gc
import select
import socket as _socket
import struct
import time
import weakref
from typing import Any, Deque, Dict, Optional, Tuple

from . import _protocol as proto
from ._server import ServerProcess
from ._slots import SlotMemory
from ._waits import DataWaits
from .errors import ProtocolError, ServeError, ServerDiedError, SlotsHeldError, SluiceError, server_error

CLIENT_NAME = "sluice-python/0.1.0"
#: How often a blocked receive wakes up to check that a spawned server is alive, seconds.
_POLL_S = 0.25
#: How long the next batch waits, once the trainer holds every slot, for another thread to let one go, seconds.
_HELD_WAIT_S = 1.0
#: Messages that answer a request rather than belong to the stream.
_REPLIES = ("stats", "state", "resumed", "preview")


class ServerUnreachable(SluiceError):
    """No server listens at the socket's path (the connection was refused, or there is no socket)."""


class Session:
    """A connection that has said hello: ``welcome`` is the server's answer, ``slots`` its mapped ring.

    ``hello`` holds the optional fields of the hello (``rank``/``worldSize``, ``device``). ``server`` is the
    server this client started (its death is noticed within ``0.25`` s), or None. ``batch_size`` (when given) is
    checked against the server's batches, and fewer than 2 slots are refused unless ``copy`` (a loop holds its
    batch while the server fills the next slot). Raises, having closed the socket, when any of it fails.
    """

    def __init__(self, path: str, server: Optional[ServerProcess], hello: Dict[str, Any], *, copy: bool,
                 batch_size: Optional[int]) -> None:
        self.path = path
        self._server = server
        self._sock = s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        self._frames = proto.MessageReader()
        self._pending: Deque[Dict[str, Any]] = collections.deque()  # the stream, in order
        self._replies: Deque[Dict[str, Any]] = collections.deque()  # replies to requests (stats, state, …)
        # Slots of batches gone, (generation, slot, seq), appended by finalizers (see the module docs).
        self._released: Deque[Tuple[int, int, int]] = collections.deque()
        self._live: Dict[int, int] = {}  # seq → generation, of batches out and not yet released
        self._generation = 0  # counts mappings: batches of an earlier one no longer hold the server's slots
        self._closed = False
        self.welcome: Optional[Dict[str, Any]] = None
        # The epoch stream: the epoch open, whether asking for it made the server jump (rebuild its loader, and
        # with it its ring), whether its stream has started, and its batches handed out.
        self._open_epoch: Optional[int] = None
        self._jumped = False
        self._rebuilt = False  # a resume may have replaced the server's loader, and with it its ring
        self._stream_started = False
        self._taken = 0
        #: One past the seq of the last batch handed out: batches sent from there on have not reached the trainer.
        self.taken_seq = 0
        #: The loader's data waits: those not yet reported ride on the next ``release`` or ``stats`` message.
        self.data_waits: Optional[DataWaits] = None
        try:
            try:
                s.connect(path)
            except OSError as e:
                raise ServerUnreachable(f"cannot connect to a sluice server at {path}: {e}") from None
            creds = s.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, struct.calcsize("3i"))
            peer_pid = struct.unpack("3i", creds)[0]
            self.send({"type": "hello", "protocol": proto.PROTOCOL_VERSION, "client": CLIENT_NAME, **hello})
            w = self._recv(None)
            if w["type"] != "welcome":
                raise ProtocolError("bad-message", f"expected welcome, got {w['type']}")
            if w["protocol"] != proto.PROTOCOL_VERSION:
                raise ServeError(
                    "protocol-version",
                    f"the server speaks serve protocol {w['protocol']}, this client {proto.PROTOCOL_VERSION}",
                )
            if w["pid"] != peer_pid:
                raise ProtocolError("bad-message", f"welcome names pid {w['pid']}, the socket's peer is {peer_pid}")
            if batch_size is not None and batch_size != w["batchSize"]:
                raise ValueError(f"batch_size={batch_size} but the server's batches hold {w['batchSize']} clips")
            if not copy and w["slots"] < 2:
                raise ValueError(
                    f"the server has {w['slots']} slot: at least 2 are needed unless copy=True (a loop holds its "
                    "batch while the server fills the next slot)"
                )
        except BaseException:
            self.close()
            raise
        self.welcome = w
        self.slots = SlotMemory(w["decoder"], peer_pid)
        if "ahead" in w:  # say at once that this client reports what its code takes: the bound holds from the start
            self.send({"type": "taken", "taken": 0})
        self._server_next: int = w["nextEpoch"]  # the epoch the server's loader runs next unless asked to jump

    # ---- the epoch stream -------------------------------------------------------------------------------

    def start_epoch(self, epoch: int, first: int = 0) -> None:
        """Asks for ``epoch`` (cancelling one still streaming), whose first batch is ``first`` (a resumed one's)."""
        self.send({"type": "epoch", "epoch": epoch})
        # A jump rebuilds the server's loader, and with it the ring its batches are in: until this epoch's
        # stream starts, batches held now may turn out not to hold any slot of it.
        self._jumped = epoch != self._server_next or self._rebuilt
        self._rebuilt = False
        self._server_next = epoch + 1
        self._stream_started = False
        self._taken = first
        self._open_epoch = epoch

    def next(self, timeout: Optional[float]) -> Dict[str, Any]:
        """The next ``batch`` or ``epoch-end`` of the stream (``memory`` is mapped on the way)."""
        return self._recv(timeout, stream=True)

    def took(self, seq: int) -> None:
        """Counts a batch of the open epoch handed out (``seq``: its sequence number), and tells a server that
        bounds how far it runs ahead of this process's code (``welcome``'s ``ahead``) that it may send more."""
        self._taken += 1
        self.taken_seq = seq + 1
        if "ahead" in self.welcome:  # type: ignore[operator]
            self.send({"type": "taken", "taken": self.taken_seq})

    def ended(self) -> None:
        """The open epoch's end arrived."""
        self._open_epoch = None

    def request(self, message: Dict[str, Any], timeout: Optional[float]) -> Dict[str, Any]:
        """Sends ``message`` (``stats``, ``state``, ``resume``, ``preview``) and returns the server's reply."""
        self.send(message)
        return self._recv(timeout, reply=True)

    def resume(self, state: Dict[str, Any], timeout: Optional[float]) -> Dict[str, Any]:
        """Resumes the server's loader from ``state`` (its ``resumed`` reply; a refused state raises). The stream
        of an epoch left before is over by then: its batches are given back unused, its end dropped."""
        try:
            m = self.request({"type": "resume", "state": state}, timeout)
        finally:  # refused or not, the server ended that stream before it answered: all of it has arrived
            self._open_epoch = None
            left = list(self._pending)
            self._pending.clear()
            for old in left:
                if old["type"] == "batch":
                    self.release_unused(old["slot"], old["seq"])
                elif old["type"] != "epoch-end":
                    self._pending.append(old)  # memory: mapped in order
        self._rebuilt = True
        self._server_next = m["epoch"]
        return m

    # ---- credits ----------------------------------------------------------------------------------------

    def lease(self, owner: Any, slot: int, seq: int) -> weakref.finalize:
        """Makes ``owner`` (the object every view of the batch keeps alive) hold the slot: its finalizer queues the
        slot's release. Returns the finalizer (calling it releases at once: only when nothing else can view the
        slot)."""
        self._live[seq] = self._generation
        fin = weakref.finalize(owner, self._released.append, (self._generation, slot, seq))
        fin.atexit = False
        return fin

    def release_unused(self, slot: int, seq: int) -> None:
        """Gives back a batch never handed out (left over from an abandoned epoch)."""
        self.send({"type": "release", "slot": slot, "seq": seq, "unused": True})

    def _flush_releases(self) -> None:
        """Sends the releases the finalizers of batches queued (only this thread, never a finalizer, writes)."""
        q = self._released
        synced = False
        while q:
            generation, slot, seq = q[0]  # taken off once sent: an interrupted flush loses no release
            if generation == self._generation and not self._closed:
                if not synced:  # kernels queued on a GPU batch may still read it
                    self.slots.synchronize()
                    synced = True
                self._send_raw({"type": "release", "slot": slot, "seq": seq})
            q.popleft()
            self._live.pop(seq, None)

    def _held(self) -> int:
        """Slots of the current mapping this process still holds (batches referenced, releases not yet sent)."""
        self._flush_releases()
        return len(self._live)

    def _all_held(self) -> SlotsHeldError:
        n, slots = len(self._live), self.slots.slots
        per_epoch = self.welcome["batchesPerEpoch"]  # type: ignore[index]
        more = (f"give the loader a slot for every batch you keep at once, and one for the next: slots={n + 1} to "
                f"keep one more, slots={max(per_epoch, 2)} for list(loader) (a whole epoch), slots=N for "
                f"DataLoader(ds, batch_size=N); each kept batch holds {self.slots.slot_bytes / 2**20:.1f} MiB of "
                "memory")
        if n + 1 > 1024:
            more = "keep fewer than 1024: slots cannot be more"
        return SlotsHeldError(
            f"all {slots} slots of the sluice server hold batches this process still references ({n} "
            "batches: a list of batches, a DataLoader collating several, a batch kept from an earlier step…), so "
            "the next batch can never come. Keep fewer (drop each batch when its step is done), copy what you keep "
            f"(batch.video.clone()), pass copy=True (batches copied out of their slots), or {more}. A slot is "
            "released when nothing references its batch any more: see sluice.Loader, 'Slot lifetime'.",
            held=n,
            slots=slots,
        )

    def _waits_for_slot(self) -> bool:
        """Whether the next message of the stream is a batch that needs a slot while this process holds them all
        (only the epoch's end needs none; before a jump's stream starts, the held batches may be of the old ring)."""
        slots = self.slots.slots
        return (slots > 0 and self._held() >= slots and (self._stream_started or not self._jumped)
                and self._taken < self.welcome["batchesPerEpoch"])

    # ---- the socket -------------------------------------------------------------------------------------

    def send(self, message: Dict[str, Any]) -> None:
        """Sends ``message`` after the releases queued so far."""
        self._flush_releases()
        self._send_raw(message)

    def _send_raw(self, message: Dict[str, Any]) -> None:
        waits = self.data_waits
        if waits is not None and waits.unreported and message["type"] in ("release", "stats"):
            message = dict(message, waits=waits.unreported[:4096])  # an older server ignores the field
            del waits.unreported[:4096]
        try:
            self._sock.sendall(proto.encode(message))
        except OSError as e:
            raise self.died(f"sending to the server failed ({e})") from None

    def died(self, what: str) -> SluiceError:
        """The error to raise once the server is found gone."""
        if self._server is not None:
            return self._server.died(what)
        return ServerDiedError(f"{what}: the sluice server at {self.path} went away")

    def close(self) -> None:
        """Says bye (after a welcome) and closes the socket; the server frees every slot of this client. Batches
        still referenced stay readable. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self.welcome is not None:
            try:
                self._sock.sendall(proto.encode({"type": "bye"}))
            except OSError:
                pass
        try:
            self._sock.close()
        except OSError:
            pass
        if self.welcome is not None:
            self.slots.drop()

    def _recv(self, timeout: Optional[float], reply: bool = False, stream: bool = False) -> Dict[str, Any]:
        """The next message of the stream (welcome, batches, epoch ends; ``memory`` is mapped on the way, in
        order), or with ``reply`` the next reply to a request. Raises on server death, protocol damage, an error
        message, when ``timeout`` passes without a message, or (``stream``: waiting for a batch) when this
        process holds every slot."""
        deadline = None if timeout is None else time.monotonic() + timeout
        queue = self._replies if reply else self._pending
        while True:
            self._flush_releases()
            while queue:
                m = queue.popleft()
                if m["type"] == "memory":
                    self.slots.map(m)
                    # Batches of the previous mapping no longer hold the server's slots (it replaced that ring):
                    # they stay readable, and their releases are not sent.
                    self._generation += 1
                    self._live.clear()
                    continue
                return m
            self._fill(deadline, timeout, stream)

    def _fill(self, deadline: Optional[float], timeout: Optional[float], stream: bool = False) -> None:
        """Waits for bytes and queues the messages they complete, sending queued releases meanwhile; an ``error``
        message is raised at once (the server hangs up after it)."""
        collected = False
        held_until: Optional[float] = None
        while True:
            wait = _POLL_S if deadline is None else max(0.0, min(_POLL_S, deadline - time.monotonic()))
            if stream and self._waits_for_slot():  # sends queued releases too
                # Unless a batch held only by a reference cycle (a traceback) or by another thread goes soon, say
                # so rather than wait forever.
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
                self._flush_releases()
                held_until = None
            ready, _, _ = select.select([self._sock], [], [], wait)
            if ready:
                try:
                    chunk = self._sock.recv(1 << 20)
                except OSError as e:
                    raise self.died(f"the connection to the server broke ({e})") from None
                if not chunk:
                    raise self.died("the server closed the connection")
                for raw in self._frames.push(chunk):
                    m = proto.check_message(raw)
                    t = m["type"]
                    if t == "error":
                        raise server_error(m["code"], m["message"], m.get("name"))
                    if t == "memory" or (t == "batch" and m["epoch"] == self._open_epoch):
                        self._stream_started = True
                    (self._replies if t in _REPLIES else self._pending).append(m)
                return
            if self._server is not None and not self._server.alive():
                raise self.died("the server stopped")
            if deadline is not None and time.monotonic() >= deadline:
                raise SluiceError(f"no message from the sluice server within {timeout} s")
