/**
 * What this machine gives the loader, checked: `sluice doctor`'s report (the command prints it; Python's
 * `sluice.doctor()` parses its `--json`). FFmpeg (found where, which release, which layout table and whether
 * that release runs in CI, which decoders, libswresample), Deno, the CUDA driver and each GPU with its NVDEC
 * engines, `libnvcuvid.so.1`, NVML, `/dev/shm` against a slot ring, and the cores. Every check runs on its own
 * (one failing says why and the others still run) and each problem comes with the command that fixes it.
 * `ok` is false, and `sluice doctor` exits 1, only when the loader cannot run here: no usable FFmpeg. Everything
 * else (no GPU, no NVML, a small `/dev/shm`) is a warning: the loader runs, on the CPU or without that help.
 *
 * Run as a program (`deno run -A src/cli/doctor.ts [--shm PATH]`, what Python's `sluice.doctor()` does: an
 * installed client carries `src/` and `ffi/` only) it prints the report as JSON and exits 1 when `ok` is false.
 * @module
 */

import {
  type FfmpegLibraries,
  INSTALL_HINT,
  RELEASE_MAJORS,
  supportedReleases,
} from "../../ffi/ffmpeg/library.ts";
import type { CodecIdName, LayoutProvenance } from "../../ffi/ffmpeg/layouts.ts";
import { loadCuda } from "../../ffi/cuda/library.ts";
import { loadNvcuvid } from "../../ffi/nvcuvid/library.ts";
import { loadNvml } from "../../ffi/nvml/library.ts";
import { libc, STATVFS } from "../../ffi/libc.ts";
import { cstr, readCString } from "../../ffi/cstring.ts";
import { OutParam } from "../../ffi/out_param.ts";
import { ffmpeg as loadedFfmpeg } from "../media/ffmpeg.ts";
import { codecName } from "../media/structs.ts";
import { decodeDevice } from "../loader/decode/devices.ts";
import { SERVER_TABLE } from "../serve/options.ts";

/** One thing that keeps the loader (an `"error"`) or one of its features (a `"warning"`) from working here. */
export interface DoctorProblem {
  severity: "error" | "warning";
  /** What is wrong, in a sentence. */
  what: string;
  /** The command (or setting) that fixes it. */
  fix: string;
}

/** FFmpeg as sluice finds it. */
export type FfmpegReport =
  | {
    found: true;
    /** Directory of the five libraries; `SLUICE_FFMPEG_LIBDIR` when it is set. */
    dir: string;
    /** Whether `SLUICE_FFMPEG_LIBDIR` chose it. */
    fromEnv: boolean;
    /** FFmpeg's own version string (`av_version_info`), e.g. "5.1.9-0+deb12u1". */
    version: string;
    /** Each library's file and `major.minor.micro`. */
    libraries: Record<
      "avformat" | "avcodec" | "avutil" | "swscale" | "swresample",
      { path: string; version: string }
    >;
    /** The struct layout table in use: its release, whether that release runs in CI, its headers. */
    table: { release: string; provenance: LayoutProvenance; headers: string };
    /** Per format: the decoder FFmpeg picks (`AVCodec.name`), or null when it has none. */
    decoders: Record<string, string | null>;
    /** libswresample (clip audio) and its channel layout API: `"ch_layout"` (5.1 on) or `"mask"` (4.x). */
    swresample: { version: string; channelApi: "ch_layout" | "mask" };
  }
  | { found: false; error: string };

/** One GPU. */
export interface GpuReport {
  index: number;
  name: string;
  /** NVDEC engines (`cuvidGetDecoderCaps`), null when libnvcuvid cannot say. */
  nvdecEngines: number | null;
}

/** The whole report. */
export interface DoctorReport {
  /** True when the loader can run here (a usable FFmpeg); `sluice doctor` exits 1 otherwise. */
  ok: boolean;
  deno: { version: string; v8: string; path: string };
  ffmpeg: FfmpegReport;
  cuda:
    | { found: true; path: string; driverVersion: string; gpus: GpuReport[] }
    | { found: false; error: string };
  nvcuvid: { found: true; path: string } | { found: false; error: string };
  nvml: { found: true; path: string; driverVersion: string; gpus: number } | { found: false; error: string };
  /** The shared-memory file system, against the slot ring of `ring`'s batch shape. */
  shm: {
    path: string;
    /** Size and free bytes (`statvfs`), null when it cannot be read. */
    sizeBytes: number | null;
    freeBytes: number | null;
    /** Bytes of the ring compared: `slots` batches of `batchBytes`. */
    ringBytes: number;
    ring: { slots: number; batchBytes: number; shape: string };
    ok: boolean;
  };
  cores: { online: number; cgroupLimit: number | null };
  problems: DoctorProblem[];
}

