"""Builds the sluice wheel: the Python client and, under ``sluice/_deno``, the TypeScript package its server
runs (``src/``, ``ffi/``, ``mod.ts`` and ``LICENSE`` of the checkout around ``python/``; their ``.ts`` files), so
an installed client needs no checkout. An sdist carries the same copy, and a wheel built from it takes it there.
The metadata is in pyproject.toml."""
from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = Path(__file__).resolve().parent
PACKAGED = Path("sluice") / "_deno"
PARTS = ("src", "ffi", "mod.ts", "LICENSE")
ENTRY = Path("src") / "serve" / "main.ts"


def typescript_package() -> Path:
    """Where the TypeScript package is: the checkout around python/, else the copy an sdist carries."""
    for root in (HERE.parent, HERE / PACKAGED):
        if (root / ENTRY).is_file():
            return root
    raise SystemExit(f"sluice: {ENTRY} is neither in {HERE.parent} nor in {HERE / PACKAGED}: build from a clone")


def copy_typescript(dest: Path) -> None:
    """Copies the TypeScript package to ``dest`` (replacing an earlier copy): its .ts files and LICENSE."""
    source = typescript_package()
    shutil.rmtree(dest, ignore_errors=True)

    def not_typescript(folder: str, names: list) -> list:
        return [n for n in names if not (Path(folder, n).is_dir() or n.endswith(".ts"))]

    for part in PARTS:
        if (source / part).is_dir():
            shutil.copytree(source / part, dest / part, ignore=not_typescript)
        else:
            dest.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source / part, dest / part)


class BuildWithServer(build_py):
    def run(self) -> None:
        super().run()
        copy_typescript(Path(self.build_lib) / PACKAGED)


class SdistWithServer(sdist):
    def make_release_tree(self, base_dir: str, files: list) -> None:
        super().make_release_tree(base_dir, files)
        copy_typescript(Path(base_dir) / PACKAGED)


setup(cmdclass={"build_py": BuildWithServer, "sdist": SdistWithServer})
