/**
 * The speed-loader-profile phase: where the NVDEC loader's time goes, and which of the candidate remedies moves it,
 * on the hardware, in one run. The "64 clips per video" workload of speed-loader is run:
 * - on the CPU (every core), the baseline every NVDEC row's `ratioToCpu` is against;
 * - with NVDEC under each variant (`VARIANTS`: the driver settings `src/cuda/driver.ts` reads, `NVDEC_SETTINGS`),
 *   each in a process of its own (the primary context's scheduling is fixed once a process retains it), at each of
 *   its decode concurrencies, with the loader's profile on: clips/s, the process's CPU per clip and cores busy, the
 *   primary context's scheduling as the driver reports it, and per clip the wall and CPU milliseconds of each NVDEC
 *   step on the decode threads (`src/nvdec/step_times.ts`: parser, caps, decoder configure, decode, map, kernels,
 *   syncs, allocations).
 *
 * `GPU_PROFILE_VARIANTS` (comma-separated names) picks variants, `GPU_PROFILE_SECONDS` (default 3) the time box of a
 * row, `GPU_PROFILE_CONCURRENCY` (comma-separated) overrides every variant's decode concurrencies.
 * @module
 */
import { type LoaderOptions, videoClassificationLoader } from "../../src/loader/loader.ts";
import { contextSchedule } from "../../src/cuda/driver.ts";
import { nvdecEngines } from "../../src/nvdec/available.ts";
import { DATASET, nvdecMissing, setting } from "./kit.ts";
import { pass, type PhaseResult, round, skip } from "./result.ts";

/** A variant: its environment (over the defaults) and the decode concurrencies it runs ("engines": NVDEC's count). */
const VARIANTS: Record<
  string,
  { env: Record<string, string>; concurrency: (number | "engines")[]; what: string }
> = {
  before: {
    env: { SLUICE_NVDEC_REUSE: "off", SLUICE_NVDEC_STREAM: "legacy", SLUICE_CUDA_SCHED: "auto" },
    concurrency: [1, "engines"],
    what:
      "as before nv35: caps query and device buffers per clip, legacy default stream, driver's scheduling",
  },
  default: {
    env: {},
    concurrency: [1, 2, 4, "engines"],
    what: "the defaults: reuse, a stream per thread, driver's scheduling",
  },
  blocking: {
    env: { SLUICE_CUDA_SCHED: "blocking" },
    concurrency: [1, "engines"],
    what: "defaults with blocking-sync waits (a waiting thread sleeps)",
  },
  yield: {
    env: { SLUICE_CUDA_SCHED: "yield" },
    concurrency: ["engines"],
    what: "defaults with yielding waits",
  },
  "legacy-stream": {
    env: { SLUICE_NVDEC_STREAM: "legacy" },
    concurrency: ["engines"],
    what: "defaults but the legacy default stream (threads wait for each other's GPU work)",
  },
  "no-reuse": {
    env: { SLUICE_NVDEC_REUSE: "off" },
    concurrency: ["engines"],
    what: "defaults but caps query and device buffers per clip",
  },
};

/** The workload: speed-loader's "64 clips per video". */
function workload(decode: "cpu" | "nvdec", concurrency?: number): LoaderOptions {
  return {
    dataset: DATASET,
    batchSize: 8,
    clip: { numFrames: 16, width: 112, height: 112 },
    sampler: { seed: 1, clipsPerVideo: 64 },
    concurrency: { demux: 4, ...(concurrency === undefined ? {} : { decode: concurrency }) },
    decode,
    ...(decode === "nvdec" ? { slots: 4 } : {}),
  };
}

/** CPU seconds this process used so far (user + system, every thread), from /proc. */
function cpuSeconds(): number {
  const stat = Deno.readTextFileSync("/proc/self/stat");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(f[11]) + Number(f[12])) / 100;
}

/** Clips/s, CPU and the loader's profile over a time box after the first batch (speed-loader's measure). */
async function measure(opts: LoaderOptions, seconds: number) {
  await using loader = await videoClassificationLoader({ log: () => {}, profile: true, ...opts });
  let clips = 0, t0 = 0, cpu0 = 0, batches = 0, schedule: string | null = null;
  const full = () => batches > 1 && performance.now() - t0 > seconds * 1000;
  while (!full()) {
    for await (using b of loader) {
      if (batches++ === 0) {
        t0 = performance.now();
        cpu0 = cpuSeconds();
        if (opts.decode === "nvdec") schedule = scheduleNow();
        continue;
      }
      clips += b.clips.length;
      if (full()) break;
    }
  }
  const wall = (performance.now() - t0) / 1000, cpu = cpuSeconds() - cpu0;
  const s = loader.stats();
  const p = s.profile!;
  return {
    clipsPerSecond: round(clips / wall, 1),
    cpuMsPerClip: round((1000 * cpu) / Math.max(1, clips), 2),
    coresBusy: round(cpu / wall, 2),
    clips,
    bottleneck: s.pipeline.bottleneck ?? null,
    schedule,
    workerCpuMsPerClip: round(p.workerMsPerClip, 2),
    mainCpuMsPerClip: round(p.mainMsPerClip, 2),
    phases: Object.fromEntries(
      p.phases.filter((x) => x.msPerClip > 0).map((x) => [x.phase, round(x.msPerClip, 2)]),
    ),
    // per clip: [wall ms, CPU ms, calls], the most wall first
    nvdecSteps: Object.fromEntries(
      p.nvdecSteps.sort((a, b) => b.wallMsPerClip - a.wallMsPerClip).map((x) => [
        x.step,
        [round(x.wallMsPerClip, 3), round(x.cpuMsPerClip, 3), round(x.callsPerClip, 2)],
      ]),
    ),
  };
}

