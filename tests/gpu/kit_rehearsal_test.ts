/**
 * The GPU kit's rehearsal (issue 32): the run that will first meet a real GPU, here against the ABI-level driver
 * double (tests/nvdec/double: libcuda, libnvcuvid and NVML in one library), so that the device minutes go to
 * measuring. A small kit is built (`scripts/gpu/build_kit.sh --small`: Deno xz-compressed, the system's FFmpeg
 * 5.1 libraries, the test media and dataset made here) and `scripts/gpu/run.sh` runs from a copy of what travels
 * to the GPU machine (the files git tracks or does not ignore: no node_modules, no caches, no built double).
 * Oracles: the CPU decode of the same packets (luma byte-identical), libswscale, `FrameWriter.place`, the synthetic
 * dataset's own labels and frame indices, and the report's fixed format (docs/gpu.md, "The report").
 */
import assert from "node:assert/strict";
import { buildDouble } from "../nvdec/double/build.ts";
import { hasFfmpegCliSync } from "../helpers/media.ts";

const root = new URL("../../", import.meta.url).pathname;
const SYSTEM_FFMPEG = "/usr/lib/x86_64-linux-gnu";
const ignore = !hasFfmpegCliSync() || !exists(`${SYSTEM_FFMPEG}/libavformat.so.59`) ||
  !exists("/usr/bin/python3");

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

async function sh(cmd: string, args: string[], env: Record<string, string> = {}, cwd = root) {
  const o = await new Deno.Command(cmd, { args, env, cwd, stdout: "piped", stderr: "piped" }).output();
  return { code: o.code, out: new TextDecoder().decode(o.stdout), err: new TextDecoder().decode(o.stderr) };
}

// deno-lint-ignore no-explicit-any
type Json = any;

/** Copies what the device tool sends (tracked files and untracked ones git does not ignore) to `dir`. */
async function copyTravelling(dir: string): Promise<void> {
  const files = (await sh("git", ["ls-files", "-co", "--exclude-standard", "-z"])).out.split("\0").filter(
    Boolean,
  );
  for (const f of files) {
    if (!exists(`${root}${f}`)) continue; // deleted in the work tree, not yet committed
    const to = `${dir}/${f}`;
    await Deno.mkdir(to.slice(0, to.lastIndexOf("/")), { recursive: true });
    await Deno.copyFile(`${root}${f}`, to);
    if ((await Deno.stat(`${root}${f}`)).mode! & 0o100) await Deno.chmod(to, 0o755);
  }
}

