"""batch.audio through the server (issue 25 item 3): a float32 tensor [B, channels, samples] that views the
batch's slot (zero copy, as the video), each clip's row equal to PyAV's decode + resample of its window (within
1e-3 RMS), zeros and clips[b]["audio"] == "missing" for a video without audio; both backends."""
from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path

import av
import numpy as np
import pytest

import sluice

RATE, DUR = 16000, 0.8
N = round(DUR * RATE)


@pytest.fixture(scope="module")
def audio_dataset(tmp_path_factory: pytest.TempPathFactory) -> dict:
    d = tmp_path_factory.mktemp("audio_dataset")

    def encode(out: Path, audio: bool) -> None:
        args = ["ffmpeg", "-v", "error", "-nostdin", "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=25:d=3"]
        if audio:
            args += ["-f", "lavfi", "-i", "aevalsrc=exprs='0.5*sin(2*PI*440*t)|0.3*sin(2*PI*1234*t+1)':s=44100:d=3"]
        args += ["-c:v", "libx264", "-threads", "1", "-g", "12", "-pix_fmt", "yuv420p"]
        if audio:
            args += ["-c:a", "aac"]
        subprocess.run(args + ["-y", str(out)], check=True)

    files = {"a": d / "a.mp4", "b": d / "b.mp4", "silent": d / "silent.mp4"}
    for k, f in files.items():
        encode(f, k != "silent")
    csv = d / "audio.csv"
    csv.write_text("path,label\n" + "".join(f"{f},{i}\n" for i, f in enumerate(files.values())))
    return {"csv": str(csv), "silent": str(files["silent"])}


def pyav_window(path: str, start: float, channels: int) -> np.ndarray:
    """PyAV's decode of the whole track, resampled, cut to samples round(start * RATE) + [0, N)."""
    layout = "mono" if channels == 1 else "stereo"
    with av.open(path) as c:
        rs = av.AudioResampler(format="fltp", layout=layout, rate=RATE)
        chunks, first = [], None
        for fr in list(c.decode(c.streams.audio[0])) + [None]:
            for o in rs.resample(fr):
                first = o.pts if first is None else first
                chunks.append(o.to_ndarray())
    a = np.concatenate(chunks, axis=1)
    k0 = round(start * RATE) - first
    out = np.zeros((channels, N), np.float32)
    part = a[:, max(k0, 0):k0 + N]
    out[:, max(-k0, 0):max(-k0, 0) + part.shape[1]] = part
    return out


@pytest.mark.parametrize("backend,channels", [("inprocess", 1), ("subprocess", 2)])
def test_batch_audio_views_the_slot_and_equals_pyav(audio_dataset, backend, channels):
    with sluice.Loader(audio_dataset["csv"], batch_size=3, num_frames=4, width=32, height=24, seed=3,
                       clips_per_video=2, clip_duration=DUR, backend=backend,
                       audio={"sample_rate": RATE, "channels": channels}) as l:
        batches = 0
        for b in l:
            batches += 1
            assert tuple(b.audio.shape) == (len(b.clips), channels, N)
            assert str(b.audio.dtype) == "torch.float32"
            mm = l._session.slots.mem
            base = ctypes.addressof(ctypes.c_char.from_buffer(mm))
            ptr = b.audio.data_ptr()
            slot = base + b.slot * l._session.slots.slot_bytes
            assert slot < ptr and ptr + 4 * b.audio.numel() <= slot + l._session.slots.slot_bytes, \
                "audio is not a view of the batch's slot"
            for i, c in enumerate(b.clips):
                row = b.audio[i].numpy()
                if c["path"] == audio_dataset["silent"]:
                    assert c["audio"] == "missing"
                    assert not row.any()
                    continue
                assert c["audio"] == "ok"
                err = float(np.sqrt(np.mean((row - pyav_window(c["path"], c["start"], channels)) ** 2)))
                assert err < 1e-3, (c["path"], c["start"], err)
        assert batches == 2
        assert l.stats()["loader"]["clips"]["total"]["audioMissing"] == 2
