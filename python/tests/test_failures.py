"""Failures: kill -9 of the server, the trainer or both (a clear error that says how the death was noticed,
nothing left in /dev/shm, the server serves the next client), a stalled trainer (the server stops at `slots` batches), clients and servers
of another protocol version, and broken messages."""
from __future__ import annotations

import os
import re
import select
import signal
import socket
import struct
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

import sluice
from sluice import _protocol as proto
from sluice._server import ServerProcess
from conftest import CLIP, PY, reference


def server_config(dataset: str, slots: int = 4, **loader):
    return {"slots": slots, "loader": {"dataset": dataset, "batchSize": 4, "clip": CLIP, "sampler": {"seed": 7},
                                       **loader}}


def shm_listing():
    return sorted(os.listdir("/dev/shm"))


def drain(it):
    """Consumes `it` keeping no batch: a batch still referenced (even by a traceback's frame) keeps the mapping."""
    for b in it:
        del b


def guarded(fn, seconds=60.0):
    """Runs ``fn`` and raises what it raised; fails the test when it has no outcome within ``seconds`` (a hang
    guard: nothing here bounds how fast anything is)."""
    outcome = {}

    def run():
        try:
            fn()
        except BaseException as e:  # noqa: BLE001 - handed to the test's thread
            outcome["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"no outcome within {seconds} s (a hang)"
    if "error" in outcome:
        raise outcome["error"]


def maps_of_memfd(tag: str):
    """Live processes that map a memfd whose name contains `tag`."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if tag in Path(f"/proc/{pid}/maps").read_text():
                found.append(int(pid))
        except OSError:
            pass
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (killed, not yet reaped by its parent) is dead for our purpose
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except OSError:
        return False


def wait_gone(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


class RawClient:
    """Speaks the protocol by hand (to test what sluice.Loader never sends)."""

    def __init__(self, path: str) -> None:
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(path)
        self.s.settimeout(60)
        self.frames = proto.MessageReader()
        self.queue = []

    def send(self, msg) -> None:
        self.s.sendall(proto.encode(msg))

    def recv(self):
        while not self.queue:
            chunk = self.s.recv(1 << 20)
            if not chunk:
                return None
            self.queue.extend(self.frames.push(chunk))
        return self.queue.pop(0)

    def close(self) -> None:
        self.s.close()


TRAINER = textwrap.dedent("""
    import os, sys, time
    sys.path.insert(0, {py!r})
    import sluice
    kw = dict(batch_size=4, num_frames=8, width=64, height=48, seed=7)
    l = sluice.Loader({dataset!r}, **kw) if {socket!r} is None else sluice.Loader(socket={socket!r})
    it = iter(l)
    b = next(it)
    print(os.getpid(), l._server.pid if l._server else 0, l.welcome["pid"], flush=True)
    time.sleep(600)
""")


def start_trainer(dataset=None, socket_path=None):
    code = TRAINER.format(py=str(PY), dataset=dataset, socket=socket_path)
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = p.stdout.readline()
    assert line, "the trainer did not start"
    me, spawned, server_pid = map(int, line.split())
    return p, spawned, server_pid


def test_kill_9_of_the_server_raises_a_clear_error(dataset):
    """The loop waits with no timeout: only noticing the death (the socket's end, or the server found dead at a
    poll) can end it, and the error says which and how it died."""
    before = shm_listing()
    with sluice.Loader(dataset, batch_size=4, num_frames=8, width=64, height=48, clips_per_video=3) as l:
        it = iter(l)
        next(it)
        pid = l._server.pid
        os.kill(pid, signal.SIGKILL)
        # noticed reading (the socket closed or broke), at a poll (stopped), or writing (a release or taken it sends)
        died = (r"(closed the connection|broke|stopped|sending to the server failed)"
                r".*: the sluice server \(pid \d+\) was killed by signal 9")
        with pytest.raises(sluice.ServerDiedError, match=died) as e:
            guarded(lambda: drain(it))  # batches already received may still come out first
        assert e.value.returncode == -9
    assert shm_listing() == before
    assert maps_of_memfd(f"sluice-batches-{pid}") == []


def test_a_dead_spawned_server_is_noticed_at_the_first_poll_of_a_silent_connection(monkeypatch):
    """Nothing arrives on the socket (its end may be held open elsewhere): the wait, which has no timeout, looks
    at the server process every poll and raises at the first one that finds it dead."""
    from sluice import _session

    class DeadServer:
        polls = 0

        def alive(self):
            self.polls += 1
            return False

        def died(self, what):
            return sluice.ServerDiedError(f"{what}: the sluice server (pid 1) was killed by signal 9", -9)

    mine, theirs = socket.socketpair()
    try:
        s = object.__new__(_session.Session)
        s._sock, s._server, s.path, s._frames = mine, DeadServer(), "test", proto.MessageReader()
        s._released, s._generation, s._closed = _session.collections.deque(), 0, False
        monkeypatch.setattr(_session, "_POLL_S", 0.01)
        with pytest.raises(sluice.ServerDiedError, match="the server stopped: .* killed by signal 9"):
            guarded(lambda: s._fill(None, None), 10)
        assert s._server.polls == 1
    finally:
        mine.close()
        theirs.close()


def test_kill_9_of_a_connected_server_raises_a_clear_error(dataset):
    """A server this client did not start is noticed by its socket alone (no process to poll)."""
    server = ServerProcess(server_config(dataset, sampler={"seed": 7, "clipsPerVideo": 3}))
    try:
        l = sluice.Loader(socket=server.socket)
        it = iter(l)
        next(it)
        os.kill(server.pid, signal.SIGKILL)
        with pytest.raises(sluice.ServerDiedError, match="closed the connection|broke|sending to the server failed"):
            guarded(lambda: drain(it))
        l.close()
    finally:
        server.stop()


def test_kill_9_of_the_trainer_frees_its_slots_and_the_server_serves_the_next(dataset):
    server = ServerProcess(server_config(dataset, slots=2))
    try:
        trainer, _, server_pid = start_trainer(socket_path=server.socket)
        assert server_pid == server.pid
        trainer.kill()
        trainer.wait()
        # the next client gets whole epochs from the start, as if it were the first
        want = reference({"dataset": dataset, "batchSize": 4, "clip": CLIP, "sampler": {"seed": 7}}, 1)
        with sluice.Loader(socket=server.socket) as l:
            got = [(b.index, b.labels.tolist()) for b in l]
            assert l.stats()["session"]["ring"]["inUse"] <= 2
        assert got == [(w["index"], w["labels"]) for w in want]
        assert server.alive()
    finally:
        server.stop()


def test_kill_9_of_a_trainer_that_started_its_server_stops_the_server(dataset):
    before = shm_listing()
    trainer, server_pid, _ = start_trainer(dataset=dataset)
    assert alive(server_pid)
    trainer.kill()
    trainer.wait()
    assert wait_gone(server_pid, 10), "the server outlived its trainer"
    assert shm_listing() == before
    assert maps_of_memfd(f"sluice-batches-{server_pid}") == []


ERROR_TRAINER = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {py!r})
    import sluice
    l = sluice.Loader({dataset!r}, batch_size=1, num_frames=8, width=64, height=48, seed=7, clips_per_video=4,
                      shuffle=False, on_clip_error="fail")
    try:
        for b in l:
            pass
        print("no error", flush=True)
    except sluice.errors.MediaError:
        print(l._server.pid, l._server.dir, flush=True)
    time.sleep(600)
""")


