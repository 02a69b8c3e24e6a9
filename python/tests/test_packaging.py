"""Packaging: `pip install ./python` makes a client that runs outside the clone. The wheel carries the server's
TypeScript (sluice/_deno), so a fresh virtual environment loads a batch from a temporary directory with no
SLUICE_ROOT and nothing of the clone on any path, Deno found through SLUICE_DENO, PATH or the `deno` Python
package; a deno.json or package.json above the environment is not read. The build leaves the clone clean."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Dict

import pytest

from conftest import CLIP, DENO, PY, ROOT

#: Build outputs `pip install ./python` leaves in the clone (ignored by git).
MADE = [PY / "build", PY / "sluice.egg-info"]


def remove_build_outputs() -> None:
    """Removes python/build and python/sluice.egg-info: a build reusing an earlier one's could ship its files."""
    for p in MADE:
        shutil.rmtree(p, ignore_errors=True)


@pytest.fixture
def clean_build():
    remove_build_outputs()
    yield
    remove_build_outputs()


def test_pip_install_leaves_no_untracked_files(tmp_path, clean_build):
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")

    def untracked():
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", "--", str(PY)],
                                cwd=ROOT, capture_output=True, text=True, check=True).stdout
        return {line for line in status.splitlines() if line.startswith("??")}

    before = untracked()
    out = subprocess.run([sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-index",
                          "--target", str(tmp_path / "site"), str(PY)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    site = tmp_path / "site" / "sluice"
    assert (site / "_loader.py").exists()
    # The server's TypeScript, as in the clone (the .ts files only).
    packaged = sorted(p.relative_to(site / "_deno").as_posix() for p in (site / "_deno").rglob("*.ts"))
    assert packaged == typescript_of_the_clone()
    assert (site / "_deno" / "src" / "serve" / "main.ts").read_bytes() == (ROOT / "src/serve/main.ts").read_bytes()
    assert any(p.exists() for p in MADE), "the build left nothing behind to check"
    assert untracked() == before


def test_an_sdist_carries_the_server_into_a_wheel_built_away_from_the_clone(tmp_path, clean_build):
    build = f"from setuptools import build_meta; build_meta.build_sdist({str(tmp_path)!r})"
    subprocess.run([sys.executable, "-c", build], cwd=PY, check=True, capture_output=True, timeout=300)
    (sdist,) = tmp_path.glob("sluice-*.tar.gz")
    with tarfile.open(sdist) as t:
        t.extractall(tmp_path / "unpacked")
    (source,) = (tmp_path / "unpacked").iterdir()
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-index",
                          "-w", str(tmp_path / "wheels"), str(source)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    (wheel,) = (tmp_path / "wheels").glob("sluice-*.whl")
    with zipfile.ZipFile(wheel) as z:
        packaged = sorted(n[len("sluice/_deno/"):] for n in z.namelist()
                          if n.startswith("sluice/_deno/") and n.endswith(".ts"))
    assert packaged == typescript_of_the_clone()


def typescript_of_the_clone():
    """The .ts files the wheel must carry, as paths relative to the clone."""
    return sorted([*(p.relative_to(ROOT).as_posix() for d in ("src", "ffi") for p in (ROOT / d).rglob("*.ts")),
                   "mod.ts"])


#: Run by the environment's python in a directory outside the clone: loads one batch and reports what it used.
LOAD_ONE = """
import json, os, sys
import sluice
dataset, root = sys.argv[1], os.path.realpath(sys.argv[2])
inside = [p for p in sys.path if p and os.path.realpath(p).startswith(root + os.sep)]
with sluice.Loader(dataset, batch_size=2, num_frames=8, width=64, height=48, shuffle=False) as loader:
    batch = next(iter(loader))
    argv = open(f"/proc/{loader._server.pid}/cmdline").read().split(chr(0))
    print(json.dumps({"module": sluice.__file__, "clone_on_path": inside, "argv": argv,
                      "shape": list(batch.video.shape), "labels": batch.labels.tolist(),
                      "clips": [[c["path"], c["label"]] for c in batch.clips]}))
"""


@pytest.fixture(scope="module")
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment (with the system's numpy and torch) under a directory outside the clone,
    `pip install ./python` done in it; above it, a project whose deno.json and package.json Deno cannot parse."""
    top = tmp_path_factory.mktemp("outside")
    (top / "deno.json").write_text("{ not json")
    (top / "package.json").write_text("{ not json")
    remove_build_outputs()
    try:
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(top / "venv")], check=True,
                       capture_output=True, timeout=300)
        out = subprocess.run([str(top / "venv/bin/python"), "-m", "pip", "install", "--no-build-isolation",
                              "--no-deps", "--no-index", str(PY)], cwd=top, capture_output=True, text=True,
                             timeout=300)
        assert out.returncode == 0, f"pip install ./python failed (scripts/setup.sh --dev):\n{out.stderr[-3000:]}"
    finally:
        remove_build_outputs()
    # Deno, as a user would have it: a binary outside the clone (a link to the one the clone's npm installed).
    (top / "bin").mkdir()
    os.symlink(os.path.realpath(DENO), top / "bin" / "deno")
    # The `deno` package of PyPI exposes its binary as deno.find_deno_bin(); this one is shaped the same way.
    pkg = top / "deno-package" / "deno"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(f"def find_deno_bin():\n    return {str(top / 'bin' / 'deno')!r}\n")
    (top / "work").mkdir()
    return top


@pytest.mark.parametrize("how", ["SLUICE_DENO", "PATH", "deno package"])
def test_a_fresh_venv_outside_the_clone_loads_a_batch(outside: Path, dataset: str, how: str):
    env: Dict[str, str] = {"PATH": "/usr/bin:/bin", "HOME": str(outside / "work"),
                           "DENO_DIR": str(outside / "deno-cache")}
    if how == "SLUICE_DENO":
        env["SLUICE_DENO"] = str(outside / "bin" / "deno")
    elif how == "PATH":
        env["PATH"] = f"{outside / 'bin'}:{env['PATH']}"
    else:
        env["PYTHONPATH"] = str(outside / "deno-package")
    out = subprocess.run([str(outside / "venv/bin/python"), "-c", LOAD_ONE, dataset, str(ROOT)],
                         cwd=outside / "work", env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    site = outside / "venv" / "lib"
    assert got["module"].startswith(str(site)) and got["clone_on_path"] == []
    entry = [a for a in got["argv"] if a.endswith("main.ts")]
    assert len(entry) == 1 and entry[0].startswith(str(site)) and entry[0].endswith("sluice/_deno/src/serve/main.ts")
    assert got["argv"][0] == str(outside / "bin" / "deno")
    assert got["shape"] == [2, CLIP["numFrames"], CLIP["height"], CLIP["width"], 3]
    # Each clip's label is its class folder's index (the dataset's classes, sorted).
    classes = sorted(d.name for d in Path(dataset).iterdir() if d.is_dir())
    assert got["labels"] == [classes.index(Path(p).parent.name) for p, _ in got["clips"]]
    assert [label for _, label in got["clips"]] == got["labels"]
    # Nothing was read from, fetched into or written beside the project above the environment.
    assert sorted(p.name for p in outside.iterdir()) == ["bin", "deno-cache", "deno-package", "deno.json",
                                                         "package.json", "venv", "work"]


def test_without_deno_anywhere_the_error_says_where_it_was_looked_for(outside: Path, dataset: str):
    code = ("import sluice, sys\ntry:\n    sluice.Loader(sys.argv[1], batch_size=2, num_frames=8, width=64, "
            "height=48)\nexcept sluice.ServerStartError as e:\n    print(e)\n")
    out = subprocess.run([str(outside / "venv/bin/python"), "-c", code, dataset], cwd=outside / "work",
                         env={"PATH": "/usr/bin:/bin", "HOME": str(outside / "work")}, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "Deno not found" in out.stdout
    assert "SLUICE_DENO" in out.stdout and "PATH" in out.stdout and "pip install deno" in out.stdout
