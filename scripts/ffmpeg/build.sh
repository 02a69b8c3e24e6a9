#!/usr/bin/env bash
# Builds one FFmpeg release from Debian's source package as a minimal set of shared libraries, caches it, and
# prints its library directory (for SLUICE_FFMPEG_LIBDIR) on stdout. Progress goes to stderr.
#
#   scripts/ffmpeg/build.sh RELEASE [--asm]
#     RELEASE  4.3 | 5.1 | 7.1 | 8.1 (a release family: the newest Debian source of it is built)
#     --asm    build FFmpeg's x86 assembly (installs Debian's nasm); without it the build is C only
#
# The source comes through a temporary deb-src list derived from this machine's own apt sources (same archive,
# other suites), in a private apt state directory: the system's package lists are not touched. The result is
# cached under ${XDG_CACHE_HOME:-~/.cache}/sluice/ffmpeg/<version>[-asm]/ (lib/ and include/); a second call
# only prints the path. Needs: apt-get, a C compiler, make, xz (Debian's build-essential).
set -euo pipefail

release=${1:-}
asm=0
[ "${2:-}" = "--asm" ] && asm=1
case "$release" in
  4.3) suite=bullseye ;;
  5.1) suite=bookworm ;;
  7.1) suite=trixie ;;
  8.1) suite=sid ;;
  *)
    echo "usage: $0 4.3|5.1|7.1|8.1 [--asm]" >&2
    exit 2
    ;;
esac

# What sluice and its tests read: the video and audio codecs of the test media, their containers, parsers and
# the bitstream filters the demuxer and NVDEC use. Encoders and filters are left out (the tests encode with the
# system's ffmpeg CLI). No external library either: software AV1 needs libdav1d and PNG needs zlib, so the tests
# of those skip on these builds, naming the build.
decoders=h264,hevc,vp8,vp9,mpeg1video,mpeg2video,mpeg4,h263,flv,mjpeg,rawvideo,wrapped_avframe,ffv1,prores,aac,aac_latm,mp3,mp3float,mp2,mp2float,ac3,eac3,opus,vorbis,flac,pcm_s16le,pcm_s24le,pcm_f32le,pcm_u8
demuxers=mov,matroska,mpegts,avi,flv,mpegps,ivf,h264,hevc,ogg,wav,mp3,aac,ac3,rawvideo,image2
parsers=h264,hevc,vp8,vp9,av1,mpegvideo,mpeg4video,h263,mjpeg,aac,aac_latm,ac3,mpegaudio,opus,vorbis,flac
bsfs=h264_mp4toannexb,hevc_mp4toannexb,vp9_superframe_split,extract_extradata,null
# A build is reused only if it was made from these lists (a changed list builds anew).
config=$(echo "$decoders $demuxers $parsers $bsfs" | cksum | cut -d' ' -f1)

