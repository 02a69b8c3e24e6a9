"""``sluice.torch.IterableDataset``: a :class:`sluice.Loader` for code that expects
``torch.utils.data.DataLoader(dataset, batch_size=None)``.

Each item is one whole batch, a dict ``{"video": Tensor, "labels": Tensor, "clips": [dict, ...]}``. Use
``batch_size=None`` (sluice batches already) and ``num_workers=0`` (sluice decodes in its own process; worker
processes would each start a server). The slot lifetime rule of :class:`sluice.Loader` applies to ``video``:
``DataLoader(ds, batch_size=N)`` collates N sluice batches, so it holds N slots at once (start the loader with
``slots=N`` or more, or pass ``copy=True``); ``batch_size=None`` holds one.

``log_stats(writer, loader, step)`` writes a loader's data wait, per-stage rates and bottleneck to a TensorBoard
``SummaryWriter`` (or any object with ``add_scalar``).
"""
from __future__ import annotations

from typing import Any, Dict, Iterator

import torch.utils.data

from ._loader import Loader
from ._log_stats import log_stats

__all__ = ["IterableDataset", "log_stats"]


class IterableDataset(torch.utils.data.IterableDataset):
    """Takes the arguments of :class:`sluice.Loader`; the server starts at the first iteration."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()
        self._args = args
        self._kwargs = kwargs
        self._loader: Loader | None = None
        self._epoch: int | None = None

    @property
    def loader(self) -> Loader:
        """The underlying loader (started on first use)."""
        if torch.utils.data.get_worker_info() is not None:
            raise RuntimeError(
                "sluice.torch.IterableDataset runs in the main process: use DataLoader(..., num_workers=0)"
            )
        if self._loader is None:
            self._loader = Loader(*self._args, **self._kwargs)
            if self._epoch is not None:
                self._loader.set_epoch(self._epoch)
        return self._loader

    def __len__(self) -> int:
        return len(self.loader)

    def set_epoch(self, epoch: int) -> None:
        """Makes the next iteration run ``epoch`` (like ``DistributedSampler.set_epoch``)."""
        self._epoch = epoch
        if self._loader is not None:
            self._loader.set_epoch(epoch)

    def __iter__(self) -> Iterator[Dict[str, Any]]:
        for b in self.loader:
            item = {"video": b.video, "labels": b.labels, "clips": b.clips}
            del b  # while suspended, only the item holds the batch's slot
            yield item
            del item

    def state_dict(self) -> Dict[str, Any]:
        """The loader's :meth:`sluice.Loader.state_dict` (what ``torchdata``'s ``StatefulDataLoader`` saves)."""
        return self.loader.state_dict()

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """The loader's :meth:`sluice.Loader.load_state_dict`: the next iteration continues where ``state`` left
        off."""
        self.loader.load_state_dict(state)

    def close(self) -> None:
        """Stops the loader (and the server it started)."""
        if self._loader is not None:
            self._loader.close()
            self._loader = None