/** The batch whose slot ring `/dev/shm` is compared with. */
export interface RingShape {
  batchSize: number;
  frames: number;
  width: number;
  height: number;
  /** Bytes per sample: 1 (uint8) or 4 (float32). */
  bytesPerSample: number;
  slots: number;
}

/** The default ring compared: 4 slots (the server's default) of 8 clips × 16 frames × 224 × 224 RGB uint8. */
export const DEFAULT_RING: RingShape = {
  batchSize: 8,
  frames: 16,
  width: 224,
  height: 224,
  bytesPerSample: 1,
  slots: SERVER_TABLE.slots.default,
};

/** The formats whose decoders are listed, and their codec ids in the layout table (AV1's differs in 4.x). */
const DECODERS: [string, CodecIdName][] = [
  ["h264", "AV_CODEC_ID_H264"],
  ["hevc", "AV_CODEC_ID_HEVC"],
  ["vp9", "AV_CODEC_ID_VP9"],
  ["av1", "AV_CODEC_ID_AV1"],
  ["vp8", "AV_CODEC_ID_VP8"],
  ["mpeg4", "AV_CODEC_ID_MPEG4"],
  ["mpeg2video", "AV_CODEC_ID_MPEG2VIDEO"],
  ["mjpeg", "AV_CODEC_ID_MJPEG"],
  ["prores", "AV_CODEC_ID_PRORES"],
  ["png", "AV_CODEC_ID_PNG"],
  ["aac", "AV_CODEC_ID_AAC"],
  ["mp3", "AV_CODEC_ID_MP3"],
  ["opus", "AV_CODEC_ID_OPUS"],
  ["ac3", "AV_CODEC_ID_AC3"],
];

/** The container capabilities that mount NVIDIA's video libraries (libnvcuvid) and NVML. */
export const CAPABILITIES_HINT = "NVIDIA_DRIVER_CAPABILITIES=compute,utility,video " +
  "(docker run --gpus all -e NVIDIA_DRIVER_CAPABILITIES=compute,utility,video ...)";

const message = (e: unknown) => (e instanceof Error ? e.message : String(e));
const show = (v: { major: number; minor: number; micro: number }) => `${v.major}.${v.minor}.${v.micro}`;

/** Runs every check. `shmPath` is the file system checked (default `/dev/shm`), `ring` the batch it must hold. */
export function doctorReport(shmPath = "/dev/shm", ring: RingShape = DEFAULT_RING): DoctorReport {
  const problems: DoctorProblem[] = [];
  const ffmpeg = ffmpegReport(problems);
  const cuda = cudaReport();
  const nvcuvid = nvcuvidReport();
  const nvml = nvmlReport();
  if (!cuda.found) {
    problems.push({
      severity: "warning",
      what: `no CUDA driver (${firstLine(cuda.error)}): decode runs on the CPU`,
      fix:
        "install the NVIDIA driver (and run containers with --gpus all); SLUICE_LIBCUDA=/path/libcuda.so.1 " +
        "names it when it lies elsewhere",
    });
  } else if (!nvcuvid.found) {
    problems.push({
      severity: "warning",
      what: `the CUDA driver is there but libnvcuvid.so.1 is not (${firstLine(nvcuvid.error)}): ` +
        `decode: "nvdec" cannot run, "auto" decodes on the CPU`,
      fix:
        `in a container, mount the driver's video libraries: ${CAPABILITIES_HINT}; on a host, install the ` +
        "driver's decode library (Debian/Ubuntu: libnvidia-decode-<version>) or set SLUICE_LIBNVCUVID",
    });
  }
  if (cuda.found && !nvml.found) {
    problems.push({
      severity: "warning",
      what:
        `NVML (libnvidia-ml.so.1) is not there (${firstLine(nvml.error)}): nvidia-smi and GPU monitoring ` +
        "do not work here",
      fix: `in a container: ${CAPABILITIES_HINT}; or set SLUICE_LIBNVML`,
    });
  }
  // NVDEC as the way out of a missing AV1 decoder only where a GPU here decodes AV1 (an H200's NVDEC does not)
  const av1 = problems.find((p) => p.what.startsWith("this FFmpeg has no decoder for av1:"));
  if (av1 !== undefined && cuda.found && nvcuvid.found) {
    const gpus = cuda.gpus.filter((g) => decodeDevice("nvdec").engines(g.index, "av1") !== undefined);
    if (gpus.length > 0) {
      av1.fix += `, or decode AV1 on the GPU (decode: "nvdec"; GPU ${gpus.map((g) => g.index).join(", ")})`;
    }
  }
  const shm = shmReport(shmPath, ring, problems);
  const online = navigator.hardwareConcurrency;
  const cgroupLimit = cgroupCpus();
  return {
    ok: !problems.some((p) => p.severity === "error"),
    deno: { version: Deno.version.deno, v8: Deno.version.v8, path: Deno.execPath() },
    ffmpeg,
    cuda,
    nvcuvid,
    nvml,
    shm,
    cores: { online, cgroupLimit },
    problems,
  };
}

