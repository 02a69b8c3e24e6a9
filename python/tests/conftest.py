"""Shared fixtures of the Python client's tests: the checkout, Deno, a synthetic dataset, the in-process oracle.

Run with ``/usr/bin/python3 -m pytest python/tests`` from the checkout (no ``pip install`` needed: this file puts
``python/`` on ``sys.path``).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest

PY = Path(__file__).resolve().parents[1]
ROOT = PY.parent
sys.path.insert(0, str(PY))

DENO = os.environ.get("SLUICE_DENO") or str(ROOT / "node_modules" / ".bin" / "deno")

#: Loader options (server-side, camelCase) the tests share with the in-process oracle.
CLIP = {"numFrames": 8, "width": 64, "height": 48}


def deno(*args: str, env: Dict[str, str] | None = None, timeout: float = 300) -> str:
    out = subprocess.run([DENO, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                         env={**os.environ, **(env or {})})
    if out.returncode != 0:
        raise RuntimeError(f"deno {' '.join(args[:3])} failed:\n{out.stderr[-3000:]}")
    return out.stdout


@pytest.fixture(scope="session")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> str:
    """12 synthetic videos in 3 classes (2 s, 25 fps, 128x96), labels drawn into the frames."""
    d = tmp_path_factory.mktemp("dataset")
    deno("eval", "import { makeSyntheticDataset } from './src/prep/synthetic.ts';"
         f"makeSyntheticDataset({json.dumps(str(d))}, {{ videos: 12, classes: 3, durationSec: 2, width: 128, "
         "height: 96 });")
    return str(d)


def reference(options: Dict[str, Any], epochs: int, env: Dict[str, str] | None = None) -> List[Dict[str, Any]]:
    """Batches of the same loader iterated in one Deno process (no server): one dict per batch."""
    out = deno("run", "-A", "tests/serve/fixtures/reference_batches.ts", json.dumps(options), str(epochs), env=env)
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


@pytest.fixture(scope="session")
def nvdouble() -> str:
    """Path of the NVDEC/CUDA test double (built with cc by tests/nvdec/double/build.ts)."""
    try:
        out = deno("eval", "import { buildDouble } from './tests/nvdec/double/build.ts';"
                   "console.log(await buildDouble());")
    except RuntimeError as e:
        pytest.skip(f"the NVDEC test double could not be built (needs cc and FFmpeg headers): {e}")
    return out.strip()


@pytest.fixture(scope="session")
def cut_dataset(tmp_path_factory: pytest.TempPathFactory) -> str:
    """3 whole videos and one faststart MP4 cut in half (its header promises 4 s, its packets stop near 1.4 s),
    made with the ffmpeg CLI: with ``on_clip_error="fail"``, an epoch of 4 clips per video fails mid-way."""
    d = tmp_path_factory.mktemp("cut_dataset")
    (d / "a").mkdir()

    def encode(out: Path, seconds: int) -> None:
        subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-f", "lavfi", "-i",
                        f"testsrc=size=128x96:rate=25:duration={seconds}", "-pix_fmt", "yuv420p", "-c:v", "libx264",
                        "-threads", "1", "-movflags", "+faststart", "-y", str(out)], check=True)

    for i in range(3):
        encode(d / "a" / f"v{i}.mp4", 2)
    whole = d / "whole.mp4"
    encode(whole, 4)
    data = whole.read_bytes()
    (d / "a" / "cut.mp4").write_bytes(data[: len(data) // 2])
    whole.unlink()
    return str(d)
