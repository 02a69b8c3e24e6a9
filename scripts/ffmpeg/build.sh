#!/usr/bin/env bash
# Builds one FFmpeg release from Debian's source package as a minimal set of shared libraries, caches it, and
# prints its library directory (for SLUICE_FFMPEG_LIBDIR) on stdout. Progress goes to stderr.
#
#   scripts/ffmpeg/build.sh RELEASE [--asm] [--programs]
#     RELEASE     4.3 | 5.1 | 7.1 | 8.1 (a release family: the newest Debian source of it is built)
#     --asm       build FFmpeg's x86 assembly (installs Debian's nasm); without it the build is C only
#     --programs  build that release's own `ffmpeg` and `ffprobe` instead (statically linked, in a cache directory
#                 of their own, <version>[-asm]-programs/bin, which is printed): the tests' oracle for a release
#                 whose CLI reckons otherwise than the system's. The same decoders, demuxers, parsers and
#                 bitstream filters, plus the filters, encoders and muxers the tests' CLI commands use. The
#                 library builds are not touched.
#
# The source comes through a temporary deb-src list derived from this machine's own apt sources (same archive,
# other suites), in a private apt state directory: the system's package lists are not touched. The result is
# cached under ${XDG_CACHE_HOME:-~/.cache}/sluice/ffmpeg/<version>[-asm]/ (lib/ and include/); a second call
# only prints the path. Needs: apt-get, a C compiler, make, xz (Debian's build-essential).
set -euo pipefail

release=${1:-}
asm=0 programs=0
for opt in "${@:2}"; do
  case "$opt" in
    --asm) asm=1 ;;
    --programs) programs=1 ;;
    *)
      echo "usage: $0 4.3|5.1|7.1|8.1 [--asm] [--programs]" >&2
      exit 2
      ;;
  esac
done
case "$release" in
  4.3) suite=bullseye ;;
  5.1) suite=bookworm ;;
  7.1) suite=trixie ;;
  8.1) suite=sid ;;
  *)
    echo "usage: $0 4.3|5.1|7.1|8.1 [--asm] [--programs]" >&2
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
# The programs' extras: what the tests' oracle commands ask of the CLI (-vf scale/fps/crop/transpose/flips and the
# pixel format, -af aresample, -f rawvideo/framemd5/null/wav/f32le/s16le, -c copy).
filters=scale,fps,format,crop,transpose,hflip,vflip,null,setpts,trim,aresample,aformat,anull,atrim
encoders=rawvideo,wrapped_avframe,pcm_s16le,pcm_f32le,pcm_u8
muxers=rawvideo,framemd5,framecrc,md5,null,wav,pcm_f32le,pcm_s16le
# A build is reused only if it was made from these lists (a changed list builds anew).
lists="$decoders $demuxers $parsers $bsfs"
[ $programs = 1 ] && lists="$lists programs $filters $encoders $muxers"
config=$(echo "$lists" | cksum | cut -d' ' -f1)

cache=${XDG_CACHE_HOME:-$HOME/.cache}/sluice/ffmpeg
log() { echo "ffmpeg-build $release: $*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# Already built? Any version of this family (with the same asm choice and lists) will do.
suffix=""
[ $asm = 1 ] && suffix="-asm"
[ $programs = 1 ] && suffix="$suffix-programs"
out=lib
[ $programs = 1 ] && out=bin
cached() {
  local done_dir
  for done_dir in "$cache"/"$release".*"$suffix"; do
    # "4.3.7" must not take "4.3.7-asm" (nor a library build its programs): the suffix is the whole tail.
    [[ "${done_dir#"$cache"/"$release".}" =~ ^[0-9]+$suffix$ ]] || continue
    if grep -qs "config $config" "$done_dir/.complete"; then
      log "cached in $done_dir"
      echo "$done_dir/$out"
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
trap 'exit 1' INT TERM # so that a stopped build removes its sources too
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
versions=$(apt-cache "${apt_opts[@]}" showsrc ffmpeg | sed -n 's/^Version: //p' |
  grep -E "^([0-9]+:)?${release//./\\.}\\." | sort -V)
version=$(tail -n 1 <<<"$versions")
[ -n "$version" ] || {
  log "no ffmpeg $release.x source in suite $suite"
  exit 1
}
# The programs are an oracle for the library build of the same release: they must be of its very version.
libs_built=$(sed -n 's/^ffmpeg \([^ ]*\) .*/\1/p' "$cache/$release".*"${suffix%-programs}"/.complete 2>/dev/null |
  sort -V | tail -n 1 || true)
if [ $programs = 1 ] && [ -n "$libs_built" ] && [ "$libs_built" != "$version" ]; then
  grep -qxF "$libs_built" <<<"$versions" || {
    log "the cached library build is ffmpeg $libs_built, whose source suite $suite no longer has ($version):" \
      "remove $cache/$release.*${suffix%-programs} to build both anew"
    exit 1
  }
  version=$libs_built
fi
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
kind=(--enable-shared --disable-static --disable-programs --disable-avfilter)
[ $programs = 1 ] && kind=(--disable-shared --enable-static --enable-ffmpeg --enable-ffprobe --disable-ffplay
  --enable-avfilter --enable-filter="$filters" --enable-encoder="$encoders" --enable-muxer="$muxers")
log "configure ($src → $prefix)"
# --disable-everything first: an --enable-* before it would be undone.
(cd "$src" && ./configure --prefix="$prefix" --disable-everything "${kind[@]}" --disable-doc \
  --disable-autodetect --disable-avdevice "${postproc[@]}" \
  --disable-network --enable-swscale --enable-swresample "$asm_flag" --enable-protocol=file,pipe \
  --enable-decoder="$decoders" --enable-demuxer="$demuxers" --enable-parser="$parsers" --enable-bsf="$bsfs" \
  >"$work/configure.log" 2>&1) || {
  tail -n 20 "$work/configure.log" >&2
  exit 1
}
# Every component asked for must be enabled (configure only warns about a name it does not know).
wanted=(decoder:"$decoders" demuxer:"$demuxers" parser:"$parsers" bsf:"$bsfs")
[ $programs = 1 ] && wanted+=(filter:"$filters" encoder:"$encoders" muxer:"$muxers")
for entry in "${wanted[@]}"; do
  type=${entry%%:*} names=${entry#*:}
  for name in ${names//,/ }; do
    grep -q "^CONFIG_${name^^}_${type^^}=yes" "$src/ffbuild/config.mak" || {
      log "configure did not enable the $name $type"
      exit 1
    }
  done
done
start=$(date +%s)
log "make -j$(nproc)"
if [ $programs = 1 ]; then
  (cd "$src" && make -j"$(nproc)" ffmpeg ffprobe >"$work/make.log" 2>&1) || {
    tail -n 30 "$work/make.log" >&2
    exit 1
  }
  mkdir -p "$prefix/bin"
  cp "$src/ffmpeg" "$src/ffprobe" "$prefix/bin/"
else
  (cd "$src" && make -j"$(nproc)" >"$work/make.log" 2>&1 && make install >>"$work/make.log" 2>&1) || {
    tail -n 30 "$work/make.log" >&2
    exit 1
  }
  rm -rf "$prefix/share" "$prefix/lib/pkgconfig"
fi
echo "ffmpeg $version (Debian $suite), built $(date -u +%FT%TZ) in $(($(date +%s) - start)) s, $asm_flag, config $config" >"$prefix/.complete"
log "built in $(($(date +%s) - start)) s: $(du -sh "$prefix/$out" | cut -f1)"
echo "$prefix/$out"