function firstLine(s: string): string {
  return s.split("\n")[0];
}

function ffmpegReport(problems: DoctorProblem[]): FfmpegReport {
  let f: FfmpegLibraries;
  try {
    f = loadedFfmpeg();
  } catch (e) {
    const error = message(e);
    const refused = error.includes("no struct layout table");
    problems.push({
      severity: "error",
      what: refused
        ? `the FFmpeg found is a release sluice has no table for: ${firstLine(error)}`
        : `no FFmpeg sluice can load (${firstLine(error)}): the loader cannot run`,
      fix: `${INSTALL_HINT}; or point SLUICE_FFMPEG_LIBDIR at a build of a supported release ` +
        `(${supportedReleases()}): SLUICE_FFMPEG_LIBDIR=$(scripts/ffmpeg/build.sh 7.1)`,
    });
    return { found: false, error };
  }
  {
    const majors = RELEASE_MAJORS.find((m) => m.avcodec === f.versions.avcodec.major)!;
    const lib = (name: keyof typeof f.versions) => ({
      path: `${f.dir}/lib${name}.so.${majors[name]}`,
      version: show(f.versions[name]),
    });
    const decoders: Record<string, string | null> = {};
    for (const [name, id] of DECODERS) {
      const codec = f.avcodec.avcodec_find_decoder(f.layout.AVCodecID[id]);
      decoders[name] = codec === null ? null : codecName(codec);
    }
    const missing = ["h264", "hevc", "vp9", "av1"].filter((n) => decoders[n] === null);
    if (missing.length > 0) {
      problems.push({
        severity: "warning",
        what: `this FFmpeg has no decoder for ${missing.join(", ")}: videos in ${
          missing.length > 1 ? "those formats" : "that format"
        } fail (each clip counted, named, replaced)`,
        fix: missing.includes("av1") && missing.length === 1
          ? `use an FFmpeg built with libdav1d (Debian's and Ubuntu's own are: ${INSTALL_HINT})`
          : `use a full FFmpeg build: ${INSTALL_HINT}`,
      });
    }
    return {
      found: true,
      dir: f.dir,
      fromEnv: Deno.env.get("SLUICE_FFMPEG_LIBDIR") !== undefined,
      version: f.versionInfo,
      libraries: {
        avformat: lib("avformat"),
        avcodec: lib("avcodec"),
        avutil: lib("avutil"),
        swscale: lib("swscale"),
        swresample: lib("swresample"),
      },
      table: { release: f.layout.release, provenance: f.layout.provenance, headers: f.layout.headers },
      decoders,
      swresample: { version: show(f.versions.swresample), channelApi: f.channels.kind },
    };
  }
}

/** `major.minor` of a CUDA driver version number (12040 → "12.4"). */
export function cudaVersionText(v: number): string {
  return `${Math.floor(v / 1000)}.${Math.floor((v % 1000) / 10)}`;
}

function cudaReport(): DoctorReport["cuda"] {
  let lib: ReturnType<typeof loadCuda>;
  try {
    lib = loadCuda();
  } catch (e) {
    return { found: false, error: message(e) };
  }
  try {
    const cu = lib.symbols;
    const rc = cu.cuInit(0);
    const version = new OutParam();
    cu.cuDriverGetVersion(version.bytes);
    const driverVersion = cudaVersionText(version.i32[0]);
    // CUDA_ERROR_NO_DEVICE (100): a driver without a GPU.
    if (rc !== 0) return { found: true, path: lib.path, driverVersion, gpus: [] };
    const count = new OutParam();
    cu.cuDeviceGetCount(count.bytes);
    const gpus: GpuReport[] = [];
    for (let i = 0; i < count.i32[0]; i++) {
      const name = new Uint8Array(256);
      cu.cuDeviceGetName(name, name.length, i);
      gpus.push({
        index: i,
        name: new TextDecoder().decode(name.subarray(0, Math.max(0, name.indexOf(0)))),
        nvdecEngines: decodeDevice("nvdec").engines(i) ?? null,
      });
    }
    return { found: true, path: lib.path, driverVersion, gpus };
  } catch (e) {
    return { found: false, error: message(e) };
  } finally {
    lib.close();
  }
}

function nvcuvidReport(): DoctorReport["nvcuvid"] {
  try {
    const lib = loadNvcuvid();
    lib.close();
    return { found: true, path: lib.path };
  } catch (e) {
    return { found: false, error: message(e) };
  }
}

