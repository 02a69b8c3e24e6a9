#!/usr/bin/env bash
# One run of the GPU kit (docs/gpu.md, "Running the kit"): unpacks the kit's Deno, then runs each phase in its own
# process under its own time limit, and rewrites $OUT/gpu-report.md and $OUT/gpu-report.json after every phase,
# so a phase that hangs or crashes loses nothing before it and the run goes on with the next one.
#
#   scripts/gpu/run.sh KIT [PHASE...]
#     KIT     the kit folder (scripts/gpu/build_kit.sh)
#     PHASE   any of: inventory decode kernels loader trainer speed-decoders speed-cache speed-loader
#             speed-loader-profile (default: all, in that order; name some to rerun only those: the report keeps
#             the others)
#
# Environment: OUT (report folder; default out/gpu in the checkout), GPU_BUDGET_SECONDS (the whole run, default
# 420), GPU_PYTHON (default python3), GPU_LIMITS ("phase=seconds,..." overrides the phases' limits),
# GPU_NO_XZ=1 (unpack with Python's lzma even where xz exists). The rehearsal (tests/gpu/kit_rehearsal_test.ts)
# also sets SLUICE_LIBCUDA / SLUICE_LIBNVCUVID / SLUICE_LIBNVML (the driver double) and small GPU_SPEED_SECONDS,
# GPU_LOADER_SECONDS, GPU_CACHE_ROUNDS and GPU_PROFILE_SECONDS (speed-loader-profile also reads
# GPU_PROFILE_VARIANTS and GPU_PROFILE_CONCURRENCY: scripts/gpu/profile.ts); GPU_HANG=PHASE makes that phase hang (a time-limit check).
# Exit status: 0 when no phase failed, timed out or crashed; 1 otherwise; 2 for a usage error.
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
if [ $# -lt 1 ] || [ ! -f "$1/kit.json" ]; then
  echo "usage: $0 KIT [PHASE...]   (KIT: a folder made by scripts/gpu/build_kit.sh)" >&2
  exit 2
fi
kit=$(cd "$1" && pwd)
shift
all=(inventory decode kernels loader trainer speed-decoders speed-cache speed-loader speed-loader-profile)
phases=("$@")
[ ${#phases[@]} -eq 0 ] && phases=("${all[@]}")
out=${OUT:-$root/out/gpu}
budget=${GPU_BUDGET_SECONDS:-420}
py=${GPU_PYTHON:-python3}
started=$(date +%s)
mkdir -p "$out"
log=$out/gpu-run.log
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-gpu.XXXXXX")
trap 'rm -rf "$work"' EXIT
say() { echo "gpu-run: $*" | tee -a "$log" >&2; }

limit_of() {
  # GPU_LIMITS="decode=5,trainer=30" overrides (the rehearsal checks that a phase past its limit is stopped)
  local o
  o=$(tr ',' '\n' <<<"${GPU_LIMITS:-}" | sed -n "s/^$1=\([0-9]*\)$/\1/p")
  [ -n "$o" ] && {
    echo "$o"
    return
  }
  case "$1" in
    inventory | kernels) echo 30 ;;
    decode | loader) echo 60 ;;
    trainer) echo 60 ;;
    speed-decoders) echo 70 ;;
    speed-cache) echo 20 ;;
    speed-loader) echo 70 ;;
    speed-loader-profile) echo 170 ;;
    *) echo 0 ;;
  esac
}
for p in "${phases[@]}"; do
  [ "$(limit_of "$p")" = 0 ] && {
    echo "unknown phase $p (phases: ${all[*]})" >&2
    exit 2
  }
done

# Report so far: a rerun of some phases (named on the command line) keeps the others' results.
if [ "${phases[*]}" = "${all[*]}" ] || [ ! -f "$out/gpu-report.json" ]; then
  "$py" "$root/scripts/gpu/report.py" init "$out" --kit "$kit" --budget "$budget"
  : >"$log"
