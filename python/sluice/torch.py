"""``sluice.torch.IterableDataset``: a :class:`sluice.Loader` for code that expects
``torch.utils.data.DataLoader``.

Each item is one whole batch, a dict ``{"video": Tensor, "labels": Tensor, "clips": [dict, ...]}`` (and
``"audio"`` with the loader's ``audio`` option). Use ``num_workers=0`` (sluice decodes in its own process;
worker processes would each start a server) and ``batch_size=None`` (sluice batches already), or
``batch_size=N``: the ``DataLoader`` then joins N sluice batches into one batch of all their clips
(:func:`collate`: ``video`` ``[sum of B, ...]``, ``labels``, ``audio`` likewise, ``clips`` every clip dict as
the server sent it), an epoch's short last batch and failed clips' substitutes included. The slot lifetime
rule of :class:`sluice.Loader` applies to ``video``: with ``batch_size=N`` the ``DataLoader`` holds N batches,
so N slots, until it joins them (start the loader with ``slots=N`` or more, or pass ``copy=True``); the joined
batch is a copy and holds none. ``batch_size=None`` holds one.

``log_stats(writer, loader, step)`` writes a loader's data wait, per-stage rates and bottleneck to a TensorBoard
``SummaryWriter`` (or any object with ``add_scalar``).
"""
from __future__ import annotations

from typing import Any, Dict, Iterator, Mapping, Sequence

import torch
import torch.utils.data

from ._loader import Loader
from ._log_stats import log_stats

__all__ = ["IterableDataset", "BatchItem", "collate", "log_stats"]


class BatchItem(dict):
    """One sluice batch as an :class:`IterableDataset` item: a ``dict`` with ``video``, ``labels``, ``clips``
    (and ``audio``), of a type of its own so that ``DataLoader``'s default collation joins items with
    :func:`collate` (their clip dicts differ in keys: a failed clip's substitute has ``replaces``; and the
    epoch's last batch may be short, which stacking refuses)."""


def collate(items: Sequence[Mapping[str, Any]]) -> Dict[str, Any]:
    """Joins sluice batches into one batch of all their clips, in order: ``video``, ``labels`` and ``audio``
    concatenated along the clip axis (a copy: it holds no slot), ``clips`` the list of every clip dict as the
    server sent it. What ``DataLoader(IterableDataset(...), batch_size=N)`` yields (torch 1.13 or later);
    pass ``collate_fn=sluice.torch.collate`` where the ``DataLoader`` is given another ``collate_fn`` chain or
    torch is older."""
    if len(items) == 0:
        raise ValueError("sluice.torch.collate: no batches to join")
    out: Dict[str, Any] = {
        "video": torch.cat([torch.as_tensor(i["video"]) for i in items]),
        "labels": torch.cat([torch.as_tensor(i["labels"]) for i in items]),
        "clips": [c for i in items for c in i["clips"]],
    }
    if "audio" in items[0]:
        out["audio"] = torch.cat([torch.as_tensor(i["audio"]) for i in items])
    return out


def _collate_items(batch: Sequence[Mapping[str, Any]], *, collate_fn_map: Any = None) -> Dict[str, Any]:
    return collate(batch)


try:  # torch >= 1.13: default_collate looks an item's type up here first (its documented extension point)
    from torch.utils.data._utils.collate import default_collate_fn_map
except ImportError:  # pragma: no cover - older torch: pass collate_fn=sluice.torch.collate
    default_collate_fn_map = None
if default_collate_fn_map is not None:
    default_collate_fn_map[BatchItem] = _collate_items


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

    def __iter__(self) -> Iterator[BatchItem]:
        for b in self.loader:
            item = BatchItem(video=b.video, labels=b.labels, clips=b.clips)
            if b.audio is not None:
                item["audio"] = b.audio
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