function nvmlReport(): DoctorReport["nvml"] {
  let lib: ReturnType<typeof loadNvml>;
  try {
    lib = loadNvml();
  } catch (e) {
    return { found: false, error: message(e) };
  }
  try {
    const n = lib.symbols;
    const fail = (rc: number, call: string) => `${call}: ${readCString(n.nvmlErrorString(rc)) ?? rc}`;
    const rc = n.nvmlInit_v2();
    if (rc !== 0) return { found: false, error: fail(rc, "nvmlInit_v2") };
    try {
      const text = new Uint8Array(96);
      const v = n.nvmlSystemGetDriverVersion(text, text.length);
      if (v !== 0) return { found: false, error: fail(v, "nvmlSystemGetDriverVersion") };
      const count = new OutParam();
      const c = n.nvmlDeviceGetCount_v2(count.bytes);
      if (c !== 0) return { found: false, error: fail(c, "nvmlDeviceGetCount_v2") };
      const driverVersion = new TextDecoder().decode(text.subarray(0, Math.max(0, text.indexOf(0))));
      return { found: true, path: lib.path, driverVersion, gpus: count.i32[0] };
    } finally {
      n.nvmlShutdown();
    }
  } finally {
    lib.close();
  }
}

/** Size and free bytes of the file system at `path` (`statvfs`), or null. */
export function fileSystemSpace(path: string): { size: number; free: number } | null {
  const c = libc();
  if (c === null) return null;
  const buf = new Uint8Array(STATVFS.$size);
  if (c.statvfs(cstr(path), buf) !== 0) return null;
  const dv = new DataView(buf.buffer);
  const frsize = Number(dv.getBigUint64(STATVFS.f_frsize, true)) ||
    Number(dv.getBigUint64(STATVFS.f_bsize, true));
  const blocks = (field: number) => Number(dv.getBigUint64(field, true)) * frsize;
  return { size: blocks(STATVFS.f_blocks), free: blocks(STATVFS.f_bavail) };
}

function shmReport(path: string, ring: RingShape, problems: DoctorProblem[]): DoctorReport["shm"] {
  const batchBytes = ring.batchSize * ring.frames * ring.height * ring.width * 3 * ring.bytesPerSample;
  const ringBytes = ring.slots * batchBytes;
  const space = fileSystemSpace(path);
  const shape = `${ring.slots} slots of ${ring.batchSize}×${ring.frames}×${ring.height}×${ring.width}×3 ` +
    (ring.bytesPerSample === 1 ? "uint8" : "float32");
  const ok = space !== null && space.size >= ringBytes;
  if (space === null) {
    problems.push({
      severity: "warning",
      what: `${path} cannot be read (statvfs failed): no shared-memory file system there`,
      fix:
        "mount one: docker run --shm-size=2g ... (or --ipc=host); Kubernetes: an emptyDir with medium: Memory " +
        "mounted at /dev/shm",
    });
  } else if (!ok) {
    problems.push({
      severity: "warning",
      what:
        `${path} holds ${mib(space.size)}, less than a slot ring of ${shape} (${mib(ringBytes)}). sluice's ` +
        "own slots are memfd memory, not files there, so the loader runs; but PyTorch DataLoader worker " +
        "processes and NCCL pass their tensors through it, and fail or stall when it is full",
      fix:
        `docker run --shm-size=${
          Math.ceil((ringBytes * 2) / 2 ** 30)
        }g ... (or --ipc=host); Kubernetes: an ` +
        "emptyDir with medium: Memory mounted at /dev/shm",
    });
  }
  return {
    path,
    sizeBytes: space?.size ?? null,
    freeBytes: space?.free ?? null,
    ringBytes,
    ring: { slots: ring.slots, batchBytes, shape },
    ok,
  };
}

function mib(bytes: number): string {
  return `${(bytes / 2 ** 20).toFixed(bytes < 2 ** 20 ? 2 : 0)} MiB`;
}

/** The cgroup v2 CPU limit (`cpu.max` quota ÷ period), or null when there is none. */
function cgroupCpus(): number | null {
  try {
    const [quota, period] = Deno.readTextFileSync("/sys/fs/cgroup/cpu.max").trim().split(/\s+/);
    if (quota === "max") return null;
    return Math.round((Number(quota) / Number(period)) * 100) / 100;
  } catch {
    return null;
  }
}

if (import.meta.main) {
  const at = Deno.args.indexOf("--shm");
  const report = doctorReport(at >= 0 ? Deno.args[at + 1] : undefined);
  console.log(JSON.stringify(report, null, 2));
  Deno.exit(report.ok ? 0 : 1);
}
