"""CUDA IPC for GPU slots, through ctypes and the CUDA driver (``libcuda.so.1``, or ``SLUICE_LIBCUDA`` — the
tests point it at sluice's ABI-level test double, as the Deno side does).

The server exports its slot allocation with ``cuIpcGetMemHandle``; :class:`CudaMapping` opens it here
(``cuIpcOpenMemHandle_v2``) in the device's primary context (the one PyTorch uses), and :class:`CudaArray`
describes one batch inside it through ``__cuda_array_interface__`` (version 2), which ``torch.as_tensor``,
CuPy and Numba accept without a copy (``torch.as_tensor`` keeps a reference to the object, so a tensor holds
its batch's slot). The mapping is closed (``cuIpcCloseMemHandle``) when the last array referring to it is
gone. Work queued on the device may still read a batch after its last reference is dropped: the loader
synchronizes the context (:meth:`CudaMapping.synchronize`) before it gives such a slot back.
"""
from __future__ import annotations

import ctypes
import os
import threading
from typing import Optional, Tuple

from .errors import CudaError, SluiceError

CU_IPC_HANDLE_SIZE = 64
CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 1


class _IpcHandle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_ubyte * CU_IPC_HANDLE_SIZE)]


_lock = threading.Lock()
_driver: Optional["_Driver"] = None


class _Driver:
    def __init__(self) -> None:
        path = os.environ.get("SLUICE_LIBCUDA") or "libcuda.so.1"
        try:
            self.lib = ctypes.CDLL(path)
        except OSError as e:
            raise SluiceError(f"cannot load the CUDA driver ({path}) for GPU batches: {e}") from None
        lib = self.lib
        u64, i32, p = ctypes.c_uint64, ctypes.c_int, ctypes.c_void_p
        lib.cuInit.argtypes = [ctypes.c_uint]
        lib.cuDeviceGet.argtypes = [ctypes.POINTER(i32), i32]
        lib.cuDevicePrimaryCtxRetain.argtypes = [ctypes.POINTER(p), i32]
        lib.cuDevicePrimaryCtxRelease_v2.argtypes = [i32]
        lib.cuCtxPushCurrent_v2.argtypes = [p]
        lib.cuCtxPopCurrent_v2.argtypes = [ctypes.POINTER(p)]
        lib.cuIpcOpenMemHandle_v2.argtypes = [ctypes.POINTER(u64), _IpcHandle, ctypes.c_uint]
        lib.cuIpcCloseMemHandle.argtypes = [u64]
        lib.cuMemcpyDtoH_v2.argtypes = [p, u64, ctypes.c_size_t]
        lib.cuCtxSynchronize.argtypes = []
        for f in ("cuInit", "cuDeviceGet", "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease_v2",
                  "cuCtxPushCurrent_v2", "cuCtxPopCurrent_v2", "cuIpcOpenMemHandle_v2", "cuIpcCloseMemHandle",
                  "cuMemcpyDtoH_v2", "cuCtxSynchronize"):
            getattr(lib, f).restype = i32
        self.check(lib.cuInit(0), "cuInit")

    @staticmethod
    def check(code: int, call: str) -> None:
        if code != 0:
            raise CudaError.of_call(call, code)


def driver() -> _Driver:
    global _driver
    with _lock:
        if _driver is None:
            _driver = _Driver()
        return _driver


class CudaMapping:
    """The server's slot allocation opened in this process (on ``device``'s primary context)."""

    def __init__(self, handle_hex: str, size: int, device: int) -> None:
        d = driver()
        self.size = size
        self.device = device
        self._d = d
        dev = ctypes.c_int()
        d.check(d.lib.cuDeviceGet(ctypes.byref(dev), device), "cuDeviceGet")
        self._dev = dev.value
        ctx = ctypes.c_void_p()
        d.check(d.lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), self._dev), "cuDevicePrimaryCtxRetain")
        self._ctx = ctx
        handle = _IpcHandle()
        raw = bytes.fromhex(handle_hex)
        ctypes.memmove(ctypes.addressof(handle), raw, len(raw))
        ptr = ctypes.c_uint64()
        try:
            with self._current():
                d.check(
                    d.lib.cuIpcOpenMemHandle_v2(ctypes.byref(ptr), handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
                    "cuIpcOpenMemHandle_v2",
                )
        except BaseException:
            d.lib.cuDevicePrimaryCtxRelease_v2(self._dev)
            raise
        self.base = ptr.value
        self._open = True

    def _current(self):
        mapping = self

        class _Ctx:
            def __enter__(self) -> None:
                mapping._d.check(mapping._d.lib.cuCtxPushCurrent_v2(mapping._ctx), "cuCtxPushCurrent_v2")

            def __exit__(self, *exc) -> None:
                popped = ctypes.c_void_p()
                mapping._d.lib.cuCtxPopCurrent_v2(ctypes.byref(popped))

        return _Ctx()

    def read(self, offset: int, length: int) -> bytes:
        """Copies ``length`` bytes at ``offset`` to host memory (tests and diagnostics)."""
        if offset < 0 or length < 0 or offset + length > self.size:
            raise ValueError(f"[{offset}, {offset + length}) is outside {self.size} bytes")
        buf = ctypes.create_string_buffer(length)
        with self._current():
            self._d.check(self._d.lib.cuMemcpyDtoH_v2(buf, self.base + offset, length), "cuMemcpyDtoH_v2")
        return buf.raw

    def synchronize(self) -> None:
        """Waits until the device has finished all work queued in this context (every stream), so no kernel
        still reads a batch whose slot is about to go back to the server."""
        with self._current():
            self._d.check(self._d.lib.cuCtxSynchronize(), "cuCtxSynchronize")

    def close(self) -> None:
        if not getattr(self, "_open", False):
            return
        self._open = False
        with self._current():
            self._d.lib.cuIpcCloseMemHandle(self.base)
        self._d.lib.cuDevicePrimaryCtxRelease_v2(self._dev)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


class CudaArray:
    """One batch in a :class:`CudaMapping`, as ``__cuda_array_interface__`` (keeps the mapping open)."""

    def __init__(self, mapping: CudaMapping, offset: int, shape: Tuple[int, ...], typestr: str) -> None:
        self.mapping = mapping
        self.offset = offset
        self.shape = tuple(shape)
        self.typestr = typestr
        self.ptr = mapping.base + offset
        self.device = mapping.device

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"shape": self.shape, "typestr": self.typestr, "data": (self.ptr, False), "version": 2,
                "strides": None}

    @property
    def nbytes(self) -> int:
        n = int(self.typestr[2:])
        for d in self.shape:
            n *= d
        return n

    def to_bytes(self) -> bytes:
        """The array's bytes, copied to host memory."""
        return self.mapping.read(self.offset, self.nbytes)
