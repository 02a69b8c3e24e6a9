#!/usr/bin/python3
"""Contender: `sluice serve` to Python: the client in python/sluice (issue 13) starts a sluice server (a Deno
process of this checkout) that runs the loader, and reads its batches zero-copy from shared memory.

The loader is configured as the sluice contender's (bench/contenders/sluice.ts): the clip list's `sluice` options,
with `--config JSON` merged over them; epoch `p` of the server's loader is pass `p` of the list, and every pass must
deliver exactly the listed clips; frames decoded come from each clip's `decoded_frames`. A time run ends with the
loader's bottleneck verdict. Contract and measurement: bench/contenders/harness.ts.

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
    verify = args.mode == "verify"
    passes = 1 if verify else len(spec["passes"])
    # epoch p is pass p (a manifest's rows recur in every pass)
    where = [{key(c["path"], c["start"]): i for i, c in enumerate(clips)} for clips in spec["passes"]]
    seen = [set() for _ in spec["passes"]]
    emitted = [0] * len(spec["passes"])
    decoded = [0] * len(spec["passes"])
    frames = bytearray(clip_bytes * len(spec["passes"][0])) if verify else None
    pts = [None] * len(spec["passes"][0])
    state = {"p": 0, "t0": 0.0}

    def start_pass():
        print(json.dumps({"event": "start", "pass": state["p"]}), flush=True)
        state["t0"] = time.perf_counter()

    def end_passes():
        while state["p"] < passes and len(seen[state["p"]]) == len(spec["passes"][state["p"]]):
            p = state["p"]
            wall = time.perf_counter() - state["t0"]
            print(json.dumps({"event": "end", "pass": p, "wall": wall, "clips": len(seen[p]), "frames": emitted[p],
                              "decoded": decoded[p]}), flush=True)
            state["p"] += 1
            if state["p"] < passes:
                start_pass()

    with loader:
        start_pass()
        for _epoch in range(passes):
            for batch in loader:
                video = batch.video
                assert tuple(video.shape[1:]) == (n, h, w, 3), video.shape
                for j, m in enumerate(batch.clips):
                    q = batch.epoch
                    i = where[q].get(key(m["path"], m["start"])) if q < len(where) else None
                    if i is None or i in seen[q]:
                        raise SystemExit(f"pass {q}: the server delivered a clip not in the list: "
                                         f"{m['path']} @ {m['start']}")
                    seen[q].add(i)
                    emitted[q] += n
                    d = m.get("decoded_frames")
                    decoded[q] = decoded[q] + d if isinstance(d, int) and decoded[q] is not None else None
                    if frames is not None and q == 0:
                        frames[i * clip_bytes:(i + 1) * clip_bytes] = np.ascontiguousarray(np.asarray(video[j])).tobytes()
                        pts[i] = list(m["pts"])
                end_passes()
                if state["p"] == passes:
                    break
            if state["p"] == passes:
                break
        if state["p"] < passes:
            p = state["p"]
            raise SystemExit(f"pass {p}: {len(spec['passes'][p]) - len(seen[p])} listed clips were not delivered")
        if frames is not None:
            with open(os.path.join(args.out, "frames.bin"), "wb") as f:
                f.write(frames)
            with open(os.path.join(args.out, "pts.json"), "w") as f:
                json.dump(pts, f)
        else:
            verdict = loader.stats()["loader"]["pipeline"]["bottleneck"]
            print(json.dumps({"event": "stats", "bottleneck": verdict}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