def test_kill_9_of_a_trainer_after_a_loader_error_stops_its_server(cut_dataset, tmp_path):
    """The server used to hang after a loader error (its session's close awaited the promise running it) and
    outlive a killed trainer with parent pid 1, its socket directory left in the temp dir."""
    before = shm_listing()
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    p = subprocess.Popen([sys.executable, "-c", ERROR_TRAINER.format(py=str(PY), dataset=cut_dataset)],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                         env={**os.environ, "TMPDIR": str(tmp)})
    line = p.stdout.readline()
    pid, sock_dir = line.split()
    server_pid = int(pid)
    assert sock_dir.startswith(str(tmp)) and os.path.isdir(sock_dir)
    p.kill()
    p.wait()
    assert wait_gone(server_pid, 10), "the server outlived its trainer"
    assert list(tmp.iterdir()) == []  # the socket directory went with it
    assert shm_listing() == before
    assert maps_of_memfd(f"sluice-batches-{server_pid}") == []


def test_close_after_a_loader_error_lets_the_server_exit_by_itself(cut_dataset):
    l = sluice.Loader(cut_dataset, batch_size=1, num_frames=8, width=64, height=48, seed=7, clips_per_video=4,
                      shuffle=False, on_clip_error="fail")
    server, sock_dir = l._server, l._server.dir
    with pytest.raises(sluice.errors.MediaError, match="cut.mp4"):
        drain(l)
    l.close()
    assert server.ended == "exited"  # when its stdin closed: neither SIGTERM nor SIGKILL was needed
    assert server.proc.returncode == 0
    assert not os.path.exists(sock_dir)


