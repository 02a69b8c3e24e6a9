"""Starting a sluice batch server as a child process (``deno run … src/serve/main.ts --config JSON``).

The server is the TypeScript package the wheel carries (``sluice/_deno``: ``src/``, ``ffi/``, ``mod.ts``, copied
by ``setup.py`` at build time), so an installed client needs no checkout; in a checkout (``python/sluice`` of a
clone, or the clone ``SLUICE_ROOT`` names) the checkout's own sources run instead. Deno is ``SLUICE_DENO``, else
the checkout's ``node_modules/.bin/deno``, else the binary of the ``deno`` Python package
(``deno.find_deno_bin()``; ``pip install "sluice[deno]"``), else ``deno`` on ``PATH``. It runs with no config
file, lock file, npm or remote modules: the server imports only its own files and Deno's built-ins, and a
``deno.json`` or ``package.json`` in a directory above the package (a project holding the virtual environment)
is not read, nor is anything fetched or written there.

The server gets its own session (Ctrl-C in the trainer does not reach it; the client stops it) and a pipe on
stdin: when the trainer dies, however, the pipe closes and the server exits, so it never outlives its trainer.
A start interrupted anywhere (Ctrl-C included: it is held back while the child is being created, so the child
is never lost) stops the child before the exception leaves, and a :class:`ServerProcess` nobody references any
more stops its child too.
"""
from __future__ import annotations

import collections
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from pathlib import Path
from typing import Any, Deque, Dict, Iterator, List, Optional

from .errors import ServerDiedError, ServerStartError, server_error

ENTRY = Path("src") / "serve" / "main.ts"
#: The TypeScript package an installed client carries.
PACKAGED = Path(__file__).resolve().parent / "_deno"
#: ``deno run`` flags: everything the server needs is its own files (see the module docs).
DENO_FLAGS = ("-A", "--no-prompt", "--no-config", "--no-lock", "--no-npm", "--no-remote")


def find_checkout() -> Optional[Path]:
    """The sluice checkout to run the server from: ``SLUICE_ROOT``, else the one this package sits in; None for
    an installed package."""
    env = os.environ.get("SLUICE_ROOT")
    if env:
        root = Path(env)
        if not (root / ENTRY).is_file():
            raise ServerStartError(f"SLUICE_ROOT={env} does not hold {ENTRY}")
        return root
    here = Path(__file__).resolve().parents[2]
    return here if (here / ENTRY).is_file() else None


def find_entry(checkout: Optional[Path]) -> Path:
    """The server's entry module: the checkout's, else the packaged one."""
    if checkout is not None:
        return checkout / ENTRY
    if (PACKAGED / ENTRY).is_file():
        return PACKAGED / ENTRY
    raise ServerStartError(
        f"this sluice package holds no server ({PACKAGED / ENTRY} is missing): install it from a clone with "
        "`pip install ./python`, set SLUICE_ROOT to a clone, or pass socket= to connect to a running `sluice serve`"
    )


def _deno_package() -> Optional[str]:
    """The binary of the ``deno`` Python package (PyPI's ``deno``), when it is installed."""
    try:
        import deno  # type: ignore[import-not-found]

        found = str(deno.find_deno_bin())
    except (ImportError, AttributeError, OSError):  # not installed, another package of that name, no binary
        return None
    return found if os.access(found, os.X_OK) else None


def find_deno(checkout: Optional[Path]) -> str:
    """The Deno executable (see the module docs for the order)."""
    env = os.environ.get("SLUICE_DENO")
    if env:
        if not os.access(env, os.X_OK):
            raise ServerStartError(f"SLUICE_DENO={env} is not an executable file")
        return env
    if checkout is not None:
        local = checkout / "node_modules" / ".bin" / "deno"
        if os.access(local, os.X_OK):
            return str(local)
    found = _deno_package() or shutil.which("deno")
    if found:
        return found
    raise ServerStartError(
        "Deno not found: set SLUICE_DENO to a deno executable, put deno on PATH, or `pip install deno` (in a "
        "clone, `npm install` installs it into node_modules)"
    )


@contextlib.contextmanager
def _sigint_held() -> Iterator[None]:
    """Holds Ctrl-C (SIGINT) back for the block and delivers it after, so the block is not cut in the middle
    (a child created but not yet returned by ``Popen`` would be lost). Only the main thread receives signals."""
    previous = signal.getsignal(signal.SIGINT) if threading.current_thread() is threading.main_thread() else None
    if previous is None:  # not the main thread, or a handler Python cannot restore
        yield
        return
    caught: List[int] = []
    signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if caught:
            if callable(previous):
                previous(signal.SIGINT, None)  # the default handler raises KeyboardInterrupt
            elif previous == signal.SIG_DFL:
                os.kill(os.getpid(), signal.SIGINT)


def _pump_stderr(stream: Any, tail: Deque[str], forward: bool, prefix: str) -> None:
    for raw in stream:
        line = raw.decode("utf-8", "replace").rstrip("\n")
        tail.append(line)
        if forward:
            print(f"[{prefix}] {line}" if not line.startswith("sluice") else line, file=sys.stderr)


