#!/usr/bin/env bash
# Builds the GPU kit: everything one run of scripts/gpu/run.sh needs on a GPU machine that has no FFmpeg, no
# Deno, no package registry and no network (docs/gpu.md, "The GPU kit"). The kit is an ignored folder that
# travels beside the working tree (both together under 64 MiB):
#
#   deno.xz          Deno (this checkout's npm binary), xz-compressed; run.sh unpacks it with xz or Python's lzma
#   ffmpeg/lib/      FFmpeg 5.1 from Debian's source package with its x86 assembly (scripts/ffmpeg/build.sh 5.1
#                    --asm): the five libraries sluice opens, as plain files named by their sonames
#   media/           test clips made with this machine's ffmpeg CLI, listed in media/manifest.json
#   dataset/         a labelled dataset for the loader (sluice make-dataset: one folder per class)
#   kit.json         what is inside, its size, and how long the build took
#
# The Python client needs nothing more: run.sh puts the tree's python/ on PYTHONPATH and the kit's Deno in
# SLUICE_DENO.
#
#   scripts/gpu/build_kit.sh [--out DIR] [--small] [--ffmpeg-libdir DIR] [--xz-level N]
#     --out DIR            where the kit goes (default: .gpu-kit in the checkout; replaced when it exists)
#     --small              small media and dataset (the rehearsal against the driver double, not for a GPU)
#     --ffmpeg-libdir DIR  copy FFmpeg's libraries from DIR instead of building 5.1 with assembly
#     --xz-level N         xz preset for Deno (default 6; the rehearsal uses 0)
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
out=$root/.gpu-kit
small=0
fflib=""
xzlevel=6
while [ $# -gt 0 ]; do
  case "$1" in
    --out)
      out=$2
      shift 2
      ;;
    --small)
      small=1
      shift
      ;;
    --ffmpeg-libdir)
      fflib=$2
      shift 2
      ;;
    --xz-level)
      xzlevel=$2
      shift 2
      ;;
    *)
      echo "usage: $0 [--out DIR] [--small] [--ffmpeg-libdir DIR] [--xz-level N]" >&2
      exit 2
      ;;
  esac
done

log() { echo "gpu-kit: $*" >&2; }
need() { command -v "$1" >/dev/null || {
  log "needs $1 ($2)"
  exit 1
}; }
need ffmpeg "the ffmpeg CLI with libx264 and libx265 makes the test media"
need python3 "writes kit.json"
need readelf "checks what FFmpeg's libraries need (binutils)"
need objdump "checks what FFmpeg's libraries need (binutils)"
deno=$root/node_modules/.bin/deno
[ -x "$deno" ] || {
  log "no $deno: run npm install in the checkout first"
  exit 1
}

start=$(date +%s.%N)
elapsed() { python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 1))" "$1" "$(date +%s.%N)"; }
tmp=$out.tmp
rm -rf "$tmp"
mkdir -p "$tmp/ffmpeg/lib" "$tmp/media"

# --- FFmpeg first: a cold build takes minutes, and xz below is happier without a compiler beside it
t=$(date +%s.%N)
if [ -z "$fflib" ]; then
  fflib=$("$root/scripts/ffmpeg/build.sh" 5.1 --asm)
fi
for lib in libavutil.so.57 libswscale.so.6 libswresample.so.4 libavcodec.so.59 libavformat.so.59; do
  [ -f "$fflib/$lib" ] || {
    log "$fflib has no $lib (FFmpeg 5.1's sonames)"
    exit 1
  }
  cp -L "$fflib/$lib" "$tmp/ffmpeg/lib/$lib"