/** The primary context's scheduling as the driver reports it while the loader's decode threads hold it. */
function scheduleNow(): string {
  try {
    const s = contextSchedule();
    return s.active ? s.schedule : `${s.schedule} (inactive)`;
  } catch (e) {
    return `unknown: ${e instanceof Error ? e.message.split("\n")[0] : e}`;
  }
}

/** The phase (parent process): the CPU baseline, then each variant in a child process. */
export async function speedLoaderProfile(r: PhaseResult): Promise<void> {
  const child = Deno.env.get("GPU_PROFILE_CHILD");
  if (child !== undefined) return await variant(r, child);
  const missing = nvdecMissing();
  const seconds = setting("GPU_PROFILE_SECONDS", 3);
  const cpu = await r.check(
    `CPU decode (${navigator.hardwareConcurrency} cores), 64 clips per video`,
    async () => {
      return pass(await measure(workload("cpu"), seconds));
    },
  );
  const base = cpu.status === "pass" ? cpu.figures!.clipsPerSecond as number : NaN;
  const names = Deno.env.get("GPU_PROFILE_VARIANTS")?.split(",").map((s) => s.trim()).filter(Boolean) ??
    Object.keys(VARIANTS);
  const rows: (string | number | null)[][] = [];
  for (const name of names) {
    const v = VARIANTS[name];
    if (v === undefined) {
      await r.check(
        `variant ${name}`,
        () => skip(`unknown variant (known: ${Object.keys(VARIANTS).join(", ")})`),
      );
      continue;
    }
    if (missing) {
      await r.check(`NVDEC ${name}`, () => skip(missing));
      continue;
    }
    // The child appends its checks to this phase's result file, and its figures (one JSON line a row) to `rowsAt`.
    const rowsAt = await Deno.makeTempFile({ prefix: "sluice-profile-" });
    try {
      const out = await new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "--allow-all",
          "--no-lock",
          new URL("./phases.ts", import.meta.url).pathname,
          "speed-loader-profile",
        ],
        env: { ...v.env, GPU_PROFILE_CHILD: name, GPU_PROFILE_ROWS: rowsAt, GPU_PROFILE_BASE: String(base) },
        stdout: "inherit",
        stderr: "inherit",
      }).output();
      if (!out.success) {
        await r.check(`NVDEC ${name}: child process`, () => ({ status: "fail", reason: `exit ${out.code}` }));
      }
      for (const line of (await Deno.readTextFile(rowsAt)).split("\n").filter(Boolean)) {
        const x = JSON.parse(line);
        rows.push([
          name,
          x.concurrency,
          x.clipsPerSecond,
          x.ratioToCpu,
          x.cpuMsPerClip,
          x.coresBusy,
          x.schedule,
          x.top,
        ]);
      }
    } finally {
      await Deno.remove(rowsAt).catch(() => {});
    }
    r.table({
      title: `NVDEC loader by variant and decode concurrency (64 clips per video; CPU ${base} clips/s)`,
      columns: [
        "variant",
        "decode threads",
        "clips/s",
        "× CPU",
        "CPU ms/clip",
        "cores busy",
        "schedule",
        "top steps (wall/CPU ms per clip)",
      ],
      rows,
    });
  }
}

/** One variant (child process): its rows, each a check with the step breakdown. */
async function variant(r: PhaseResult, name: string): Promise<void> {
  const v = VARIANTS[name];
  const seconds = setting("GPU_PROFILE_SECONDS", 3);
  const base = Number(Deno.env.get("GPU_PROFILE_BASE"));
  const engines = nvdecEngines() ?? 4;
  const override = Deno.env.get("GPU_PROFILE_CONCURRENCY")?.split(",").map(Number);
  const levels = [...new Set(override ?? v.concurrency.map((c) => (c === "engines" ? engines : c)))];
  for (const n of levels) {
    await r.check(`NVDEC ${name}, ${n} decode thread${n > 1 ? "s" : ""}`, async () => {
      const m = await measure(workload("nvdec", n), seconds);
      const ratioToCpu = Number.isFinite(base) && base > 0 ? round(m.clipsPerSecond / base, 2) : null;
      const top = Object.entries(m.nvdecSteps).slice(0, 4).map(([k, [w, c]]) => `${k} ${w}/${c}`).join("; ");
      const row = { concurrency: n, ...m, ratioToCpu, top, env: v.env, variant: v.what };
      const at = Deno.env.get("GPU_PROFILE_ROWS");
      if (at) await Deno.writeTextFile(at, JSON.stringify(row) + "\n", { append: true });
      return pass({ ...row, top: undefined });
    });
  }
}
