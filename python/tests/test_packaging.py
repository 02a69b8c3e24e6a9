"""Packaging: `pip install ./python` (what the README says) leaves the checkout clean: its build outputs
(python/build/, *.egg-info) are ignored by git."""
from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from conftest import PY, ROOT


def test_pip_install_leaves_no_untracked_files(tmp_path):
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    made = [PY / "build", PY / "sluice.egg-info"]
    existed = [p for p in made if p.exists()]

    def untracked():
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", "--", str(PY)],
                                cwd=ROOT, capture_output=True, text=True, check=True).stdout
        return {line for line in status.splitlines() if line.startswith("??")}

    before = untracked()
    try:
        out = subprocess.run([sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps",
                              "--no-index", "--target", str(tmp_path / "site"), str(PY)],
                             capture_output=True, text=True, timeout=300)
        if out.returncode != 0:
            pytest.skip(f"pip cannot build here: {out.stderr.strip().splitlines()[-1:]}")
        assert (tmp_path / "site" / "sluice" / "_loader.py").exists()
        assert any(p.exists() for p in made), "the build left nothing behind to check"
        assert untracked() == before
    finally:
        for p in made:
            if p not in existed:
                shutil.rmtree(p, ignore_errors=True)