done
ffmpeg_info=$(cat "$fflib/../.complete" 2>/dev/null || echo "copied from $fflib")
# The libraries may need nothing the GPU machine lacks: one another, libc and libm (their own DT_NEEDED entries),
# and no newer glibc than the machine's.
foreign=$(for f in "$tmp"/ffmpeg/lib/*; do readelf -d "$f"; done | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' |
  sort -u | grep -v -E '^(libavutil|libavcodec|libavformat|libswscale|libswresample)\.so|^(libc|libm)\.so\.6$' || true)
glibc=$(for f in "$tmp"/ffmpeg/lib/*; do objdump -T "$f"; done | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n 1)
ffmpeg_s=$(elapsed "$t")
log "FFmpeg: $ffmpeg_info, needs $glibc (${ffmpeg_s} s)${foreign:+; also needs: $(echo $foreign | cut -c1-200)}"

# --- Deno
t=$(date +%s.%N)
deno_version=$("$deno" --version | head -n 1)
if command -v xz >/dev/null; then
  xz -T0 -"$xzlevel" -c "$(readlink -f "$deno")" >"$tmp/deno.xz"
else
  python3 - "$(readlink -f "$deno")" "$tmp/deno.xz" "$xzlevel" <<'EOF'
import lzma, shutil, sys
with open(sys.argv[1], "rb") as src, lzma.open(sys.argv[2], "wb", preset=int(sys.argv[3])) as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
EOF
fi
deno_s=$(elapsed "$t")
log "Deno: $deno_version, $(du -h "$tmp/deno.xz" | cut -f1) as xz -$xzlevel (${deno_s} s)"

# --- media: H.264 and HEVC at three sizes (one not a multiple of 16: the decoder crops its display area), a clip
# with B-frames, a long GOP to seek backwards in, and a partner with the coded size of the small clip but another
# display area (the decoder cache)
t=$(date +%s.%N)
if [ $small = 1 ]; then
  large=320x180 small_size=192x144 odd=318x178 partner=188x140 seek=256x144 dur=1 seek_dur=4
else
  large=1920x1080 small_size=640x360 odd=1278x530 partner=636x354 seek=1280x720 dur=4 seek_dur=8
fi
manifest=()
encode() { # NAME CODEC SIZE SECONDS GOP BFRAMES ROLES [CRF]
  local name=$1 codec=$2 size=$3 seconds=$4 gop=$5 bf=$6 roles=$7 crf=${8:-23} args
  if [ "$codec" = h264 ]; then
    args=(-c:v libx264 -preset veryfast -crf "$crf" -g "$gop" -keyint_min "$gop" -sc_threshold 0 -bf "$bf")
  else
    args=(-c:v libx265 -preset ultrafast -crf 28 -tag:v hvc1
      -x265-params "log-level=error:keyint=$gop:min-keyint=$gop:scenecut=0:bframes=$bf")
  fi
  ffmpeg -v error -nostdin -f lavfi -i "testsrc2=size=$size:rate=30:duration=$seconds" -pix_fmt yuv420p \
    "${args[@]}" -threads 2 -movflags +faststart -y "$tmp/media/$name"
  manifest+=("{\"file\":\"$name\",\"codec\":\"$codec\",\"size\":\"$size\",\"seconds\":$seconds,\"gop\":$gop,\"bframes\":$bf,\"roles\":[$roles]}")
}
for codec in h264 hevc; do
  encode "${codec}_$large.mp4" $codec $large $dur 30 2 '"decode","speed-large","cache-create"'
  encode "${codec}_$small_size.mp4" $codec $small_size $dur 30 2 '"decode","speed-small","cache-reconfigure"'
  encode "${codec}_$odd.mp4" $codec $odd $dur 30 2 '"decode"'
done
encode "h264_bframes_$small_size.mp4" h264 $small_size $dur 15 3 '"bframes"'
# (crf 28: the kit travels in 64 MiB with the tree; this is its largest clip)
encode "h264_seek_$seek.mp4" h264 $seek $seek_dur 300 2 '"seek"' 28
encode "h264_partner_$partner.mp4" h264 $partner $dur 30 2 '"cache-display-area"'
(
  IFS=,
  echo "[${manifest[*]}]"
) | python3 -m json.tool >"$tmp/media/manifest.json"
media_s=$(elapsed "$t")
log "media: ${#manifest[@]} clips, $(du -sh "$tmp/media" | cut -f1) (${media_s} s)"

# --- the loader's dataset, encoded in-process by sluice with this machine's FFmpeg (libx264)
t=$(date +%s.%N)
if [ $small = 1 ]; then
  ds=(--videos 4 --classes 2 --duration 1 --width 96 --height 64)
else
  ds=(--videos 8 --classes 4 --duration 3 --width 640 --height 360)
fi
env -u SLUICE_FFMPEG_LIBDIR "$deno" run --allow-all "$root/src/cli/main.ts" make-dataset "$tmp/dataset" "${ds[@]}" \
  >/dev/null 2>&1
dataset_s=$(elapsed "$t")
log "dataset: ${ds[*]}, $(du -sh "$tmp/dataset" | cut -f1) (${dataset_s} s)"

# --- sizes: what travels is the working tree (tracked and untracked files git does not ignore) plus the kit
kit_bytes=$(du -sb "$tmp" | cut -f1)
tree_bytes=$(cd "$root" && git ls-files -co --exclude-standard -z | grep -z -v -E '^\.gpu-kit(\.tmp)?/' |
  xargs -0 -r stat -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}')
total=$((kit_bytes + tree_bytes))
limit=$((64 * 1024 * 1024))
build_s=$(elapsed "$start")
python3 - "$tmp/kit.json" <<EOF
import json, sys
json.dump({
    "format": "sluice-gpu-kit/1",
    "small": bool($small),
    "built": "$(date -u +%FT%TZ)",
    "builtOn": "$(uname -n), $(nproc) cores",
    "buildSeconds": $build_s,
    "stepSeconds": {"ffmpeg": $ffmpeg_s, "deno": $deno_s, "media": $media_s, "dataset": $dataset_s},
    "deno": "$deno_version",
    "denoXzLevel": $xzlevel,
    "ffmpeg": "$ffmpeg_info",
    "ffmpegAlsoNeeds": "$(echo $foreign)".split(),
    "ffmpegNeedsGlibc": "$glibc",
    "dataset": "${ds[*]}",
    "kitBytes": $kit_bytes,
    "treeBytes": $tree_bytes,
    "travelBytes": $total,
    "travelLimitBytes": $limit,
}, open(sys.argv[1], "w"), indent=2)
EOF
mib() { python3 -c "print(f'{$1 / 1048576:.1f} MiB')"; }
log "kit: $(mib "$kit_bytes"); with the working tree ($(mib "$tree_bytes")): $(mib "$total") of 64 MiB; built in ${build_s} s"
if [ "$total" -gt "$limit" ]; then
  log "too large to travel (the working tree and the kit must stay under 64 MiB): left in $tmp"
  exit 1
fi
rm -rf "$out"
mv "$tmp" "$out"
echo "$out"