fi

# --- Deno: unpacked with xz, or Python's lzma where the machine has no xz
t0=$(date +%s.%N)
deno=$work/deno
if command -v xz >/dev/null && [ -z "${GPU_NO_XZ:-}" ]; then
  how=xz
  xz -dc "$kit/deno.xz" >"$deno"
else
  how="python's lzma"
  "$py" - "$kit/deno.xz" "$deno" <<'EOF'
import lzma, shutil, sys
with lzma.open(sys.argv[1]) as src, open(sys.argv[2], "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
EOF
fi
chmod +x "$deno"
version=$("$deno" --version 2>&1)
rc=$?
seconds=$("$py" -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 2))" "$t0" "$(date +%s.%N)")
"$py" -c 'import json, sys
ok = sys.argv[1] == "0"
print(json.dumps({"check": "unpack Deno", "status": "pass" if ok else "fail", "seconds": float(sys.argv[4]),
                  **({} if ok else {"reason": sys.argv[3][:400]}),
                  "figures": {"with": sys.argv[2], "version": sys.argv[3].splitlines()[0] if ok else None}}))' \
  "$rc" "$how" "$version" "$seconds" >"$work/deno.jsonl"
"$py" "$root/scripts/gpu/report.py" phase "$out" deno --result "$work/deno.jsonl" --exit 0 --seconds "$seconds" \
  --limit 0 2>&1 | tee -a "$log" >&2
[ $rc = 0 ] || exit 1

export GPU_KIT=$kit SLUICE_DENO=$deno SLUICE_FFMPEG_LIBDIR=$kit/ffmpeg/lib
export PYTHONPATH=$root/python${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
export DENO_DIR=$work/deno-dir DENO_NO_UPDATE_CHECK=1 NO_COLOR=1

cd "$root" || exit 1
status=0
for p in "${phases[@]}"; do
  left=$((budget - ($(date +%s) - started) - 5))
  limit=$(limit_of "$p")
  [ "$limit" -gt "$left" ] && limit=$left
  result=$work/$p.jsonl
  plog=$work/$p.log
  : >"$result"
  if [ "$left" -lt 10 ]; then
    echo "{\"check\": \"$p\", \"status\": \"skip\", \"reason\": \"the run's ${budget} s budget is spent\"}" >"$result"
    "$py" "$root/scripts/gpu/report.py" phase "$out" "$p" --result "$result" --exit 0 --seconds 0 --limit 0
    continue
  fi
  if [ "$p" = trainer ]; then
    cmd=("$py" "$root/scripts/gpu/trainer.py")
  else
    cmd=("$deno" run --allow-all --no-lock "$root/scripts/gpu/phases.ts" "$p")
  fi
  say "phase $p (limit ${limit} s)"
  t0=$(date +%s.%N)
  GPU_RESULT=$result timeout -k 5 "$limit" "${cmd[@]}" >"$plog" 2>&1
  rc=$?
  seconds=$("$py" -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$t0" "$(date +%s.%N)")
  {
    echo "----- $p (exit $rc)"
    cat "$plog"
  } >>"$log"
  "$py" "$root/scripts/gpu/report.py" phase "$out" "$p" --result "$result" --exit "$rc" --seconds "$seconds" \
    --limit "$limit" --log "$plog" 2>&1 | tee -a "$log" >&2
  grep -Eq '"status": ?"fail"' "$result" && status=1
  [ $rc -ne 0 ] && status=1
done
"$py" "$root/scripts/gpu/report.py" finish "$out" --seconds "$(($(date +%s) - started))"
# What comes back from the device machine is at most 16 MiB a file.
if [ "$(stat -c %s "$log")" -gt $((15 * 1024 * 1024)) ]; then
  tail -c $((15 * 1024 * 1024)) "$log" >"$work/log" && mv "$work/log" "$log"
fi
say "done in $(($(date +%s) - started)) s: $out/gpu-report.md"
exit $status
