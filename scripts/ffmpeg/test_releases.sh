#!/usr/bin/env bash
# Runs sluice's FFmpeg-facing tests against real builds of the FFmpeg releases CI covers besides the system's
# 5.1 (which `npm test` runs): 4.3 (Debian 11; soname 58, as Ubuntu 22.04's 4.4), 7.1 (Debian 13) and 8.1 (Debian
# sid). Each is built by scripts/ffmpeg/build.sh (or reused from its cache, ${XDG_CACHE_HOME:-~/.cache}/sluice/
# ffmpeg) and loaded through SLUICE_FFMPEG_LIBDIR; the tests: the bindings (tests/ffi: the layout table against
# the build's own headers), the media API (tests/media, audio and frame index included), the loader's tests
# that decode through FFmpeg (the loader end to end, audio, clip truth against the ffmpeg CLI, clip passes and
# groups, batch slots, decoding less) and `sluice doctor` (tests/cli/doctor_test.ts). The loader's other tests
# (options, accounting, resume, scheduling, faults, verdicts, soak) exercise its own logic over the same calls
# and run on the system's FFmpeg in `npm test`: on three more releases they would add ~20 min and test nothing
# of FFmpeg's.
#
#   scripts/ffmpeg/test_releases.sh [RELEASE...]     (default: 4.3 7.1 8.1)
#
# The builds have FFmpeg's x86 assembly (--asm): the tests compare decoded RGB byte for byte with an ffmpeg CLI
# (the system's, or the release's own: below) whose libswscale runs SIMD code; a C-only libswscale rounds
# differently (up to 3 levels in 41% of the bytes of an H.264 clip). A test that needs what a build lacks (AV1:
# libdav1d; PNG: zlib; encoders: the synthetic datasets are then made with the system's FFmpeg) says so, naming
# the build.
#
# The oracle: tests compare with the ffmpeg/ffprobe CLI of the release they load (tests/helpers/media.ts,
# `oracleCli`). Where a release's CLI reckons otherwise than the system's 5.1 (7.1: a container's duration; 8.1:
# that, the Matroska start, MP4 packet durations and libswscale 9's pixels), its own programs are built too
# (`build.sh R --asm --programs`: static ffmpeg + ffprobe, the same components plus the filters, encoders and
# muxers the oracle commands use) and named by SLUICE_FFMPEG_BINDIR; 4.3 agrees with 5.1 wherever the tests look.
#
# Prints one line per release and then "releases: N passed, M failed, K ignored"; exits 1 when a build fails or
# a test fails. Logs: ${TMPDIR:-/tmp}/sluice-releases/<release>.log.
set -uo pipefail
cd "$(dirname "$0")/../.."

releases=("$@")
[ ${#releases[@]} -eq 0 ] && releases=(4.3 7.1 8.1)
oracle_releases=" 7.1 8.1 " # the releases whose own programs are the oracle (see above)
tests=(tests/ffi tests/media tests/cli/doctor_test.ts)
for t in loader_test audio_test clip_truth_test clip_worker_test clip_group_test clip_profile_test \
  batch_slots_test decode_less_test; do
  tests+=("tests/loader/$t.ts")
done
logs=${TMPDIR:-/tmp}/sluice-releases
mkdir -p "$logs"
deno=node_modules/.bin/deno

status=0
total_passed=0 total_failed=0 total_ignored=0
summary=()
for release in "${releases[@]}"; do
  log="$logs/$release.log"
  start=$(date +%s)
  if ! libdir=$(bash scripts/ffmpeg/build.sh "$release" --asm 2>"$log.build"); then
    tail -n 20 "$log.build" >&2
    summary+=("ffmpeg $release: the build failed (see $log.build)")
    status=1
    continue
  fi
  oracle=(env -u SLUICE_FFMPEG_BINDIR) oracle_name="the system's CLI"
  if [[ "$oracle_releases" == *" $release "* ]]; then
    if ! bindir=$(bash scripts/ffmpeg/build.sh "$release" --asm --programs 2>>"$log.build"); then
      tail -n 20 "$log.build" >&2
      summary+=("ffmpeg $release: the build of its programs failed (see $log.build)")
      status=1
      continue
    fi
    oracle=(env SLUICE_FFMPEG_BINDIR="$bindir") oracle_name="its own CLI, $bindir"
  fi
  built=$(($(date +%s) - start))
  version=$(sed 's/^ffmpeg \([^ ]*\).*/\1/' "$libdir/../.complete")
  echo "== FFmpeg $release ($version, $libdir; oracle: $oracle_name): ${tests[*]}" >&2
  start=$(date +%s)
  "${oracle[@]}" SLUICE_FFMPEG_LIBDIR="$libdir" NO_COLOR=1 "$deno" test --allow-all --parallel "${tests[@]}" \
    </dev/null >"$log" 2>&1
  rc=$?
  took=$(($(date +%s) - start))
  line=$(grep -E '^(ok|FAILED) \| [0-9]+ passed' "$log" | tail -n 1)
  passed=$(sed -nE 's/.*\| ([0-9]+) passed.*/\1/p' <<<"$line")
  failed=$(sed -nE 's/.*\| ([0-9]+) failed.*/\1/p' <<<"$line")
  ignored=$(sed -nE 's/.*\| ([0-9]+) ignored.*/\1/p' <<<"$line")
  passed=${passed:-0} failed=${failed:-0} ignored=${ignored:-0}
  if [ "$rc" != 0 ]; then
    status=1
    [ "$failed" = 0 ] && failed=1 # the run failed before counting (a crash, a module that did not load)
    grep -E '=> \./tests/' "$log" | sort -u | head -n 40 >&2
  fi
  total_passed=$((total_passed + passed)) total_failed=$((total_failed + failed))
  total_ignored=$((total_ignored + ignored))
  summary+=("ffmpeg $release ($version): $passed passed, $failed failed, $ignored ignored (build ${built} s, tests ${took} s; log $log)")
  # Why tests were skipped on this build, once each.
  grep -h '^tests skipped here: ' "$log" | sort -u | sed 's/^/  /' >&2
done
printf '%s\n' "${summary[@]}"
echo "releases: $total_passed passed, $total_failed failed, $total_ignored ignored"
exit $status
