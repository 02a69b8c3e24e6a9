"""Node mode (``sluice.Loader(..., node=True)``): the ranks of one machine share one sluice server. The first rank
to arrive starts it; every rank connects to it; it leaves with the last one (docs/serving.md, "One server per
node").

Which server: one per user, job and configuration. Its socket is ``<dir>/<key>.sock``, ``dir`` being
``SLUICE_NODE_DIR``, else ``$XDG_RUNTIME_DIR/sluice-node``, else ``<tmp>/sluice-node-<uid>`` (mode 0700, owned by
this user), ``key`` a digest of the server's configuration (every option but the rank's own), the job
(``MASTER_ADDR``, ``MASTER_PORT``, ``TORCHELASTIC_RUN_ID``) and the server's sources. Ranks that pass different
options get different servers, never one that would silently serve the wrong batches.

The start race, one lock file beside the socket (``<key>.sock.lock``, ``flock``): a rank takes it, then connects
to the server and says hello; with no server listening it starts one (a detached process of its own session, so
this rank's Ctrl-C or death does not take it down), records its pid (``<key>.sock.pid``), waits until it listens
and connects. It lets the lock go only once welcomed. The server takes the same lock to leave
(src/serve/node_exit.ts), so a rank arriving while it leaves either was welcomed first (it stays) or finds it gone
and starts a new one: never two. A rank killed while it starts one leaves the lock free (the kernel drops it) and
the pid file: the next rank waits for that server to listen (or, if it died, starts another); a socket nobody
listens on (a server killed) is replaced.
"""
from __future__ import annotations

import collections
import contextlib
import errno
import fcntl
import hashlib
import json
import os
import subprocess
import tempfile
import threading
import time
from typing import Any, Deque, Dict, Optional

from ._server import DENO_FLAGS, _pump_stderr, find_checkout, find_deno, find_entry, wait_ready
from ._session import ServerUnreachable, Session
from .errors import ServerDiedError, ServerStartError, SluiceError

#: How long a rank waits for the lock, then for a server it (or a rank that died) started, seconds.
START_TIMEOUT_S = 300.0


def node_dir() -> str:
    """The directory of node servers' sockets for this user (see the module docs); created when missing."""
    env = os.environ.get("SLUICE_NODE_DIR")
    run = os.environ.get("XDG_RUNTIME_DIR")
    d = env or (os.path.join(run, "sluice-node") if run else os.path.join(tempfile.gettempdir(),
                                                                            f"sluice-node-{os.getuid()}"))
    os.makedirs(d, mode=0o700, exist_ok=True)
    st = os.stat(d)
    if st.st_uid != os.getuid() or st.st_mode & 0o022:
        raise SluiceError(f"{d} is not this user's own directory (owner uid {st.st_uid}, mode "
                          f"{oct(st.st_mode & 0o777)}): node servers' sockets need one (set SLUICE_NODE_DIR)")
    return d


