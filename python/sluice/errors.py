"""Errors of the sluice client. Every error it raises on purpose is a :class:`SluiceError`."""
from __future__ import annotations

from typing import List, Optional


class SluiceError(Exception):
    """Root of the client's errors."""


class ServeError(SluiceError):
    """The server reported an error (its ``code`` is one of docs/serve_protocol.md), e.g. ``protocol-version``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{message} [{code}]")
        self.code = code
        self.message = message


class ProtocolError(ServeError):
    """The server sent something that breaks the protocol (a bad frame or field); the connection is closed."""


class ServerDiedError(SluiceError):
    """The server went away (exited, was killed, or closed the connection) while the client needed it."""

    def __init__(self, message: str, returncode: Optional[int] = None, stderr_tail: Optional[List[str]] = None):
        tail = stderr_tail or []
        if tail:
            message += "\nlast lines of the server's stderr:\n  " + "\n  ".join(tail)
        super().__init__(message)
        self.returncode = returncode
        self.stderr_tail = tail


class ServerStartError(SluiceError):
    """The client could not start a server (Deno or sluice not found, or the server failed before it listened)."""
