"""sluice: video batches for PyTorch from a sluice server (Deno, FFmpeg, NVDEC), zero-copy through shared memory.

    import sluice
    loader = sluice.Loader("data/train", batch_size=8, num_frames=16, width=112, height=112)
    for batch in loader:          # batch.video: uint8 [8, 16, 112, 112, 3], batch.labels: int64 [8]
        ...

``sluice.doctor()`` says what this machine gives the loader (FFmpeg, GPUs, NVDEC, /dev/shm) and what to fix.
See :class:`sluice.Loader` for the options and the slot lifetime rule, ``sluice.torch.IterableDataset`` for
``torch.utils.data.DataLoader``, and docs/serve_protocol.md in the sluice repository for the wire protocol.
"""
from ._doctor import doctor
from ._loader import Batch, Loader
from ._protocol import PROTOCOL_VERSION
from .errors import ProtocolError, ServeError, ServerDiedError, ServerStartError, SlotsHeldError, SluiceError

__version__ = "0.1.0"
__all__ = [
    "Loader",
    "doctor",
    "Batch",
    "PROTOCOL_VERSION",
    "SluiceError",
    "ServeError",
    "ProtocolError",
    "ServerDiedError",
    "ServerStartError",
    "SlotsHeldError",
]
