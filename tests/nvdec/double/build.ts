/**
 * Builds the libcuda/libnvcuvid/NVML test double (one shared object exporting the three APIs) with `cc` at test time,
 * cached by source hash in the temp dir, and opens its control functions.
 * @module
 */
import { cstr } from "../../../ffi/cstring.ts";

const here = new URL(".", import.meta.url).pathname;
const SOURCES = ["nvdouble.h", "cuda_double.c", "nvcuvid_double.c", "nvml_double.c"];

async function sourceHash(): Promise<string> {
  const text = SOURCES.map((f) => Deno.readTextFileSync(here + f)).join("\0");
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].slice(0, 8).map((b) => b.toString(16).padStart(2, "0")).join("");
}

function run(cmd: string, args: string[]): string {
  const out = new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).outputSync();
  const text = new TextDecoder().decode(out.stdout);
  if (!out.success) throw new Error(`${cmd} ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  return text.trim();
}

/** Path of the built double (built on first call in this process). */
export async function buildDouble(): Promise<string> {
  const dir = `${Deno.env.get("TMPDIR") ?? "/tmp"}/sluice-nvdouble-${await sourceHash()}`;
  const lib = `${dir}/libnvdouble.so`;
  try {
    Deno.statSync(lib);
    return lib;
  } catch { /* build below */ }
  Deno.mkdirSync(dir, { recursive: true });
  const flags = run("pkg-config", ["--cflags", "--libs", "libavcodec", "libavutil", "libswscale"]).split(
    /\s+/,
  );
  const tmp = `${lib}.${Deno.pid}.tmp`;
  run("cc", [
    "-shared",
    "-fPIC",
    "-O1",
    "-o",
    tmp,
    `${here}cuda_double.c`,
    `${here}nvcuvid_double.c`,
    `${here}nvml_double.c`,
    ...flags,
  ]);
  Deno.renameSync(tmp, lib);
  return lib;
}

/** Builds and runs the layout probe: the double's own struct sizes and offsets. */
export function probeLayouts(): Record<string, Record<string, number>> {
  const exe = `${Deno.makeTempDirSync()}/layout_probe`;
  try {
    run("cc", ["-o", exe, `${here}layout_probe.c`]);
    return JSON.parse(run(exe, []));
  } finally {
    Deno.removeSync(exe.slice(0, exe.lastIndexOf("/")), { recursive: true });
  }
}

const CONTROL = {
  nvdouble_configure: { parameters: ["buffer", "buffer", "i32", "u32", "u32", "u32"], result: "i32" },
  nvdouble_live_allocations: { parameters: [], result: "i32" },
  nvdouble_copied_bytes: { parameters: ["i32"], result: "u64" },
  nvdouble_primary_retains: { parameters: [], result: "i32" },
} as const;

/** Bytes the double copied, per direction (process-wide, since the last `configure`). */
export interface CopiedBytes {
  htod: number;
  dtoh: number;
  dtod: number;
}

/** Settings of one test's double. */
export interface DoubleConfig {
  /** Fault spec, e.g. "cuvidCreateDecoder:1,cuMemAlloc_v2:3". */
  fail?: string;
  devices?: number;
  maxWidth?: number;
  maxHeight?: number;
  nvdecs?: number;
}

/** The double, its control functions, and its call log for one test. */
export class NvDouble {
  readonly path: string;
  readonly logPath: string;
  readonly #lib: Deno.DynamicLibrary<typeof CONTROL>;
  constructor(path: string) {
    this.path = path;
    this.logPath = Deno.makeTempFileSync({ suffix: ".nvdouble.log" });
    this.#lib = Deno.dlopen(path, CONTROL);
  }
  /** Resets this thread's double state (its allocations, the byte counters), truncates the log. */
  configure(c: DoubleConfig = {}): void {
    this.#lib.symbols.nvdouble_configure(
      cstr(c.fail ?? ""),
      cstr(this.logPath),
      c.devices ?? 1,
      c.maxWidth ?? 4096,
      c.maxHeight ?? 4096,
      c.nvdecs ?? 3,
    );
  }
  liveAllocations(): number {
    return this.#lib.symbols.nvdouble_live_allocations();
  }
  /** Bytes copied per direction since the last {@link configure}, in every thread. */
  copiedBytes(): CopiedBytes {
    const n = (d: number) => Number(this.#lib.symbols.nvdouble_copied_bytes(d));
    return { htod: n(0), dtoh: n(1), dtod: n(2) };
  }
  /** Primary-context retains held now, over every thread (the primary context is one per device and process). */
  primaryRetains(): number {
    return this.#lib.symbols.nvdouble_primary_retains();
  }
  log(): string[] {
    return Deno.readTextFileSync(this.logPath).split("\n").filter((l) => l !== "");
  }
  close(): void {
    this.#lib.close();
    Deno.removeSync(this.logPath);
  }
}

const PAIRS: [string, string][] = [
  ["cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease_v2"],
  ["cuCtxPushCurrent_v2", "cuCtxPopCurrent_v2"],
  ["cuMemAlloc_v2", "cuMemFree_v2"],
  ["cuMemAllocHost_v2", "cuMemFreeHost"],
  ["cuStreamCreate", "cuStreamDestroy_v2"],
  ["cuModuleLoadData", "cuModuleUnload"],
  ["cuvidCreateVideoParser", "cuvidDestroyVideoParser"],
  ["cuvidCreateDecoder", "cuvidDestroyDecoder"],
  ["cuvidMapVideoFrame64", "cuvidUnmapVideoFrame64"],
  ["cuIpcOpenMemHandle_v2", "cuIpcCloseMemHandle"],
];

/** Successful acquisitions minus releases per resource kind, from the call log (all zero when balanced). */
export function unbalanced(log: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [take, give] of PAIRS) {
    const ok = (name: string) => log.filter((l) => l.startsWith(`${name} rc=0`)).length;
    const d = ok(take) - ok(give);
    if (d !== 0) out[take] = d;
  }
  return out;
}
