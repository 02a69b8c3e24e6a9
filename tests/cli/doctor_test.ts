/**
 * `sluice doctor`, run as a subprocess, against independent oracles: the FFmpeg it finds (ffprobe -version and
 * ffmpeg -decoders for the system's; the build's own headers for the build `SLUICE_FFMPEG_LIBDIR` names, as
 * scripts/ffmpeg/test_releases.sh runs this file against each), no FFmpeg at all, a release with no table, the
 * NVDEC driver double (with and without libnvcuvid and NVML), and a tiny /dev/shm (a 1 MiB tmpfs, sized by df).
 */
import assert from "node:assert/strict";
import { LIB_DIR, withFfmpeg9Dir } from "../helpers/system_ffmpeg.ts";
import { sluice } from "./helpers.ts";
import { buildDouble } from "../nvdec/double/build.ts";
import type { DoctorReport } from "../../src/cli/doctor.ts";
import { hasFfmpegCliSync } from "../helpers/media.ts";
import { skipBecause } from "../helpers/skip.ts";

async function doctor(args: string[] = [], env: Record<string, string> = {}) {
  const r = await sluice(["doctor", "--json", ...args], env);
  let report: DoctorReport;
  try {
    report = JSON.parse(r.stdout);
  } catch {
    throw new Error(`doctor printed no JSON (exit ${r.code}):\n${r.stdout}\n${r.stderr}`);
  }
  return { code: r.code, report, stderr: r.stderr };
}

async function run(cmd: string, args: string[]): Promise<string> {
  const out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  return new TextDecoder().decode(out.stdout);
}

const override = Deno.env.get("SLUICE_FFMPEG_LIBDIR");

Deno.test({
  name:
    "doctor: the FFmpeg found is reported as the oracle sees it (system: ffprobe/ffmpeg; a build: its headers)",
  ignore: override === undefined && !hasFfmpegCliSync(),
  fn: async () => {
    const { code, report } = await doctor();
    assert.equal(code, 0);
    assert.equal(report.ok, true);
    const f = report.ffmpeg;
    assert.ok(f.found, JSON.stringify(f));
    assert.equal(f.fromEnv, override !== undefined);
    assert.equal(f.table.release, f.version.match(/^(\d+\.\d+)/)![1], "the table is the version's release");
    assert.equal(f.decoders.h264, "h264");
    if (override === undefined) {
      const probe = await run("ffprobe", ["-version"]);
      assert.ok(probe.startsWith(`ffprobe version ${f.version} `), probe.split("\n")[0]);
      assert.match(
        probe,
        new RegExp(`^libavcodec\\s+${f.libraries.avcodec.version.replace(/\./g, "\\.\\s*")} `, "m"),
      );
      const cliDecoders = new Set(
        (await run("ffmpeg", ["-hide_banner", "-decoders"])).split("\n").map((l) => l.trim().split(/\s+/)[1]),
      );
      for (const [format, name] of Object.entries(f.decoders)) {
        if (name !== null) {
          assert.ok(cliDecoders.has(name), `${format}: ${name} is not among ffmpeg -decoders`);
        }
      }
      assert.equal(f.dir, LIB_DIR);
    } else {
      // A scripts/ffmpeg/build.sh build: its headers say its versions, and it has no AV1 decoder (no libdav1d).
      const inc = `${override.replace(/\/+$/, "")}/../include`;
      const h = await Deno.readTextFile(`${inc}/libavcodec/version.h`) +
        await Deno.readTextFile(`${inc}/libavcodec/version_major.h`).catch(() => "");
      const part = (p: string) => h.match(new RegExp(`#define LIBAVCODEC_VERSION_${p}\\s+(\\d+)`))![1];
      assert.equal(f.libraries.avcodec.version, `${part("MAJOR")}.${part("MINOR")}.${part("MICRO")}`);
      assert.equal(f.table.provenance, "run-in-ci");
      assert.equal(f.decoders.av1, null);
      assert.equal(f.swresample.channelApi, f.table.release.startsWith("4.") ? "mask" : "ch_layout");
      const av1 = report.problems.find((p) => p.what.includes("no decoder for av1"));
      assert.equal(av1?.severity, "warning");
      assert.match(av1!.fix, /libdav1d/);
    }
    for (const lib of Object.values(f.libraries)) assert.ok(Deno.statSync(lib.path).isFile, lib.path);
    assert.equal(report.deno.version, Deno.version.deno);
    assert.equal(report.cores.online, navigator.hardwareConcurrency);
  },
});

