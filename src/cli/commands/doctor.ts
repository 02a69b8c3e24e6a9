/**
 * `sluice doctor`: what this machine gives the loader (FFmpeg, decoders, CUDA, each GPU, libnvcuvid, NVML,
 * `/dev/shm`, cores), every problem with the command that fixes it; exit status 1 when the loader cannot run
 * here. `--json` prints the report `sluice.doctor()` returns in Python. The checks: `src/cli/doctor.ts`.
 * @module
 */

import { DEFAULT_RING, type DoctorReport, doctorReport } from "../doctor.ts";
import { defineCommand } from "../args.ts";
import { alignTable } from "../table.ts";
import { print, wrapLine } from "../tty.ts";

/** The `doctor` command. */
export const doctorCommand = defineCommand({
  name: "doctor",
  summary:
    "check what this machine gives the loader: FFmpeg and its decoders, CUDA, GPUs, NVDEC, NVML, /dev/shm",
  description:
    "Every check runs; each problem is printed with the command that fixes it. The exit status is 1 " +
    "when the loader cannot run here (no FFmpeg it can load), 0 otherwise (a missing GPU or NVML is a warning: " +
    "decode runs on the CPU). /dev/shm is compared with a slot ring of the batch given by the options below.",
  positionals: [],
  options: {
    json: { type: "boolean", help: "print the report as JSON (what Python's sluice.doctor() returns)" },
    shm: { type: "string", default: "/dev/shm", help: "the shared-memory file system to check" },
    "batch-size": {
      type: "integer",
      min: 1,
      max: 65536,
      default: DEFAULT_RING.batchSize,
      help: "clips per batch",
    },
    frames: { type: "integer", min: 1, max: 65536, default: DEFAULT_RING.frames, help: "frames per clip" },
    width: { type: "integer", min: 1, max: 16384, default: DEFAULT_RING.width, help: "frame width" },
    height: { type: "integer", min: 1, max: 16384, default: DEFAULT_RING.height, help: "frame height" },
    dtype: { type: "enum", values: ["uint8", "float32"], default: "uint8", help: "sample type" },
    slots: {
      type: "integer",
      min: 1,
      max: 1024,
      default: DEFAULT_RING.slots,
      help: "batch slots in the ring",
    },
  },
  examples: ["doctor", "doctor --json", "doctor --batch-size 32 --frames 16 --width 112 --height 112"],
  run({ values }) {
    const report = doctorReport(values.shm, {
      batchSize: values["batch-size"],
      frames: values.frames,
      width: values.width,
      height: values.height,
      bytesPerSample: values.dtype === "float32" ? 4 : 1,
      slots: values.slots,
    });
    print(Deno.stdout, values.json ? JSON.stringify(report, null, 2) : formatDoctor(report));
    return Promise.resolve(report.ok ? 0 : 1);
  },
});

/** The report as text: one row per check, then each problem and its fix. */
export function formatDoctor(r: DoctorReport): string {
  const rows: string[][] = [["check", "result"]];
  const f = r.ffmpeg;
  if (f.found) {
    const ci = f.table.provenance === "run-in-ci" ? "run in CI" : "headers only";
    rows.push(["FFmpeg", `${f.version} in ${f.dir}${f.fromEnv ? " (SLUICE_FFMPEG_LIBDIR)" : ""}`]);
    rows.push(["layout table", `FFmpeg ${f.table.release} (${ci})`]);
    const dec = Object.entries(f.decoders).map(([k, v]) => (v === null ? `${k}: none` : `${k}: ${v}`));
    rows.push(["decoders", dec.join(", ")]);
    rows.push(["swresample", `${f.swresample.version} (${f.swresample.channelApi} channel layouts)`]);
  } else {
    rows.push(["FFmpeg", `not usable: ${f.error.split("\n")[0]}`]);
  }
  rows.push(["Deno", `${r.deno.version} (${r.deno.path})`]);
  if (r.cuda.found) {
    rows.push(["CUDA driver", `${r.cuda.driverVersion} (${r.cuda.path})`]);
    if (r.cuda.gpus.length === 0) rows.push(["GPUs", "none"]);
    for (const g of r.cuda.gpus) {
      rows.push([`GPU ${g.index}`, `${g.name}, NVDEC engines: ${g.nvdecEngines ?? "unknown"}`]);
    }
  } else {
    rows.push(["CUDA driver", "none"]);
  }
  rows.push(["libnvcuvid", r.nvcuvid.found ? r.nvcuvid.path : "not found"]);
  rows.push([
    "NVML",
    r.nvml.found ? `${r.nvml.path} (driver ${r.nvml.driverVersion}, ${r.nvml.gpus} GPUs)` : "not found",
  ]);
  const shm = r.shm.sizeBytes === null
    ? "cannot be read"
    : `${mib(r.shm.sizeBytes)} (${mib(r.shm.freeBytes ?? 0)} free); ring ${
      mib(r.shm.ringBytes)
    }: ${r.shm.ring.shape}`;
  rows.push([r.shm.path, shm]);
  rows.push([
    "cores",
    `${r.cores.online}${r.cores.cgroupLimit === null ? "" : ` (cgroup limit ${r.cores.cgroupLimit})`}`,
  ]);
  const lines = [alignTable(rows)];
  lines.push("", r.ok ? "the loader can run here" : "the loader cannot run here");
  for (const p of r.problems) {
    lines.push("", ...wrapLine(`${p.severity}: ${p.what}`, 110), ...wrapLine(`  fix: ${p.fix}`, 110));
  }
  return lines.join("\n");
}

function mib(bytes: number): string {
  return `${(bytes / 2 ** 20).toFixed(bytes < 2 ** 20 ? 2 : 0)} MiB`;
}
