"""Test oracle: a video's audio decoded whole by PyAV and resampled with av.AudioResampler (fltp), cut to windows.

Usage: pyav_audio.py PATH RATE LAYOUT WINDOWS_JSON [STREAM_INDEX]. Prints one JSON line ({"first": the index at
RATE of the track's first sample, "total": samples, "start": its time in seconds, "inRate": the track's own
rate}), then the windows' samples as float32, each [channels, n]
(zeros outside the track), n = round((e - s) * RATE), from sample round(s * RATE) of the resampled track's
timeline. The first sample is where the first decoded frame is presented (its pts in seconds × RATE, rounded):
the resampler's own output pts are not used, as PyAV 10 rescales them from a time base of 1/input rate (an
MPEG-TS track, 1/90000, came out 1.9× too late).
"""
import sys, json, av, numpy as np
path, rate, layout, windows = sys.argv[1], int(sys.argv[2]), sys.argv[3], json.loads(sys.argv[4])
c = av.open(path)
# The track sluice chose (its absolute index), else the first audio stream.
st = [s for s in c.streams if s.index == int(sys.argv[5])][0] if len(sys.argv) > 5 else c.streams.audio[0]
rs = av.AudioResampler(format="fltp", layout=layout, rate=rate)
chunks = []; first = None; start = None
def take(frames):
    for f in frames:
        chunks.append(f.to_ndarray())
for fr in c.decode(st):
    if first is None and fr.pts is not None:
        start = float(fr.pts * fr.time_base); first = int(round(start * rate))
    take(rs.resample(fr))
take(rs.resample(None))
a = np.concatenate(chunks, axis=1).astype(np.float32)
out = []
for s, e in windows:
    k0 = int(round(s * rate)); n = int(round((e - s) * rate))
    w = np.zeros((a.shape[0], n), np.float32)
    lo = k0 - first
    src = a[:, max(lo, 0):max(lo + n, 0)]
    w[:, max(-lo, 0):max(-lo, 0) + src.shape[1]] = src[:, :n - max(-lo, 0)]
    out.append(w)
sys.stdout.write(json.dumps({"first": first, "total": a.shape[1], "start": start, "inRate": st.sample_rate}) + "\n")
sys.stdout.buffer.write(np.concatenate([w.ravel() for w in out]).tobytes())
