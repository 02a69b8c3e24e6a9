/**
 * Phase `inventory`: what the machine is and what it offers sluice: the host, `nvidia-smi`, where libcuda,
 * libnvcuvid and NVML are (sluice's own search, the dynamic loader's cache, the usual driver folders), the
 * driver, the raw decoder caps per codec with `nNumNVDECs`, NVML, the kit's FFmpeg, and Python's torch.
 * @module
 */
import { loadCuda } from "../../ffi/cuda/library.ts";
import { loadNvcuvid } from "../../ffi/nvcuvid/library.ts";
import { loadNvml, nvmlErrorText } from "../../ffi/nvml/library.ts";
import { CUVIDDECODECAPS } from "../../ffi/nvcuvid/layouts.ts";
import { CUDA_VIDEO_CHROMA, CUDA_VIDEO_CODEC } from "../../ffi/nvcuvid/symbols.ts";
import { OutParam } from "../../ffi/out_param.ts";
import {
  acquireContext,
  checkCu,
  cuda,
  nvcuvid,
  releaseContext,
  withContext,
} from "../../src/nvdec/driver.ts";
import { StructBuffer } from "../../src/nvdec/struct_buffer.ts";
import { ffmpegInfo } from "../../src/media/ffmpeg.ts";
import { demuxVideo } from "../../src/media/demux.ts";
import { decodeVideo } from "../../src/media/decode.ts";
import type { VideoPackets } from "../../src/media/packets.ts";
import { clipFor, cudaState, kitInfo, nvdecMissing } from "./kit.ts";
import { fail, pass, type PhaseResult, skip } from "./result.ts";

const text = (b: Uint8Array) => new TextDecoder().decode(b);

/** Runs `cmd args` and returns its output, or null when it is not installed. */
async function command(cmd: string, args: string[]): Promise<{ ok: boolean; out: string } | null> {
  try {
    const o = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
    return { ok: o.success, out: (text(o.stdout) + text(o.stderr)).trim() };
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    throw e;
  }
}

/** Folders the NVIDIA driver's libraries are found in (container runtimes differ). */
const DRIVER_DIRS = [
  "/usr/local/nvidia/lib64",
  "/usr/local/nvidia/lib",
  "/usr/lib/x86_64-linux-gnu",
  "/lib/x86_64-linux-gnu",
  "/usr/lib64",
  "/usr/lib/wsl/lib",
];

function filesIn(dir: string, prefix: string): string[] {
  try {
    return [...Deno.readDirSync(dir)].filter((e) => e.name.startsWith(prefix)).map((e) => `${dir}/${e.name}`)
      .sort();
  } catch {
    return [];
  }
}

