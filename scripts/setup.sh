#!/usr/bin/env bash
# Installs what sluice needs on a Debian/Ubuntu machine with Node/npm, and nothing that is already there.
#   scripts/setup.sh         Deno (pinned, from npm, into node_modules) and the FFmpeg runtime libraries
#   scripts/setup.sh --dev   also what the tests and benchmarks use: FFmpeg -dev headers, the ffmpeg/ffprobe
#                            CLI, a C compiler, pkg-config, util-linux's `script` and tmux (the CLI's live-view
#                            tests), promtool (package prometheus: the metrics endpoint's test), mypy (the
#                            typed keywords' test), and for the
#                            Python client's tests and benchmarks Debian's numpy, torch,
#                            torchvision, PyAV and pytest, and venv, pip, setuptools and wheel (`pip install
#                            ./python` in a fresh venv) (they serve /usr/bin/python3 only)
# Runs as root or through sudo; never asks questions (apt-get -y, DEBIAN_FRONTEND=noninteractive).
set -euo pipefail
cd "$(dirname "$0")/.."

dev=0
[ "${1:-}" = "--dev" ] && dev=1

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

apt_updated=0
apt_install() {
  [ $# -eq 0 ] && return 0
  if [ $apt_updated = 0 ]; then
    echo "setup: apt-get update" >&2
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    apt_updated=1
  fi
  echo "setup: apt-get install $*" >&2
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# The loader cache is read once into a variable: `ldconfig -p | grep -q` under pipefail fails when grep exits
# early and ldconfig dies of SIGPIPE.
ld_cache=$(ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null || true)
have_lib() { [[ "$ld_cache" == *"$1 "* ]]; }

# 1. Deno, pinned in package.json, and the npm packages (vega for `sluice tune`'s plots; the tests' XML parser).
if [ ! -x node_modules/.bin/deno ] || ! node_modules/.bin/deno --version >/dev/null 2>&1 ||
  [ ! -d node_modules/vega ] || [ ! -d node_modules/vega-lite ] || [ ! -d node_modules/fast-xml-parser ]; then
  echo "setup: npm install (Deno and packages from the npm registry)" >&2
  npm install --no-audit --no-fund --loglevel=error
fi

# 2. FFmpeg runtime libraries (any supported release counts as present).
missing=()
if ! { have_lib libavformat.so.59 || have_lib libavformat.so.60 || have_lib libavformat.so.61; }; then
  if apt-cache show libavformat59 >/dev/null 2>&1; then
    missing+=(libavformat59 libavcodec59 libavutil57 libswscale6)
  else
    missing+=(ffmpeg)
  fi
fi

# 3. Test and benchmark tools.
if [ $dev = 1 ]; then
  command -v ffmpeg >/dev/null || missing+=(ffmpeg)
  command -v ffprobe >/dev/null || missing+=(ffmpeg)
  command -v cc >/dev/null || missing+=(gcc libc6-dev)
  command -v pkg-config >/dev/null || missing+=(pkg-config)
  command -v xz >/dev/null || missing+=(xz-utils)       # the GPU kit (scripts/gpu) and its rehearsal
  command -v readelf >/dev/null || missing+=(binutils) # the GPU kit checks what its FFmpeg needs
  command -v script >/dev/null || missing+=(bsdutils)
  command -v tmux >/dev/null || missing+=(tmux)
  # promtool (`promtool check metrics`) checks the server's Prometheus metrics; Debian ships it with the
  # Prometheus server, which a machine running systemd then starts (`systemctl disable --now prometheus`).
  command -v promtool >/dev/null || missing+=(prometheus)
  # mypy: python/tests/test_typing.py checks that a type checker catches a misspelled sluice.Loader keyword
  command -v mypy >/dev/null || missing+=(mypy)
  [ -f /usr/include/x86_64-linux-gnu/libavformat/avformat.h ] || [ -f /usr/include/libavformat/avformat.h ] ||
    missing+=(libavformat-dev libavcodec-dev libavutil-dev libswscale-dev)
  # ensurepip, pip, setuptools and wheel: the packaging test builds `pip install ./python` in a fresh venv.
  for m in numpy:python3-numpy torch:python3-torch torchvision:python3-torchvision av:python3-av \
    pytest:python3-pytest ensurepip:python3-venv pip:python3-pip setuptools:python3-setuptools \
    wheel:python3-wheel; do
    /usr/bin/python3 -c "import ${m%%:*}" 2>/dev/null || missing+=("${m#*:}")
  done
fi

if [ ${#missing[@]} -gt 0 ]; then
  # shellcheck disable=SC2207
  apt_install $(printf '%s\n' "${missing[@]}" | sort -u)
fi
echo "setup: ready ($(node_modules/.bin/deno --version | head -n 1))" >&2