def node_key(config: Dict[str, Any], entry: str) -> str:
    """The key of the node server for ``config`` in this job (see the module docs)."""
    env = os.environ
    job = [env.get("MASTER_ADDR", ""), env.get("MASTER_PORT", ""), env.get("TORCHELASTIC_RUN_ID", "")]
    text = json.dumps({"config": config, "job": job, "uid": os.getuid(), "entry": entry}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def connect(config: Dict[str, Any], hello: Dict[str, Any], *, copy: bool, batch_size: Optional[int],
            timeout: float = START_TIMEOUT_S) -> "NodeConnection":
    """Connects to this machine's node server for ``config``, starting it if no rank has (see the module docs);
    returns the welcomed session. Raises what a server start or a hello raises (an option misspelled:
    ``InvalidArgumentError`` naming it)."""
    checkout = find_checkout()
    entry = str(find_entry(checkout))
    deno = find_deno(checkout)
    config = dict(config, node=True)
    sock = os.path.join(node_dir(), node_key(config, entry) + ".sock")
    deadline = time.monotonic() + timeout
    while True:
        node_dir()  # the last server leaving removes it when empty: made again
        try:
            fd = os.open(sock + ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except FileNotFoundError:  # the directory went with a server leaving: made again above
            if time.monotonic() > deadline:
                raise ServerStartError(f"cannot create the node server's lock {sock}.lock") from None
            continue
        try:
            _lock(fd, deadline, sock)
            if not _same_file(fd, sock + ".lock"):  # a server leaving removed it: start over
                continue
            session = _hello(sock, hello, copy, batch_size)
            if session is not None:
                return NodeConnection(session, None)
            starting = _starting_server(sock + ".pid")
            if starting is not None:  # started by a rank that died before it listened: wait for it
                _wait_listening(sock, starting, deadline)
                session = _hello(sock, hello, copy, batch_size)
                if session is not None:
                    return NodeConnection(session, None)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(sock)  # a server killed left it; the new one would replace it too
            starter = _Starter(deno, entry, dict(config, socket=sock, exitOnStdinEof=False, logConnections=False),
                               sock + ".pid", deadline)
            session = _hello(sock, hello, copy, batch_size)
            if session is None:
                raise ServerStartError(f"the node server started at {sock} (pid {starter.pid}) does not answer")
            return NodeConnection(session, starter)
        finally:
            os.close(fd)  # lets the lock go


class NodeConnection:
    """A rank's welcomed session with the node server, and the server's process when this rank started it."""

    def __init__(self, session: Session, starter: Optional["_Starter"]) -> None:
        self.session = session
        #: The server this rank started (its stderr is forwarded here while this process lives), or None.
        self.starter = starter


def _lock(fd: int, deadline: float, sock: str) -> None:
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except OSError as e:
            if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise
        if time.monotonic() > deadline:
            raise ServerStartError(f"timed out waiting for the node server's lock {sock}.lock")
        time.sleep(0.02)


def _same_file(fd: int, path: str) -> bool:
    try:
        return os.fstat(fd).st_ino == os.stat(path).st_ino
    except FileNotFoundError:
        return False


def _hello(sock: str, hello: Dict[str, Any], copy: bool, batch_size: Optional[int]) -> Optional[Session]:
    """A welcomed session with the server at ``sock``, or None when none listens there."""
    if not os.path.exists(sock):
        return None
    try:
        return Session(sock, None, hello, copy=copy, batch_size=batch_size)
    except ServerUnreachable:
        return None


def _starting_server(pid_file: str) -> Optional[int]:
    """The pid in ``pid_file`` when that process is alive and a sluice server, else None."""
    try:
        with open(pid_file) as f:
            pid = int(f.read().strip())
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read()
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, ValueError):
        return None
    return pid if b"serve/main.ts" in cmd and state != "Z" else None


def _wait_listening(sock: str, pid: int, deadline: float) -> None:
    while _starting_server_alive(pid) and not os.path.exists(sock):
        if time.monotonic() > deadline:
            raise ServerStartError(f"the node server (pid {pid}) did not start listening at {sock}")
        time.sleep(0.05)


def _starting_server_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class _Starter:
    """Starts a node server (detached: its own session, no stdin) and waits until it listens; see the module
    docs. Its stderr is forwarded while this process lives; it is reaped here if it ends first."""

    def __init__(self, deno: str, entry: str, config: Dict[str, Any], pid_file: str, deadline: float) -> None:
        self._tail: Deque[str] = collections.deque(maxlen=40)
        self.proc = subprocess.Popen(
            [deno, "run", *DENO_FLAGS, entry, "--config", json.dumps(config)],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        )
        self.pid = self.proc.pid
        try:
            tmp = f"{pid_file}.{os.getpid()}"
            with open(tmp, "w") as f:
                f.write(str(self.pid))
            os.replace(tmp, pid_file)
            threading.Thread(target=_pump_stderr, args=(self.proc.stderr, self._tail, True, "sluice node"),
                             name="sluice-node-stderr", daemon=True).start()
            self._wait_ready(deadline)
        except BaseException:
            self.proc.kill()
            self.proc.wait()
            with contextlib.suppress(OSError):
                os.unlink(pid_file)
            raise
        threading.Thread(target=self.proc.wait, name="sluice-node-reaper", daemon=True).start()

    def _wait_ready(self, deadline: float) -> None:
        ready = wait_ready(self.proc, deadline, "the sluice node server did not start listening in time")
        if ready is None:
            code = self.proc.wait()
            time.sleep(0.2)
            raise ServerDiedError(f"the sluice node server exited with status {code} before listening", code,
                                  list(self._tail))
        #: Where its metrics are served (``HOST:PORT``), when asked for.
        self.metrics: Optional[str] = ready.get("metrics")