/** The inventory phase. */
export async function inventory(r: PhaseResult): Promise<void> {
  await r.check("host", () => {
    const mem = Deno.systemMemoryInfo();
    return pass({
      cores: navigator.hardwareConcurrency,
      memoryGiB: Math.round(mem.total / 2 ** 30),
      kernel: Deno.osRelease(),
      deno: Deno.version.deno,
      kit: kitInfo.small ? "small (rehearsal)" : "full",
      env: Object.fromEntries(
        ["LD_LIBRARY_PATH", "NVIDIA_DRIVER_CAPABILITIES", "NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"]
          .map((k) => [k, Deno.env.get(k) ?? null]),
      ),
    });
  });

  await r.check("nvidia-smi", async () => {
    const q = await command("nvidia-smi", [
      "--query-gpu=name,driver_version,memory.total,compute_cap,pci.bus_id,clocks.max.sm,clocks.max.mem",
      "--format=csv",
    ]);
    if (q === null) return skip("nvidia-smi is not installed here");
    const all = await command("nvidia-smi", []);
    r.info("nvidia-smi", all?.out ?? "");
    return q.ok ? pass({ query: q.out.split("\n") }) : fail(`nvidia-smi failed: ${q.out.slice(0, 300)}`);
  });

  await r.check("libraries", async () => {
    const ldconfig = await command("ldconfig", ["-p"]) ?? await command("/sbin/ldconfig", ["-p"]);
    const libs: Record<string, unknown> = {};
    const missing: string[] = [];
    const loaders = {
      "libcuda.so.1": loadCuda,
      "libnvcuvid.so.1": loadNvcuvid,
      "libnvidia-ml.so.1": loadNvml,
    };
    for (const [name, load] of Object.entries(loaders)) {
      let sluice: string;
      try {
        const lib = load();
        sluice = lib.path;
        lib.close();
      } catch (e) {
        sluice = `not found: ${(e as Error).message.split("\n")[0]}`;
        missing.push(name);
      }
      const stem = name.replace(/\.so\.1$/, ".so");
      libs[name] = {
        sluice,
        ldconfig: (ldconfig?.out ?? "").split("\n").filter((l) => l.includes(stem)).map((l) => l.trim()),
        files: DRIVER_DIRS.flatMap((d) => filesIn(d, stem)),
      };
    }
    r.info("libraries", libs);
    const why = missing.includes("libnvcuvid.so.1")
      ? " (in containers libnvcuvid.so.1 exists only when the driver's `video` capability was granted: " +
        "NVIDIA_DRIVER_CAPABILITIES=compute,utility,video)"
      : "";
    return missing.length === 0
      ? pass({ found: Object.keys(loaders) })
      : fail(`sluice does not find ${missing.join(", ")}${why}`, { missing });
  });

  const cu = cudaState();
  await r.check("cuda driver", () => {
    if (!cu.ok) return fail(cu.reason);
    const version = new OutParam();
    checkCu(cuda().cuDriverGetVersion(version.bytes), "", "cuDriverGetVersion");
    const names: string[] = [];
    for (let d = 0; d < cu.devices; d++) {
      const name = new Uint8Array(256);
      checkCu(cuda().cuDeviceGetName(name, name.length, d), "", "cuDeviceGetName");
      names.push(text(name.subarray(0, name.indexOf(0))));
    }
    const v = version.i32[0];
    return pass({ driverApi: `${Math.floor(v / 1000)}.${(v % 1000) / 10}`, devices: names });
  });

  await r.check("decoder caps", () => {
    const missing = nvdecMissing();
    if (missing) return skip(missing);
    const rows: (string | number | boolean)[][] = [];
    const dc = acquireContext(0);
    try {
      // The context is pushed around every call, the caps query included (it fails without one).
      withContext(dc, () => {
        const chromaName = ["400", "420", "422", "444"];
        for (const [codec, id] of Object.entries(CUDA_VIDEO_CODEC)) {
          const { YUV420, YUV444 } = CUDA_VIDEO_CHROMA;
          for (const [chroma, depth] of [[YUV420, 8], [YUV420, 10], [YUV444, 8]]) {
            if (depth === 10 && !["HEVC", "VP9", "AV1"].includes(codec)) continue;
            if (chroma === YUV444 && codec !== "HEVC" && codec !== "H264") continue;
            const caps = new StructBuffer(CUVIDDECODECAPS).i32("eCodecType", id).i32("eChromaFormat", chroma)
              .u32("nBitDepthMinus8", depth - 8);
            checkCu(nvcuvid().cuvidGetDecoderCaps(caps.bytes), codec, "cuvidGetDecoderCaps");
            rows.push([
              codec,
              chromaName[chroma],
              depth,
              caps.getU8("bIsSupported") === 1,
              caps.getU8("nNumNVDECs"),
              `${caps.getU16("nMinWidth")}x${caps.getU16("nMinHeight")}`,
              `${caps.getU32("nMaxWidth")}x${caps.getU32("nMaxHeight")}`,
              caps.getU32("nMaxMBCount"),
              `0x${caps.getU16("nOutputFormatMask").toString(16)}`,
            ]);
          }
        }
      });
    } finally {
      releaseContext(dc);
    }
    r.table({
      title: "cuvidGetDecoderCaps (device 0)",
      columns: [
        "codec",
        "chroma",
        "bits",
        "supported",
        "nNumNVDECs",
        "min",
        "max",
        "max MBs",
        "output formats",
      ],
      rows,
    });
    const h264 = rows.find((x) => x[0] === "H264" && x[2] === 8)!;
    return h264[3]
      ? pass({
        nNumNVDECs: h264[4],
        supported: rows.filter((x) => x[3]).map((x) => `${x[0]} ${x[1]} ${x[2]}-bit`),
      })
      : fail("the decoder does not support H.264 4:2:0 8-bit", { rows: rows.length });
  });

  await r.check("nvml", () => {
    let lib;
    try {
      lib = loadNvml();
    } catch (e) {
      return skip((e as Error).message.split("\n")[0]);
    }
    const n = lib.symbols;
    const ok = (code: number, what: string) => {
      if (code !== 0) throw new Error(`${what}: ${nvmlErrorText(n, code)} (${code})`);
    };
    try {
      ok(n.nvmlInit_v2(), "nvmlInit_v2");
      try {
        const version = new Uint8Array(96);
        ok(n.nvmlSystemGetDriverVersion(version, version.length), "nvmlSystemGetDriverVersion");
        const dev = new OutParam();
        ok(n.nvmlDeviceGetHandleByIndex_v2(0, dev.bytes), "nvmlDeviceGetHandleByIndex_v2");
        const name = new Uint8Array(96);
        ok(n.nvmlDeviceGetName(dev.pointer, name, name.length), "nvmlDeviceGetName");
        const util = new Uint32Array(2);
        ok(
          n.nvmlDeviceGetDecoderUtilization(
            dev.pointer,
            new Uint8Array(util.buffer, 0, 4),
            new Uint8Array(util.buffer, 4, 4),
          ),
          "nvmlDeviceGetDecoderUtilization",
        );
        return pass({
          path: lib.path,
          driver: text(version.subarray(0, version.indexOf(0))),
          device: text(name.subarray(0, name.indexOf(0))),
          decoderUtilizationIdle: util[0],
          samplingPeriodUs: util[1],
        });
      } finally {
        n.nvmlShutdown();
      }
    } finally {
      lib.close();
    }
  });

  await r.check("ffmpeg", async () => {
    const info = ffmpegInfo();
    const clip = clipFor("speed-small");
    const packets = await demuxVideo(clip.path, { window: [0, 0.2] }) as VideoPackets;
    const frames = await decodeVideo(packets, { pixelFormat: "gray" });
    return pass({
      release: info.release,
      dir: info.dir,
      versions: info.versions,
      kitBuild: kitInfo.ffmpeg ?? null,
      sanity: `${clip.file}: ${frames.pts.length} frames decoded on the CPU`,
    });
  });

  await r.check("python", async () => {
    const code = "import sys, json\nout = {'python': sys.version.split()[0]}\n" +
      "try:\n import numpy; out['numpy'] = numpy.__version__\nexcept Exception as e: out['numpy'] = repr(e)\n" +
      "try:\n import torch; out['torch'] = torch.__version__; out['torchCuda'] = torch.cuda.is_available(); " +
      "out['torchCudaVersion'] = torch.version.cuda\nexcept Exception as e: out['torch'] = repr(e)\n" +
      "print(json.dumps(out))";
    const py = await command(Deno.env.get("GPU_PYTHON") ?? "python3", ["-c", code]);
    if (py === null) return skip("python3 is not installed here");
    if (!py.ok) return fail(py.out.slice(0, 300));
    return pass(JSON.parse(py.out.split("\n").at(-1)!));
  });
}
