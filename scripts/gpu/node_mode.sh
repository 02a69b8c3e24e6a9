#!/usr/bin/env bash
# Node mode (docs/serving.md) measured on a lent GPU machine's many cores, where this checkout's 2 cores cannot
# say anything: bench/node_mode.py for 1, 2, 4 and 8 ranks, then sluice.torch.log_stats into TensorBoard's real
# SummaryWriter where the machine's torch has it. Needs the GPU kit's Deno and FFmpeg and the workload's videos,
# made here beforehand (the machine has no ffmpeg CLI) and carried with it:
#
#   deno run -A bench/node_mode_set.ts --videos 32      # → .cache/bench/clip_workload (ignored)
#   run(command: "bash scripts/gpu/node_mode.sh .gpu-kit", carry: [".gpu-kit", ".cache/bench/clip_workload"])
#
# Environment: OUT (default out/gpu), NODE_ARGS (default "--videos 32 --epochs 8 --ranks 1,2,4,8"; "none": only the
# SummaryWriter check).
# Writes $OUT/NODE_MODE.md (the bench's table) and $OUT/node-mode.log.
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
kit=$(cd "${1:?usage: $0 KIT}" && pwd)
out=${OUT:-$root/out/gpu}
mkdir -p "$out"
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-node.XXXXXX")
trap 'rm -rf "$work"' EXIT
if command -v xz >/dev/null; then
  xz -dc "$kit/deno.xz" >"$work/deno"
else
  python3 -c 'import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
    "$kit/deno.xz" "$work/deno"
fi
chmod +x "$work/deno"
export SLUICE_DENO=$work/deno SLUICE_FFMPEG_LIBDIR=$kit/ffmpeg/lib PYTHONPATH=$root/python
cd "$root"
status=0
if [ "${NODE_ARGS:-}" != none ]; then
  # shellcheck disable=SC2086 # NODE_ARGS is a list of options
  python3 bench/node_mode.py ${NODE_ARGS:---videos 32 --epochs 8 --ranks 1,2,4,8} --out "$out/NODE_MODE.md" \
    2>&1 | tee "$out/node-mode.log"
  status=${PIPESTATUS[0]}
fi
python3 - "$root" <<'EOF' 2>&1 | tee -a "$out/node-mode.log"
# log_stats into TensorBoard's own SummaryWriter, read back with TensorBoard's event reader
import json, sys, tempfile
from pathlib import Path
sys.path.insert(0, sys.argv[1] + "/python")
try:
    from torch.utils.tensorboard import SummaryWriter
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
except ImportError as e:
    print(f"summary-writer: skip ({e})")
    raise SystemExit(0)
import sluice
import sluice.torch
d = json.loads(Path(sys.argv[1], ".cache/bench/clip_workload/node_mode.json").read_text())["shapes"]["sampler"]
logs = tempfile.mkdtemp()
w = SummaryWriter(logs)
with sluice.Loader(**d) as l:
    for i, b in enumerate(l):
        del b
        if i % 8 == 7:
            sluice.torch.log_stats(w, l, step=i)
w.close()
acc = EventAccumulator(logs)
acc.Reload()
tags = acc.Tags()["scalars"]
print(f"summary-writer: pass, {len(tags)} scalar tags read back, e.g. "
      f"{[(t, [round(e.value, 3) for e in acc.Scalars(t)][:3]) for t in tags if 'wait' in t or 'bottleneck/decode' in t]}")
EOF
exit "$status"