def _read_ready(stream: Any, ready: List[Any], done: threading.Event) -> None:
    for raw in stream:
        try:
            msg = json.loads(raw.decode("utf-8"))
        except ValueError:
            continue
        # "ready", or "error" when the server cannot start (an option misspelled or out of range)
        if isinstance(msg, dict) and msg.get("event") in ("ready", "error"):
            ready.append(msg)
            break
    done.set()


def _stop(proc: Optional[subprocess.Popen], sock_dir: str, timeout: float) -> Optional[str]:
    """Closes the child's stdin (it exits within ~2 s), then terminates or kills it if it lingers; removes its
    socket directory. Returns how it ended: ``"exited"`` (by itself, once its stdin closed, or before),
    ``"terminated"`` (SIGTERM) or ``"killed"`` (SIGKILL); None without a child."""
    ended = None
    if proc is not None:
        ended = "exited"
        if proc.poll() is None:
            try:
                assert proc.stdin is not None
                proc.stdin.close()
            except OSError:
                pass
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.terminate()
                ended = "terminated"
                try:
                    proc.wait(1.0)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    ended = "killed"
                    proc.wait()
        for f in (proc.stdin, proc.stdout):
            try:
                if f is not None:
                    f.close()
            except OSError:
                pass
    shutil.rmtree(sock_dir, ignore_errors=True)
    return ended


def wait_ready(proc: subprocess.Popen, deadline: float, late: str) -> Optional[Dict[str, Any]]:
    """Waits until ``deadline`` (``time.monotonic()``) for a server child's first line: returns its ready event, or
    None when the child exited first; raises the server's own error (an error event), or ``ServerStartError(late)``
    past the deadline. A reader thread reads the pipe: readline() would block past the deadline and the child's
    death."""
    ready: List[Any] = []
    done = threading.Event()
    threading.Thread(target=_read_ready, args=(proc.stdout, ready, done), name="sluice-serve-ready",
                     daemon=True).start()
    while not done.wait(0.05):
        if proc.poll() is not None:
            done.wait(0.5)
            break
        if time.monotonic() > deadline:
            raise ServerStartError(late)
    if ready and ready[0]["event"] == "error":
        name = str(ready[0].get("name", "ServeError"))
        raise server_error(name, str(ready[0].get("message", "")), name)
    return ready[0] if ready else None


class ServerProcess:
    """A running server child; :meth:`stop` ends it (so does losing the last reference to this object)."""

    def __init__(self, config: Dict[str, Any], *, log_prefix: str = "sluice serve", start_timeout: float = 300.0,
                 forward_stderr: bool = True) -> None:
        checkout = find_checkout()
        entry = find_entry(checkout)
        deno = find_deno(checkout)
        self._tail: Deque[str] = collections.deque(maxlen=40)
        self.proc: Optional[subprocess.Popen] = None
        self._stopper: Optional[weakref.finalize] = None
        #: How :meth:`stop` ended the child (``"exited"``, ``"terminated"``, ``"killed"``); None before.
        self.ended: Optional[str] = None
        try:
            with _sigint_held():
                self.dir = tempfile.mkdtemp(prefix="sluice-")
                self.socket = os.path.join(self.dir, "serve.sock")
                cfg = dict(config, socket=self.socket, exitOnStdinEof=True, removeDir=self.dir, logConnections=False)
                self.proc = subprocess.Popen(
                    [deno, "run", *DENO_FLAGS, str(entry), "--config", json.dumps(cfg)],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    start_new_session=True,
                )
                # The threads below hold the pipes, not this object: once it is unreferenced this stops the child.
                self._stopper = weakref.finalize(self, _stop, self.proc, self.dir, 3.0)
            self.pid = self.proc.pid
            self._stderr_thread = threading.Thread(
                target=_pump_stderr, args=(self.proc.stderr, self._tail, forward_stderr, log_prefix),
                name="sluice-serve-stderr", daemon=True)
            self._stderr_thread.start()
            self._wait_ready(start_timeout)
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self, timeout: float) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        ready = wait_ready(self.proc, deadline, f"the sluice server did not start listening within {timeout:.0f} s")
        if ready is None:
            code = self.proc.wait()
            self._stderr_thread.join(1.0)
            raise ServerStartError(
                f"the sluice server exited with status {code} before listening:\n  " + "\n  ".join(self.tail())
            )

    def tail(self) -> List[str]:
        return list(self._tail)

    def alive(self) -> bool:
        assert self.proc is not None
        return self.proc.poll() is None

    def died(self, what: str) -> ServerDiedError:
        """The error to raise once the server is found dead (waits briefly for its status and last words)."""
        assert self.proc is not None
        try:
            code = self.proc.wait(1.5)
        except subprocess.TimeoutExpired:
            code = None
        self._stderr_thread.join(0.5)
        status = (
            "is still running" if code is None
            else f"was killed by signal {-code}" if code < 0
            else f"exited with status {code}"
        )
        return ServerDiedError(f"{what}: the sluice server (pid {self.pid}) {status}", code, self.tail())

    def stop(self) -> None:
        """Closes its stdin (it exits), then terminates or kills it if it lingers; removes its socket dir; says
        how it ended in :attr:`ended`. Idempotent."""
        if self._stopper is not None:
            ended = self._stopper()
        elif getattr(self, "dir", None) is not None:
            ended = _stop(self.proc, self.dir, 3.0)
        else:
            return
        if ended is not None:
            self.ended = ended