def test_the_error_that_ends_an_epoch_is_raised_and_not_printed_again(cut_dataset, capfd):
    """Issue 30 item 7: the server's stderr (forwarded to the trainer's) said the error the client raises three
    times more: the loader's failure line, the pipeline's and the session's ("sluice serve: client: ...")."""
    with sluice.Loader(cut_dataset, batch_size=1, num_frames=8, width=64, height=48, seed=7, clips_per_video=4,
                       shuffle=False, on_clip_error="fail") as l:
        with pytest.raises(sluice.errors.MediaError, match="cut.mp4") as e:
            drain(l)
    time.sleep(0.3)  # the stderr pump is a thread
    err = capfd.readouterr().err
    window = re.search(r"clip \[[0-9.]+, [0-9.]+\)", e.value.message).group(0)
    assert [l for l in err.splitlines() if window in l] == [], err


def test_an_exceeded_failure_budget_names_max_failures_as_python_writes_it(cut_dataset):
    """The loader's failure budget error used to name the option as TypeScript does (`maxFailures`)."""
    with sluice.Loader(cut_dataset, batch_size=1, num_frames=8, width=64, height=48, seed=7, clips_per_video=4,
                       shuffle=False, max_failures=0) as l:
        with pytest.raises(sluice.errors.PipelineFailure) as e:
            drain(l)
    assert "clips failed in epoch 0, above max_failures (0); first: " in e.value.message
    assert "cut.mp4" in e.value.message and "maxFailures" not in e.value.message


def test_a_client_gone_while_batches_are_sent_is_a_disconnection_not_an_error(dataset):
    """A trainer that closes or dies while the server writes to it: the session ends quietly (it used to log
    `internal: Broken pipe (os error 32)` and then hang in its own close, so the server outlived the trainer)."""
    server = ServerProcess(server_config(dataset, sampler={"seed": 7, "clipsPerVideo": 3}), forward_stderr=False)
    try:
        c = RawClient(server.socket)
        c.send({"type": "hello", "protocol": 1, "client": "leaving"})
        assert c.recv()["type"] == "welcome"
        c.send({"type": "epoch", "epoch": 0})
        m = c.recv()
        while m["type"] != "batch":
            m = c.recv()
        # The client stops reading: the server's next write (the batch this release lets through) fails with
        # EPIPE while the connection is still open on its side.
        c.s.shutdown(socket.SHUT_RD)
        c.send({"type": "release", "slot": m["slot"], "seq": m["seq"]})
        # The session must then close the connection (POLLHUP here: both directions shut), sending nothing more.
        poll = select.poll()
        poll.register(c.s, select.POLLOUT)
        deadline = time.monotonic() + 10
        while not any(ev & select.POLLHUP for _, ev in poll.poll(50)) and time.monotonic() < deadline:
            pass
        assert any(ev & select.POLLHUP for _, ev in poll.poll(0)), "the session never closed the connection"
        c.close()
        server.stop()
        assert server.proc.returncode == 0  # the stdin pipe closing stopped it, no signal needed
        assert not any("internal" in line or "Broken pipe" in line for line in server.tail()), server.tail()
    finally:
        server.stop()