cache=${XDG_CACHE_HOME:-$HOME/.cache}/sluice/ffmpeg
log() { echo "ffmpeg-build $release: $*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# Already built? Any version of this family (with the same asm choice and lists) will do.
suffix=""
[ $asm = 1 ] && suffix="-asm"
cached() {
  local done_dir
  for done_dir in "$cache"/"$release".*"$suffix"; do
    if grep -qs "config $config" "$done_dir/.complete" && [[ "$done_dir" != *-asm || $asm = 1 ]]; then
      log "cached in $done_dir"
      echo "$done_dir/lib"
      return 0
    fi
  done
  return 1
}
cached && exit 0
# One build of a release at a time (another process may be building it: wait, then reuse its build).
mkdir -p "$cache"
exec 9>"$cache/.$release$suffix.lock"
flock 9
cached && exit 0

tools=()
command -v cc >/dev/null || tools+=(gcc libc6-dev)
command -v make >/dev/null || tools+=(make)
command -v xz >/dev/null || tools+=(xz-utils)
if [ ${#tools[@]} -gt 0 ]; then
  log "apt-get install ${tools[*]}"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${tools[@]}" >/dev/null
fi
if [ $asm = 1 ] && ! command -v nasm >/dev/null; then
  log "apt-get install nasm"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nasm >/dev/null
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/apt/lists/partial" "$work/apt/sources"

# deb-src entries for the suite, from the machine's own Debian sources (deb822 or one-line format): the
# same URIs, so a mirror or proxy the machine is set up for is the one used.
uris=$(
  {
    cat /etc/apt/sources.list.d/*.sources 2>/dev/null | sed -n 's/^URIs: *//p' || true
    cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
      sed -n 's/^deb \(\[[^]]*\] \)\{0,1\}\([^ ]*\) .*/\2/p' || true
  } | tr ' ' '\n' | grep -v -e security -e '^$' | grep -E '/debian/?$' | sort -u || true
)
[ -n "$uris" ] || {
  log "no Debian archive in this machine's apt sources (/etc/apt/sources.list*): cannot fetch the source package"
  exit 1
}
for uri in $uris; do
  printf 'Types: deb-src\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\n' \
    "$uri" "$suite" >>"$work/apt/sources/ffmpeg-src.sources"
done
apt_opts=(-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$work/apt/sources"
  -o "Dir::State::Lists=$work/apt/lists" -o "Dir::Cache=$work/apt/cache" -o "APT::Sandbox::User=root")
mkdir -p "$work/apt/cache/archives/partial"
log "apt-get update (deb-src $suite, private lists)"
apt-get "${apt_opts[@]}" update -qq >&2
version=$(apt-cache "${apt_opts[@]}" showsrc ffmpeg | sed -n 's/^Version: //p' |
  grep -E "^([0-9]+:)?${release//./\\.}\\." | sort -V | tail -n 1)
[ -n "$version" ] || {
  log "no ffmpeg $release.x source in suite $suite"
  exit 1
}
upstream=${version#*:}
upstream=${upstream%%-*}
upstream=${upstream%%+*}
log "apt-get source ffmpeg=$version"
(cd "$work" && apt-get "${apt_opts[@]}" source --download-only -qq "ffmpeg=$version" >&2)
tarball=$(ls "$work"/ffmpeg_"$upstream".orig.tar.* | head -n 1)
tar -xf "$tarball" -C "$work"
src=$(find "$work" -maxdepth 1 -type d -name "ffmpeg-*" | head -n 1)

prefix="$cache/$upstream$suffix"
rm -rf "$prefix"
asm_flag=--disable-x86asm
[ $asm = 1 ] && asm_flag=--enable-x86asm
# libpostproc left FFmpeg in 8.0: its configure refuses the option.
postproc=()
grep -q -- '--disable-postproc' "$src/configure" && postproc=(--disable-postproc)
log "configure ($src → $prefix)"
(cd "$src" && ./configure --prefix="$prefix" --enable-shared --disable-static --disable-programs --disable-doc \
  --disable-everything --disable-autodetect --disable-avdevice --disable-avfilter "${postproc[@]}" \
  --disable-network --enable-swscale --enable-swresample "$asm_flag" --enable-protocol=file,pipe \
  --enable-decoder="$decoders" --enable-demuxer="$demuxers" --enable-parser="$parsers" --enable-bsf="$bsfs" \
  >"$work/configure.log" 2>&1) || {
  tail -n 20 "$work/configure.log" >&2
  exit 1
}
start=$(date +%s)
log "make -j$(nproc)"
(cd "$src" && make -j"$(nproc)" >"$work/make.log" 2>&1 && make install >>"$work/make.log" 2>&1) || {
  tail -n 30 "$work/make.log" >&2
  exit 1
}
rm -rf "$prefix/share" "$prefix/lib/pkgconfig"
echo "ffmpeg $version (Debian $suite), built $(date -u +%FT%TZ) in $(($(date +%s) - start)) s, $asm_flag, config $config" >"$prefix/.complete"
log "built in $(($(date +%s) - start)) s: $(du -sh "$prefix/lib" | cut -f1)"
echo "$prefix/lib"
