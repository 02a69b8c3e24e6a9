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
        #: The class of the error on the server (``"ServeError"`` for the protocol's own codes).
        self.name = "ServeError"


class ProtocolError(ServeError):
    """The server sent something that breaks the protocol (a bad frame or field); the connection is closed."""


# The server's own errors, by the class name its ``error`` messages carry (``name``): the same names as the
# sluice classes (src/errors.ts), so ``except sluice.errors.DatasetError`` reads as it would in Deno. Each is a
# ServeError (the server reported it); invalid options are also a ValueError, I/O failures an OSError.


class InvalidArgumentError(ServeError, ValueError):
    """An option or argument is out of range or inconsistent (checked by the server)."""


class DatasetError(ServeError):
    """The dataset (directory, manifest, shards) could not be read, or holds no usable video."""


class MediaError(ServeError):
    """A media file could not be opened, demuxed or decoded."""


class ClipError(MediaError):
    """One clip could not be delivered as asked (with ``on_clip_error="fail"``)."""


class FetchError(ServeError, OSError):
    """A video or manifest could not be fetched (HTTP error, timeout, dropped connection)."""


class ShardError(ServeError):
    """A shard or its index is damaged or does not match."""


class LibraryNotFoundError(ServeError):
    """The server could not find the FFmpeg (or CUDA) libraries."""


class LibraryVersionError(ServeError):
    """The server found FFmpeg libraries of a release sluice does not support."""


class CudaError(ServeError):
    """A CUDA driver call failed: on the server (it reported it), or in this process opening or reading a GPU
    slot (``call`` names the driver function and ``result`` its ``CUresult``; both ``None`` for the server's,
    whose message names them)."""

    def __init__(self, code: str, message: str, *, call: Optional[str] = None, result: Optional[int] = None):
        super().__init__(code, message)
        #: The driver function that failed in this process, e.g. ``"cuIpcOpenMemHandle_v2"``.
        self.call = call
        #: Its ``CUresult``.
        self.result = result

    @classmethod
    def of_call(cls, call: str, result: int) -> "CudaError":
        """The error for a driver call of this process that returned ``result``."""
        err = cls("CudaError", f"{call} failed with CUresult {result}", call=call, result=result)
        err.name = "CudaError"
        return err


class NvdecUnsupportedError(ServeError):
    """NVDEC cannot decode the stream (codec, bit depth, chroma format or size)."""


class PipelineFailure(ServeError):
    """A stage of the server's loader failed more often than its failure budget allows."""


class WorkerCrashedError(ServeError):
    """A decode Worker of the server died."""


class BackendError(ServeError):
    """The server's subprocess backend failed."""


class BackendExitedError(BackendError):
    """The server's subprocess backend exited while its items were still expected."""


class BackendStalledError(BackendError):
    """The server's subprocess backend stopped sending anything and was killed."""


_BY_NAME = {cls.__name__: cls for cls in (
    InvalidArgumentError, DatasetError, MediaError, ClipError, FetchError, ShardError, LibraryNotFoundError,
    LibraryVersionError, CudaError, NvdecUnsupportedError, PipelineFailure, WorkerCrashedError, BackendError,
    BackendExitedError, BackendStalledError,
)}


def server_error(code: str, message: str, name: Optional[str] = None) -> ServeError:
    """The exception for a server's ``error`` message: the class of the same name when there is one (see above),
    else :class:`ServeError` (the protocol's own codes, and errors the client has no class for)."""
    # An older server sends no name; its code is then the class name of a sluice error, or a protocol code.
    cls = _BY_NAME.get(name if name is not None else code, ServeError)
    err = cls(code, message)
    err.name = name if name is not None else cls.__name__
    return err


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


class SlotsHeldError(SluiceError):
    """The trainer holds every slot of the server (it references that many batches), so the next batch can never
    come: keep fewer batches, copy what it keeps, use ``copy=True``, or more ``slots``."""

    def __init__(self, message: str, held: int, slots: int) -> None:
        super().__init__(message)
        #: Batches this process holds.
        self.held = held
        #: The server's slots.
        self.slots = slots