Deno.test("doctor: no FFmpeg at all: exit 1, the loader cannot run, the fix names apt-get and SLUICE_FFMPEG_LIBDIR", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sluice-doctor-noffmpeg-" });
  try {
    const { code, report } = await doctor([], { SLUICE_FFMPEG_LIBDIR: dir });
    assert.equal(code, 1);
    assert.equal(report.ok, false);
    assert.equal(report.ffmpeg.found, false);
    const p = report.problems.filter((p) => p.severity === "error");
    assert.equal(p.length, 1);
    assert.match(p[0].what, /no FFmpeg sluice can load .*not found in SLUICE_FFMPEG_LIBDIR=/);
    assert.match(p[0].fix, /apt-get install -y libavformat59/);
    assert.match(p[0].fix, /SLUICE_FFMPEG_LIBDIR=\$\(scripts\/ffmpeg\/build\.sh 7\.1\)/);
    // The other checks still ran.
    assert.equal(typeof report.shm.ringBytes, "number");
    const text = await sluice(["doctor"], { SLUICE_FFMPEG_LIBDIR: dir });
    assert.equal(text.code, 1);
    assert.match(text.stdout, /the loader cannot run here/);
    assert.match(text.stdout, /error: no FFmpeg sluice can load/);
    assert.match(text.stdout, /fix: .*apt-get install/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name: "doctor: an FFmpeg release sluice has no table for is an error naming it and the supported releases",
  ignore: !Deno.statSync(LIB_DIR).isDirectory || !exists(`${LIB_DIR}/libavformat.so.59`),
  fn: async () => {
    await withFfmpeg9Dir("sluice-doctor-ffmpeg9-", async (dir) => {
      const { code, report } = await doctor([], { SLUICE_FFMPEG_LIBDIR: dir });
      assert.equal(code, 1);
      const p = report.problems.find((p) => p.severity === "error")!;
      assert.match(
        p.what,
        /a release sluice has no table for: .*libavformat\.so\.63.*supported: 4\.3, 4\.4, 5\.1/,
      );
    });
  },
});

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

const hasCc = (() => {
  try {
    return new Deno.Command("cc", { args: ["--version"], stdout: "null", stderr: "null" }).outputSync()
      .success;
  } catch {
    return false;
  }
})() || !skipBecause("no C compiler: the NVDEC driver double cannot be built");

Deno.test({
  name:
    "doctor: on the driver double, the driver version, each GPU with its NVDEC engines, libnvcuvid and NVML",
  ignore: !hasCc,
  fn: async () => {
    const lib = await buildDouble();
    const env = { SLUICE_LIBCUDA: lib, SLUICE_LIBNVCUVID: lib, SLUICE_LIBNVML: lib, NVDOUBLE_DEVICES: "2" };
    const { code, report } = await doctor([], env);
    assert.equal(code, report.ffmpeg.found ? 0 : 1);
    assert.deepEqual(report.cuda, {
      found: true,
      path: lib,
      driverVersion: "12.4", // the double's cuDriverGetVersion: 12040
      gpus: [0, 1].map((i) => ({ index: i, name: `NVDEC test double ${i} (libavcodec)`, nvdecEngines: 3 })),
    });
    assert.deepEqual(report.nvcuvid, { found: true, path: lib });
    assert.deepEqual(report.nvml, { found: true, path: lib, driverVersion: "580.0-nvdouble", gpus: 2 });
    assert.deepEqual(report.problems.filter((p) => /CUDA|nvcuvid|NVML/.test(p.what)), []);

    // The container case: the driver is mounted but not its video library (no `video` capability), nor NVML.
    const missing = "/nonexistent/libnvcuvid.so.1";
    const partial = await doctor([], {
      ...env,
      SLUICE_LIBNVCUVID: missing,
      SLUICE_LIBNVML: "/nonexistent/libnvml.so",
    });
    assert.equal(partial.code, code, "a missing libnvcuvid is a warning, not a reason the loader cannot run");
    assert.equal(partial.report.nvcuvid.found, false);
    if (partial.report.cuda.found) {
      assert.deepEqual(partial.report.cuda.gpus.map((g) => g.nvdecEngines), [null, null]);
    }
    const nv = partial.report.problems.find((p) => p.what.includes("libnvcuvid.so.1 is not"))!;
    assert.equal(nv.severity, "warning");
    assert.match(nv.fix, /NVIDIA_DRIVER_CAPABILITIES=compute,utility,video/);
    const nvml = partial.report.problems.find((p) => p.what.startsWith("NVML"))!;
    assert.match(nvml.fix, /NVIDIA_DRIVER_CAPABILITIES=compute,utility,video/);
  },
});

Deno.test({
  name:
    "doctor: a missing AV1 decoder is pointed at NVDEC only where a GPU here decodes AV1 (an H200's does not)",
  ignore: !hasCc,
  fn: async () => {
    const lib = await buildDouble();
    const env = { SLUICE_LIBCUDA: lib, SLUICE_LIBNVCUVID: lib, SLUICE_LIBNVML: lib, NVDOUBLE_DEVICES: "2" };
    const av1Fix = async (extra: Record<string, string>) => {
      const { report } = await doctor([], { ...env, ...extra });
      return report.problems.find((p) => p.what.includes("no decoder for av1"))?.fix;
    };
    const none = await av1Fix({});
    if (none === undefined) {
      skipBecause("the FFmpeg loaded here decodes AV1 (the per-release runs load builds that do not)");
      return;
    }
    // The double's NVDEC decodes what its libavcodec does, AV1 included: the way out names both GPUs.
    assert.match(none, /libdav1d.*, or decode AV1 on the GPU \(decode: "nvdec"; GPU 0, 1\)$/);
    // A real H200's cuvidGetDecoderCaps says AV1 is not supported (the GPU kit's first run): no NVDEC advice.
    const h200 = await av1Fix({ NVDOUBLE_UNSUPPORTED: "11" });
    assert.ok(h200 !== undefined && /libdav1d/.test(h200) && !/nvdec/.test(h200), h200);
    // No driver at all: none either.
    const noDriver = await av1Fix({ SLUICE_LIBCUDA: "/nonexistent/libcuda.so.1" });
    assert.ok(noDriver !== undefined && !/nvdec/.test(noDriver), noDriver);
  },
});

/** Mounts a tmpfs of `size` on a new temp dir (root only); null when this machine does not allow it. */
async function tinyTmpfs(size: string): Promise<string | null> {
  const dir = await Deno.makeTempDir({ prefix: "sluice-doctor-shm-" });
  const out = await new Deno.Command("mount", {
    args: ["-t", "tmpfs", "-o", `size=${size}`, "tmpfs", dir],
    stdout: "null",
    stderr: "piped",
  }).output().catch(() => null);
  if (out?.success) return dir;
  await Deno.remove(dir);
  skipBecause(
    `cannot mount a tmpfs here (${out ? new TextDecoder().decode(out.stderr).trim() : "no mount"}): ` +
      "the tiny /dev/shm case of sluice doctor needs root",
  );
  return null;
}

Deno.test("doctor: a 1 MiB /dev/shm is smaller than the slot ring: a warning with --shm-size; a ring that fits is ok", async () => {
  const dir = await tinyTmpfs("1m");
  if (dir === null) return;
  try {
    const df = (await run("df", ["-B1", "--output=size,avail", dir])).trim().split("\n")[1].trim().split(
      /\s+/,
    );
    const { code, report } = await doctor(["--shm", dir]);
    assert.equal(
      code,
      report.ffmpeg.found ? 0 : 1,
      "a small /dev/shm does not stop the loader (memfd slots)",
    );
    assert.equal(report.shm.path, dir);
    assert.equal(report.shm.sizeBytes, Number(df[0]));
    assert.equal(report.shm.freeBytes, Number(df[1]));
    assert.equal(report.shm.ringBytes, 4 * 8 * 16 * 224 * 224 * 3);
    assert.equal(report.shm.ok, false);
    const p = report.problems.find((p) =>
      p.what.startsWith(
        `${dir} holds 1 MiB, less than a slot ring of 4 slots of 8×16×224×224×3 uint8 (74 MiB)`,
      )
    )!;
    assert.equal(p.severity, "warning");
    assert.match(p.fix, /--shm-size=1g .*medium: Memory/);

    const small = [
      "--shm",
      dir,
      "--batch-size",
      "1",
      "--frames",
      "2",
      "--width",
      "64",
      "--height",
      "64",
      "--slots",
      "2",
    ];
    const fits = await doctor(small);
    assert.equal(fits.report.shm.ringBytes, 2 * 2 * 64 * 64 * 3);
    assert.equal(fits.report.shm.ok, true);
    assert.equal(fits.report.problems.find((p) => p.what.startsWith(dir)), undefined);
  } finally {
    await new Deno.Command("umount", { args: [dir] }).output();
    await Deno.remove(dir);
  }
});
