"""Starting a sluice batch server as a child process (``deno run -A src/serve/main.ts --config JSON``).

Deno is found through ``SLUICE_DENO``, else ``node_modules/.bin/deno`` of the sluice checkout (how the README
installs it), else ``deno`` on ``PATH``. The checkout is ``SLUICE_ROOT``, else the one this package sits in
(``<root>/python/sluice``), else the nearest parent of the working directory holding ``src/serve/main.ts``.

The server gets its own session (Ctrl-C in the trainer does not reach it; the client stops it) and a pipe on
stdin: when the trainer dies, however, the pipe closes and the server exits, so it never outlives its trainer.
"""
from __future__ import annotations

import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Deque, Dict, List

from .errors import ServerDiedError, ServerStartError, server_error

ENTRY = Path("src") / "serve" / "main.ts"


def find_root() -> Path:
    """The sluice checkout holding the server's entry module."""
    env = os.environ.get("SLUICE_ROOT")
    if env:
        root = Path(env)
        if not (root / ENTRY).is_file():
            raise ServerStartError(f"SLUICE_ROOT={env} does not hold {ENTRY}")
        return root
    here = Path(__file__).resolve().parents[2]
    if (here / ENTRY).is_file():
        return here
    cwd = Path.cwd().resolve()
    for d in (cwd, *cwd.parents):
        if (d / ENTRY).is_file():
            return d
    raise ServerStartError(
        f"cannot find the sluice checkout ({ENTRY}): set SLUICE_ROOT to it, or pass socket= to connect to a "
        "running `sluice serve`"
    )


def find_deno(root: Path) -> str:
    """The Deno executable."""
    env = os.environ.get("SLUICE_DENO")
    if env:
        if not os.access(env, os.X_OK):
            raise ServerStartError(f"SLUICE_DENO={env} is not an executable file")
        return env
    local = root / "node_modules" / ".bin" / "deno"
    if os.access(local, os.X_OK):
        return str(local)
    found = shutil.which("deno")
    if found:
        return found
    raise ServerStartError(
        f"Deno not found: run `npm install` in {root} (the README's set-up), or set SLUICE_DENO to a deno executable"
    )


class ServerProcess:
    """A running server child; :meth:`stop` ends it."""

    def __init__(self, config: Dict[str, Any], *, log_prefix: str = "sluice serve", start_timeout: float = 300.0,
                 forward_stderr: bool = True) -> None:
        root = find_root()
        deno = find_deno(root)
        self.dir = tempfile.mkdtemp(prefix="sluice-")
        self.socket = os.path.join(self.dir, "serve.sock")
        cfg = dict(config, socket=self.socket, exitOnStdinEof=True, removeDir=self.dir, logConnections=False)
        self._tail: Deque[str] = collections.deque(maxlen=40)
        self._forward = forward_stderr
        self._prefix = log_prefix
        self.proc = subprocess.Popen(
            [deno, "run", "-A", "--no-prompt", str(root / ENTRY), "--config", json.dumps(cfg)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        self.pid = self.proc.pid
        self._stderr_thread = threading.Thread(target=self._pump_stderr, name="sluice-serve-stderr", daemon=True)
        self._stderr_thread.start()
        self._wait_ready(start_timeout)

    def _pump_stderr(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            self._tail.append(line)
            if self._forward:
                print(f"[{self._prefix}] {line}" if not line.startswith("sluice") else line, file=sys.stderr)

    def _wait_ready(self, timeout: float) -> None:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        # A reader thread: readline() on the pipe would block past the deadline and past the child's death.
        ready: List[Any] = []
        done = threading.Event()

        def read() -> None:
            assert self.proc.stdout is not None
            for raw in self.proc.stdout:
                try:
                    msg = json.loads(raw.decode("utf-8"))
                except ValueError:
                    continue
                # "ready", or "error" when the server cannot start (an option misspelled or out of range)
                if isinstance(msg, dict) and msg.get("event") in ("ready", "error"):
                    ready.append(msg)
                    break
            done.set()

        threading.Thread(target=read, name="sluice-serve-ready", daemon=True).start()
        while not done.wait(0.05):
            if self.proc.poll() is not None:
                done.wait(0.5)
                break
            if time.monotonic() > deadline:
                self.stop()
                raise ServerStartError(f"the sluice server did not start listening within {timeout:.0f} s")
        if ready and ready[0]["event"] == "error":
            self.stop()
            name = str(ready[0].get("name", "ServeError"))
            raise server_error(name, str(ready[0].get("message", "")), name)
        if not ready:
            code = self.proc.wait()
            self._stderr_thread.join(1.0)
            raise ServerStartError(
                f"the sluice server exited with status {code} before listening:\n  " + "\n  ".join(self.tail())
            )

    def tail(self) -> List[str]:
        return list(self._tail)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def died(self, what: str) -> ServerDiedError:
        """The error to raise once the server is found dead (waits briefly for its status and last words)."""
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

    def stop(self, timeout: float = 5.0) -> None:
        """Closes its stdin (it exits), then terminates or kills it if it lingers; removes its socket dir."""
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.terminate()
                try:
                    self.proc.wait(2.0)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                if f is not None:
                    f.close()
            except OSError:
                pass
        shutil.rmtree(self.dir, ignore_errors=True)
