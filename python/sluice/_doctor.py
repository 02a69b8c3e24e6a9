"""``sluice.doctor()``: what this machine gives the loader, as ``sluice doctor --json`` reports it.

It runs the report's TypeScript (``src/cli/doctor.ts`` of the checkout or of the installed package) with the Deno
the loader would use, and returns the parsed JSON: ``ok`` (False when the loader cannot run here), ``ffmpeg``
(found where, release, layout table and whether it runs in CI, decoders, swresample), ``deno``, ``cuda`` (driver,
each GPU and its NVDEC engines), ``nvcuvid``, ``nvml``, ``shm``, ``cores`` and ``problems`` (each with
``severity``, ``what`` and the ``fix``). See docs/cli.md in the sluice repository.
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any, Dict, Optional

from ._server import DENO_FLAGS, PACKAGED, find_checkout, find_deno
from .errors import ServerStartError

ENTRY = Path("src") / "cli" / "doctor.ts"


def doctor(shm: Optional[str] = None, timeout: float = 120.0) -> Dict[str, Any]:
    """Checks this machine for the loader and returns the report (a dict; see the module docs).

    ``shm`` is the shared-memory file system to check (default ``/dev/shm``). The report is returned whether or
    not the loader can run (``report["ok"]``); an exception is raised only when the check itself cannot run
    (no Deno, no sluice sources), as :class:`sluice.ServerStartError`.
    """
    checkout = find_checkout()
    root = checkout if checkout is not None else PACKAGED
    entry = root / ENTRY
    if not entry.is_file():
        raise ServerStartError(f"this sluice package holds no {ENTRY} ({entry} is missing)")
    args = [find_deno(checkout), "run", *DENO_FLAGS, str(entry)]
    if shm is not None:
        args += ["--shm", str(shm)]
    out = subprocess.run(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         timeout=timeout, check=False)
    try:
        report: Dict[str, Any] = json.loads(out.stdout)
    except ValueError:
        err = out.stderr.decode(errors="replace").strip().splitlines()
        raise ServerStartError(
            f"sluice doctor failed (exit {out.returncode}): {err[-1] if err else 'no output'}") from None
    return report
