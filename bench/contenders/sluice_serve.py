#!/usr/bin/python3
"""Contender: `sluice serve` to Python: the client in python/sluice (issue 13) starts a sluice server (a Deno
process of this checkout) that runs the loader, and reads its batches zero-copy from shared memory.

The loader is configured as the sluice contender's (bench/contenders/sluice.ts): the clip list's `sluice` options
(the seeded sampler that planned exactly these clips), with `--config JSON` merged over them; epoch `p` of the
server's loader is pass `p` of the list, and every epoch must deliver exactly the listed clips; frames decoded
come from each clip's `decodedFrames`. Contract and measurement: bench/contenders/harness.ts.

Run: /usr/bin/python3 bench/contenders/sluice_serve.py --clips FILE --mode time|verify [--out DIR] [--config JSON]
"""

import argparse
import json
import os
import re
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "python"))

import numpy as np  # noqa: E402
import sluice  # noqa: E402


def merge(a, b):
    out = dict(a)
    for k, v in b.items():
        out[k] = merge(out[k], v) if isinstance(out.get(k), dict) and isinstance(v, dict) else v
    return out


def snake_keys(v):
    if isinstance(v, dict):
        return {re.sub(r"[A-Z]", lambda m: "_" + m[0].lower(), k): snake_keys(x) for k, x in v.items()}
    return v


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--clips", required=True)
    ap.add_argument("--mode", choices=["verify", "time"], default="time")
    ap.add_argument("--out")
    ap.add_argument("--config", default="{}")
    args = ap.parse_args()
    with open(args.clips) as f:
        spec = json.load(f)
    opts = merge(spec["sluice"], json.loads(args.config))
    n, w, h = spec["numFrames"], spec["width"], spec["height"]
    # The workload's options are the loader's (TypeScript's spelling); Python writes them in snake_case, groups as
    # dicts: clip={"num_frames": ...}, sampler={...}.
    loader = sluice.Loader(**snake_keys(opts))
    key = lambda path, start: f"{path}@{start:.6f}"  # noqa: E731
    clip_bytes = n * h * w * 3
    with loader:
        passes = 1 if args.mode == "verify" else len(spec["passes"])
        for p in range(passes):
            want = {key(c["path"], c["start"]): i for i, c in enumerate(spec["passes"][p])}
            seen = set()
            frames = bytearray(clip_bytes * len(want)) if args.mode == "verify" else None
            pts = [None] * len(want)
            decoded = 0
            print(json.dumps({"event": "start", "pass": p}), flush=True)
            t0 = time.perf_counter()
            for batch in loader:
                video = batch.video
                assert tuple(video.shape[1:]) == (n, h, w, 3), video.shape
                for j, m in enumerate(batch.clips):
                    i = want.get(key(m["path"], m["start"]))
                    if i is None or i in seen:
                        raise SystemExit(f"pass {p}: the server delivered a clip not in the list: {m['path']} @ "
                                         f"{m['start']}")
                    seen.add(i)
                    d = m.get("decodedFrames")
                    decoded = decoded + d if isinstance(d, int) and decoded is not None else None
                    if frames is not None:
                        frames[i * clip_bytes:(i + 1) * clip_bytes] = np.ascontiguousarray(np.asarray(video[j])).tobytes()
                        pts[i] = list(m["pts"])
            wall = time.perf_counter() - t0
            if len(seen) != len(want):
                raise SystemExit(f"pass {p}: {len(want) - len(seen)} listed clips were not delivered")
            print(json.dumps({"event": "end", "pass": p, "wall": wall, "clips": len(seen), "frames": len(seen) * n,
                              "decoded": decoded}), flush=True)
            if frames is not None:
                with open(os.path.join(args.out, "frames.bin"), "wb") as f:
                    f.write(frames)
                with open(os.path.join(args.out, "pts.json"), "w") as f:
                    json.dump(pts, f)


if __name__ == "__main__":
    sys.exit(main())
