"""Test oracle: a video's audio decoded whole by PyAV and resampled with av.AudioResampler (fltp), cut to windows.

Usage: pyav_audio.py PATH RATE LAYOUT WINDOWS_JSON. Prints one JSON line ({"first": output pts of the first
sample, "total": samples}), then the windows' samples as float32, each [channels, n] (zeros outside the track),
n = round((e - s) * RATE), from sample round(s * RATE) of the resampled track's timeline.
"""
import sys, json, av, numpy as np
path, rate, layout, windows = sys.argv[1], int(sys.argv[2]), sys.argv[3], json.loads(sys.argv[4])
c = av.open(path)
st = c.streams.audio[0]
rs = av.AudioResampler(format="fltp", layout=layout, rate=rate)
chunks = []; first = None
def take(frames):
    global first
    for f in frames:
        if first is None: first = f.pts
        chunks.append(f.to_ndarray())
for fr in c.decode(st):
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
sys.stdout.write(json.dumps({"first": first, "total": a.shape[1]}) + "\n")
sys.stdout.buffer.write(np.concatenate([w.ravel() for w in out]).tobytes())