CTRL_C = textwrap.dedent("""
    import os, signal, sys, threading, time
    sys.path.insert(0, {py!r})
    import sluice
    starting = False
    def on_sigint(signum, frame):
        if starting:  # Ctrl-C inside sluice.Loader(...) only
            raise KeyboardInterrupt
    signal.signal(signal.SIGINT, on_sigint)
    kept = []  # a notebook keeps the last exception (and its traceback's frames)
    interrupted = 0
    for delay in (0.0, 0.001, 0.003, 0.006, 0.01, 0.02, 0.04, 0.07, 0.1, 0.15, 0.2, 0.3, 0.45, 0.7, 1.0):
        timer = threading.Timer(delay, os.kill, (os.getpid(), signal.SIGINT))
        try:
            starting = True
            timer.start()
            l = sluice.Loader({dataset!r}, batch_size=4, num_frames=8, width=64, height=48)
            starting = False
            l.close()
        except KeyboardInterrupt as e:
            starting = False
            interrupted += 1
            kept.append(e)
        timer.join()
    print(interrupted, flush=True)
""")


def deno_children(pid: int):
    """Live (not zombie) child processes of `pid` running Deno."""
    found = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            stat = Path(f"/proc/{p}/stat").read_text()
            comm, rest = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:].split()
        except (OSError, ValueError):
            continue
        if int(rest[1]) == pid and rest[0] != "Z" and "deno" in comm:
            found.append(int(p))
    return found