Deno.test({ name: "gpu kit: built small, rehearsed against the driver double", ignore }, async (t) => {
  const tmp = await Deno.makeTempDir({ prefix: "sluice-gpu-kit-" });
  try {
    const t0 = performance.now();
    const built = await sh("bash", [
      "scripts/gpu/build_kit.sh",
      "--out",
      `${tmp}/kit`,
      "--small",
      "--ffmpeg-libdir",
      SYSTEM_FFMPEG,
      "--xz-level",
      "0",
    ]);
    assert.equal(built.code, 0, built.err);
    const kit = JSON.parse(await Deno.readTextFile(`${tmp}/kit/kit.json`));
    assert.equal(kit.format, "sluice-gpu-kit/1");
    assert.ok(kit.travelBytes <= kit.travelLimitBytes && kit.kitBytes > 0 && kit.treeBytes > 0);
    const media = JSON.parse(await Deno.readTextFile(`${tmp}/kit/media/manifest.json`));
    assert.deepEqual(
      [...new Set(media.flatMap((m: Json) => m.roles))].sort(),
      [
        "bframes",
        "cache-create",
        "cache-display-area",
        "cache-reconfigure",
        "decode",
        "seek",
        "speed-large",
        "speed-small",
      ],
    );
    console.log(`small kit built in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    const double = await buildDouble();
    const driver = { SLUICE_LIBCUDA: double, SLUICE_LIBNVCUVID: double, SLUICE_LIBNVML: double };

    await t.step("the run, from a copy of what travels, reports every phase", async () => {
      await Deno.mkdir(`${tmp}/tree`);
      await copyTravelling(`${tmp}/tree`);
      const env = {
        ...driver,
        GPU_PYTHON: "/usr/bin/python3",
        GPU_SPEED_SECONDS: "0.3",
        GPU_LOADER_SECONDS: "1.5",
        GPU_PROFILE_SECONDS: "0.5",
        GPU_PROFILE_VARIANTS: "before,default",
        GPU_PROFILE_CONCURRENCY: "1,2",
        GPU_CACHE_ROUNDS: "2",
        GPU_NO_XZ: "1", // the unpack GPU machines without xz take
        OUT: `${tmp}/out`,
      };
      const t1 = performance.now();
      const run = await sh("bash", [`${tmp}/tree/scripts/gpu/run.sh`, `${tmp}/kit`], env, `${tmp}/tree`);
      const runSec = (performance.now() - t1) / 1000;
      const report: Json = JSON.parse(await Deno.readTextFile(`${tmp}/out/gpu-report.json`));
      const md = await Deno.readTextFile(`${tmp}/out/gpu-report.md`);
      const log = await Deno.readTextFile(`${tmp}/out/gpu-run.log`);
      const problems = report.phases.flatMap((p: Json) =>
        p.checks.filter((c: Json) => c.status === "fail").map((c: Json) => `${p.name}/${c.name}: ${c.reason}`)
          .concat(p.status === "timeout" || p.status === "crash" ? [`${p.name}: ${p.reason}`] : [])
      );
      assert.deepEqual(problems, [], `${run.err}\n${log.slice(-3000)}`);
      assert.equal(run.code, 0, run.err);
      console.log(`rehearsal run in ${runSec.toFixed(1)} s`);

      // The format: every phase, in order, finished; every check named with a status.
      assert.equal(report.format, "sluice-gpu-report/1");
      assert.equal(report.finished, true);
      const names = report.phases.map((p: Json) => p.name);
      assert.deepEqual(names, [
        "deno",
        "inventory",
        "decode",
        "kernels",
        "loader",
        "trainer",
        "speed-decoders",
        "speed-cache",
        "speed-loader",
        "speed-loader-profile",
      ]);
      for (const n of names) assert.ok(md.includes(`\n## ${n}: `), `the markdown has a section for ${n}`);
      assert.ok(md.includes("the ABI-level driver double"), "the report says it did not run on a GPU");
      const check = (phase: string, name: string): Json => {
        const c = report.phases.find((p: Json) => p.name === phase).checks.find((c: Json) => c.name === name);
        assert.ok(c, `${phase}/${name} is reported`);
        return c;
      };
      assert.equal(check("deno", "unpack Deno").figures.with, "python's lzma");

      // What is skipped here, and why: no nvidia-smi, and Debian's torch has no CUDA.
      const skipped = report.phases.flatMap((p: Json) =>
        p.checks.filter((c: Json) => c.status === "skip").map((c: Json) => `${p.name}/${c.name}`)
      );
      for (const s of skipped) {
        assert.ok(
          [
            "inventory/nvidia-smi",
            "trainer/CUDA IPC into a torch CUDA tensor",
            "trainer/served batches as torch CUDA tensors",
          ]
            .includes(s),
          `unexpected skip ${s}: ${JSON.stringify(check(s.split("/")[0], s.split("/")[1]))}`,
        );
      }
      assert.match(check("trainer", "served batches as torch CUDA tensors").reason ?? "has CUDA", /CUDA/);

      // The correctness phase saw what its oracles say: every frame's luma identical to the CPU's, the cache's reuse.
      for (const m of media.filter((m: Json) => m.roles.includes("decode"))) {
        const f = check("decode", `${m.codec} ${m.size}`).figures;
        assert.ok(
          f.frames > 0 && f.lumaIdentical === f.frames && f.chromaIdentical === f.frames,
          JSON.stringify(f),
        );
      }
      assert.deepEqual(check("decode", "decoder cache").figures.steps.map((s: Json) => s.created), [
        1,
        0,
        0,
        1,
        0,
      ]);
      assert.ok(
        check("loader", "batches resized 112x112: labels and frame indices read back").figures.readBack > 0,
      );
      assert.equal(check("trainer", "served NVDEC feed, 2 epochs, BTHWC uint8").figures.copiedBytes, 0);

      // Speed: one row per decoder count and clip, NVML's decoder utilisation read (the double's model).
      const rows = report.phases.find((p: Json) => p.name === "speed-decoders").tables.flatMap((t: Json) =>
        t.rows
      );
      assert.deepEqual(rows.map((r: Json) => r[0]), [1, 2, 4, 7, 14, 1, 2, 4, 7, 14]);
      assert.ok(rows.every((r: Json) => r[1] > 0 && typeof r[3] === "number"), JSON.stringify(rows));
      const cache = check("speed-cache", "decoder create vs reuse vs reconfigure").figures;
      assert.equal(cache.decodersCreated, 2);
      assert.ok(
        check("speed-loader", "loader, 4 clips per video, spread, NVDEC decode (device batches)").figures
          .clipsPerSecond > 0,
      );
      // The profile: each variant in its own process, each row with its NVDEC steps. The double counts the calls:
      // before, every clip queried the caps and allocated its device buffers; the defaults keep them.
      const steps = (variant: string, n: number) =>
        check("speed-loader-profile", `NVDEC ${variant}, ${n} decode thread${n > 1 ? "s" : ""}`).figures
          .nvdecSteps;
      for (const n of [1, 2]) {
        const before = steps("before", n), now = steps("default", n);
        assert.ok(before.cuvidDecodePicture[2] > 0 && now.cuvidDecodePicture[2] > 0, JSON.stringify(now));
        // per clip counted (the profile's count takes in a few clips the measured time did not decode)
        assert.ok(before.cuvidGetDecoderCaps[2] > 0.9, JSON.stringify(before));
        assert.ok(before.cuMemAlloc[2] > 1.8, JSON.stringify(before)); // the decoded frames, the kept frame
        assert.ok(
          (now.cuvidGetDecoderCaps?.[2] ?? 0) < 0.5 && (now.cuMemAlloc?.[2] ?? 0) < 0.5,
          JSON.stringify(now),
        );
      }
      assert.ok(check("speed-loader-profile", "CPU decode (2 cores), 64 clips per video") !== undefined);
    });

    await t.step(
      "a phase past its time limit is stopped; the phases before and after it are reported",
      async () => {
        const env = {
          ...driver,
          GPU_PYTHON: "/usr/bin/python3",
          GPU_HANG: "decode",
          GPU_LIMITS: "decode=4",
          OUT: `${tmp}/out`,
        };
        const t0 = performance.now();
        const run = await sh(
          "bash",
          ["scripts/gpu/run.sh", `${tmp}/kit`, "inventory", "decode", "kernels"],
          env,
        );
        assert.equal(run.code, 1, "a phase that timed out fails the run");
        assert.ok((performance.now() - t0) / 1000 < 60, "the hung phase did not hold the run");
        const report = JSON.parse(await Deno.readTextFile(`${tmp}/out/gpu-report.json`));
        const by = Object.fromEntries(report.phases.map((p: Json) => [p.name, p]));
        assert.equal(by.decode.status, "timeout");
        assert.equal(by.decode.reason, "stopped at its 4 s limit during 'hang (GPU_HANG)'");
        assert.equal(by.inventory.status, "pass");
        assert.equal(by.kernels.status, "pass", "the run went on after the hung phase");
        assert.equal(report.finished, true);
      },
    );

    await t.step(
      "without libnvcuvid the CUDA-only phases run and the report says why NVDEC could not",
      async () => {
        const missing = `${tmp}/no-video-capability/libnvcuvid.so.1`;
        const env = {
          ...driver,
          SLUICE_LIBNVCUVID: missing,
          GPU_PYTHON: "/usr/bin/python3",
          OUT: `${tmp}/out-nv`,
        };
        const phases = ["inventory", "decode", "kernels", "trainer"];
        const run = await sh("bash", ["scripts/gpu/run.sh", `${tmp}/kit`, ...phases], env);
        assert.equal(run.code, 1, "the missing library fails the inventory");
        const report = JSON.parse(await Deno.readTextFile(`${tmp}/out-nv/gpu-report.json`));
        const checks = Object.fromEntries(
          report.phases.flatMap((p: Json) => p.checks.map((c: Json) => [`${p.name}/${c.name}`, c])),
        );
        assert.equal(checks["inventory/libraries"].status, "fail");
        assert.match(checks["inventory/libraries"].reason, /libnvcuvid\.so\.1 .*video. capability/);
        assert.equal(checks["inventory/decoder caps"].status, "skip");
        const decode = report.phases.find((p: Json) => p.name === "decode");
        assert.equal(decode.status, "skip");
        assert.ok(decode.checks.every((c: Json) => c.status === "skip" && c.reason.includes(missing)));
        for (const k of ["kernels/NV12 to RGB kernel", "kernels/clip kernel", "kernels/device slots"]) {
          assert.equal(checks[k].status, "pass", `${k} needs only the CUDA driver`);
        }
        assert.equal(checks["trainer/CUDA IPC into this process"].status, "pass");
        assert.match(checks["trainer/served NVDEC feed, 2 epochs, BTHWC uint8"].reason, /^no NVDEC: /);
      },
    );
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});
