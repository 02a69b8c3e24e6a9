"""``sluice.doctor()``: the parsed report of ``sluice doctor --json``, checked against ffprobe for the system's
FFmpeg, and the verdict without any FFmpeg (``ok`` False, the fix named) and with a shared-memory path that
cannot be read."""
from __future__ import annotations

import os
import subprocess

import sluice


def test_doctor_reports_the_system_ffmpeg_as_ffprobe_does(monkeypatch):
    monkeypatch.delenv("SLUICE_FFMPEG_LIBDIR", raising=False)
    report = sluice.doctor()
    assert report["ok"] is True
    ff = report["ffmpeg"]
    first = subprocess.run(["ffprobe", "-version"], capture_output=True, text=True).stdout.splitlines()[0]
    assert first.startswith(f"ffprobe version {ff['version']} ")
    assert ff["table"]["release"] == ".".join(ff["version"].split(".")[:2])
    assert ff["table"]["provenance"] in ("run-in-ci", "headers-only")
    assert ff["decoders"]["h264"] == "h264"
    assert report["cores"]["online"] == os.cpu_count()
    for problem in report["problems"]:
        assert set(problem) == {"severity", "what", "fix"} and problem["severity"] in ("error", "warning")


def test_doctor_without_ffmpeg_says_the_loader_cannot_run_and_how_to_fix_it(monkeypatch, tmp_path):
    monkeypatch.setenv("SLUICE_FFMPEG_LIBDIR", str(tmp_path))
    report = sluice.doctor()
    assert report["ok"] is False
    assert report["ffmpeg"]["found"] is False
    errors = [p for p in report["problems"] if p["severity"] == "error"]
    assert len(errors) == 1
    assert "apt-get install" in errors[0]["fix"] and "SLUICE_FFMPEG_LIBDIR" in errors[0]["fix"]


def test_doctor_checks_the_shm_path_it_is_given(tmp_path):
    missing = tmp_path / "no-such-dir"
    report = sluice.doctor(shm=str(missing))
    assert report["shm"]["path"] == str(missing)
    assert report["shm"]["sizeBytes"] is None and report["shm"]["ok"] is False
    assert any(p["what"].startswith(f"{missing} cannot be read") for p in report["problems"])