def test_ctrl_c_while_a_loader_starts_its_server_leaves_no_server(dataset, tmp_path):
    """Ctrl-C at any point of sluice.Loader(...) (in Popen, while the server starts, during hello) stops the
    server it was starting, even while the interrupted frames are kept (as a notebook keeps a traceback)."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    p = subprocess.Popen([sys.executable, "-c", CTRL_C.format(py=str(PY), dataset=dataset) +
                          "time.sleep(600)"], stdout=subprocess.PIPE, text=True, env={**os.environ, "TMPDIR": str(tmp)})
    try:
        interrupted = int(p.stdout.readline())
        assert interrupted >= 5, "too few starts were interrupted to test anything"
        deadline = time.monotonic() + 5
        while deno_children(p.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert deno_children(p.pid) == [], "an interrupted start left its server running"
        assert list(tmp.iterdir()) == []  # and no socket directory
    finally:
        p.kill()
        p.wait()


def test_kill_9_of_both_leaves_nothing(dataset):
    before = shm_listing()
    trainer, server_pid, _ = start_trainer(dataset=dataset)
    assert maps_of_memfd(f"sluice-batches-{server_pid}") != []  # both map the slots while they live
    os.kill(server_pid, signal.SIGKILL)
    trainer.kill()
    trainer.wait()
    assert wait_gone(server_pid, 5)
    assert shm_listing() == before
    assert maps_of_memfd(f"sluice-batches-{server_pid}") == []


def test_a_stalled_trainer_holds_exactly_slots_batches(dataset):
    server = ServerProcess(server_config(dataset, slots=3, sampler={"seed": 7, "clipsPerVideo": 3}))
    c = RawClient(server.socket)
    try:
        c.send({"type": "hello", "protocol": 1, "client": "stalled"})
        assert c.recv()["type"] == "welcome"
        c.send({"type": "epoch", "epoch": 0})
        batches = []

        def poll():
            c.send({"type": "stats"})
            while True:
                m = c.recv()
                if m["type"] == "batch":
                    batches.append(m)
                elif m["type"] == "stats":
                    return m["stats"]["session"]["ring"]

        # take batches, never release, until the loader waits for a slot with all of them sent (it acquires a
        # batch's slot when the batch's first clip is placed, so it may wait while the last ones still decode)
        while True:
            ring = poll()
            if ring is not None and ring["waiting"] == 1 and len(batches) == 3:
                break
            time.sleep(0.1)
        time.sleep(0.3)
        ring = poll()  # and no further batch comes
        assert len(batches) == 3 and ring["inUse"] == 3 and ring["slots"] == 3 and ring["waiting"] == 1
        assert sorted(b["slot"] for b in batches) == [0, 1, 2]
        # one release lets exactly one more batch through, into the released slot
        c.send({"type": "release", "slot": batches[0]["slot"], "seq": batches[0]["seq"]})
        m = c.recv()
        assert m["type"] == "batch" and m["slot"] == batches[0]["slot"] and m["seq"] == 3
    finally:
        c.close()
        server.stop()


def test_a_client_of_another_protocol_version_gets_a_clear_error(dataset):
    server = ServerProcess(server_config(dataset))
    try:
        c = RawClient(server.socket)
        c.send({"type": "hello", "protocol": 2, "client": "future-client"})
        m = c.recv()
        assert m["type"] == "error" and m["code"] == "protocol-version" and m["fatal"] is True
        assert "speaks serve protocol 2" in m["message"] and "this server speaks 1" in m["message"]
        assert c.recv() is None  # and the server hangs up
        c.close()
        # broken messages: each ends its session with an error naming the problem
        for msg, code, text in [
            ({"type": "epoch", "epoch": 0}, "bad-message", "first message must be hello"),
            ({"type": "hello", "protocol": 1, "client": "x", "rank": 4, "worldSize": 4}, "bad-message", '"rank"'),
            ({"type": "hello", "protocol": "1", "client": "x"}, "bad-message", '"protocol"'),
            ({"type": "launch"}, "bad-message", "unknown message type"),
        ]:
            c = RawClient(server.socket)
            c.send(msg)
            m = c.recv()
            assert m["type"] == "error" and m["code"] == code and text in m["message"], m
            c.close()
        c = RawClient(server.socket)
        c.s.sendall(struct.pack("<I", 1 << 30))
        m = c.recv()
        assert m["code"] == "bad-frame"
        c.close()
        c = RawClient(server.socket)
        c.send({"type": "hello", "protocol": 1, "client": "x"})
        c.recv()
        c.send({"type": "release", "slot": 0, "seq": 0})
        m = c.recv()
        assert m["code"] == "bad-release" and "not out" in m["message"]
        c.close()
        # the server is still fine
        with sluice.Loader(socket=server.socket) as l:
            assert len(list(l)) == 3
    finally:
        server.stop()


class FakeServer:
    """A server that answers hello with `reply` (to test the client's checks)."""

    def __init__(self, tmp_path, replies) -> None:
        self.path = str(tmp_path / "fake.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(self.path)
        self.sock.listen(1)
        self.replies = replies
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        conn, _ = self.sock.accept()
        conn.recv(4096)
        for r in self.replies:
            conn.sendall(r if isinstance(r, bytes) else proto.encode(r))
        time.sleep(1.0)
        conn.close()


def welcome(**over):
    w = {"type": "welcome", "protocol": 1, "server": "fake", "pid": os.getpid(), "rank": 0, "worldSize": 1,
         "batchSize": 2, "batchesPerEpoch": 1, "clipsPerEpoch": 2, "nextEpoch": 0, "decoder": "cpu", "slots": 4}
    w.update(over)
    return w


def test_a_server_of_another_protocol_version_gets_a_clear_error(tmp_path):
    FakeServer(tmp_path, [welcome(protocol=2)])
    with pytest.raises(sluice.ServeError, match="server speaks serve protocol 2, this client 1") as e:
        sluice.Loader(socket=str(tmp_path / "fake.sock"))
    assert e.value.code == "protocol-version"


@pytest.mark.parametrize("error,cls,name", [
    ({"code": "DatasetError", "name": "DatasetError"}, sluice.errors.DatasetError, "DatasetError"),
    ({"code": "MediaError", "name": "ClipError"}, sluice.errors.ClipError, "ClipError"),
    ({"code": "internal", "name": "TypeError"}, sluice.ServeError, "TypeError"),
    ({"code": "busy", "name": "ServeError"}, sluice.ServeError, "ServeError"),
    ({"code": "busy"}, sluice.ServeError, "ServeError"),  # a server from before errors named their class
    ({"code": "DatasetError"}, sluice.errors.DatasetError, "DatasetError"),
])
def test_a_server_error_is_raised_as_the_class_of_the_same_name(tmp_path, error, cls, name):
    FakeServer(tmp_path, [{"type": "error", "message": "it failed", "fatal": True, **error}])
    with pytest.raises(sluice.ServeError, match=r"it failed") as e:
        sluice.Loader(socket=str(tmp_path / "fake.sock"))
    assert type(e.value) is cls
    assert (e.value.code, e.value.name) == (error["code"], name)


@pytest.mark.parametrize("reply,match", [
    (welcome(slots=0), '"slots" must be an integer'),
    (welcome(decoder="tpu"), '"decoder"'),
    (b"\xff\xff\xff\x7f", "frame of"),
    (struct.pack("<I", 3) + b"{{{", "not UTF-8 JSON"),
    ({"type": "welcome"}, '"protocol"'),
    ({"type": "surprise"}, "unknown message type"),
])
def test_the_client_checks_what_the_server_sends(tmp_path, reply, match):
    FakeServer(tmp_path, [reply])
    with pytest.raises(sluice.ProtocolError, match=match):
        sluice.Loader(socket=str(tmp_path / "fake.sock"))


@pytest.mark.parametrize("batch,match", [
    ({"slot": 9}, "outside slot"),
    ({"nbytes": 7}, '"nbytes" says 7'),
    ({"shape": [2, 1, 1, 1, 4]}, "channels"),
    ({"labels": [1]}, '"labels" must be 2'),
    ({"dtype": "float64"}, "unknown dtype"),
])
def test_bad_batch_descriptors_are_refused(tmp_path, batch, match):
    fd = os.memfd_create("sluice-serve-fake")
    os.ftruncate(fd, 4 * 4096)
    good = {"type": "batch", "seq": 0, "epoch": 0, "index": 0, "slot": 0, "offset": 0, "nbytes": 6,
            "shape": [2, 1, 1, 1, 3], "dtype": "uint8", "layout": "BTHWC", "labels": [0, 1],
            "clips": [{}, {}]}
    good.update(batch)
    memory = {"type": "memory", "memory": {"kind": "host", "fd": fd, "size": 4 * 4096}, "slots": 4,
              "slotBytes": 4096}
    FakeServer(tmp_path, [welcome(), memory, good])
    with pytest.raises(sluice.ProtocolError, match=match):  # at once, or when the loop reaches the batch
        with sluice.Loader(socket=str(tmp_path / "fake.sock")) as l:
            next(iter(l))
    os.close(fd)


def test_the_server_stops_when_the_interpreter_exits_without_close(dataset):
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(PY)!r})
        import sluice
        l = sluice.Loader({dataset!r}, batch_size=4, num_frames=8, width=64, height=48)
        next(iter(l))
        print(l._server.pid, l._server.dir, flush=True)
    """)  # no close(): the loader's finalizer stops the server at exit
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    pid, sock_dir = out.stdout.split()
    assert wait_gone(int(pid), 10)
    assert not os.path.exists(sock_dir)
