"""The door of ``sluice.Loader(...)``'s keywords: the client's own are checked here; the loader's are made
JSON (numpy and torch scalars and arrays become Python numbers and lists, so ``width=np.int64(64)`` is the
integer 64) and checked by the server, once, which names them as written. A Python ``float`` is sent as one
(``8.0``), and the server refuses it where an option takes integers (``batch_size=8.0``)."""
from __future__ import annotations

import math
import numbers
import operator
import os
from typing import Any, Optional

from .errors import InvalidArgumentError, server_error

_WHO = "sluice.Loader: "


def invalid(message: str) -> InvalidArgumentError:
    """The error the server raises for a keyword, raised by the client (same class, code and name)."""
    return server_error("InvalidArgumentError", _WHO + message, "InvalidArgumentError")  # type: ignore[return-value]


def _bad(name: str, want: str, value: Any) -> InvalidArgumentError:
    return invalid(f"{name} must be {want}, got {value!r} ({type(value).__name__})")


def wire(value: Any, name: str) -> Any:
    """``value`` as JSON sends it: numpy/torch scalars as ``int``/``float``/``bool``, arrays and tuples as
    lists, dicts with their values converted. Raises ``InvalidArgumentError`` naming ``name`` for a value JSON
    cannot carry (NaN, infinity, an object)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral):  # int, numpy integers
        return operator.index(value)
    if isinstance(value, float):  # float, numpy.float64
        if not math.isfinite(value):
            raise _bad(name, "a finite number (leave it out, or None, for the default)", value)
        return float(value)
    if isinstance(value, dict):
        return {k: wire(v, f'{name}["{k}"]') for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [wire(v, f"{name}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    tolist = getattr(type(value), "tolist", None)  # numpy scalars (np.bool_, np.float32) and arrays, tensors
    if callable(tolist):
        return wire(value.tolist(), name)
    raise _bad(name, "a number, string, boolean, list or dict", value)


def flag(value: Any, name: str) -> bool:
    """A boolean keyword: ``True``/``False`` (numpy's too); anything else (``"no"``, 1) is an error."""
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return bool(value)
    raise _bad(name, "True or False", value)


def integer(value: Any, name: str, low: int) -> Optional[int]:
    """An integer keyword >= ``low``, or None: Python's and numpy's integers; not a float, bool or string."""
    if value is None:
        return None
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and type(value).__name__ != "bool_":
        if operator.index(value) >= low:
            return operator.index(value)
    raise _bad(name, f"an integer >= {low} (or None)", value)


def seconds(value: Any, name: str) -> Optional[float]:
    """A duration keyword: a real number > 0 (``inf``: no limit, as None), or None."""
    if value is None:
        return None
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and value > 0:
        return None if math.isinf(value) else float(value)
    raise _bad(name, "a number of seconds > 0 (or None)", value)


def path(value: Any, name: str) -> Optional[str]:
    """A path (or URL) keyword: ``str`` or ``os.PathLike``, or None."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    raise _bad(name, "a path or URL (str or os.PathLike)", value)
