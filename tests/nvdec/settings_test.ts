/**
 * The driver settings read from the environment (`NVDEC_SETTINGS`, src/cuda/driver.ts): a scheduling set on the
 * primary context when sluice retains it first, none by default; a misspelt value named.
 * Each case runs in a child process (the settings are read once per thread, at import).
 */
import assert from "node:assert/strict";
import { useDouble } from "./nvdec_helpers.ts";

const root = new URL("../../", import.meta.url).pathname;

/** Runs `code` (importing src/cuda/driver.ts as `d`) in a child with `env`; its stdout, stderr and the double's log. */
async function child(code: string, env: Record<string, string>) {
  const log = await Deno.makeTempFile({ suffix: ".nvdouble.log" });
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["eval", `import * as d from "${root}src/cuda/driver.ts";\n${code}`],
      env: { ...env, NVDOUBLE_LOG: log, NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = (b: Uint8Array) => new TextDecoder().decode(b);
    return {
      code: out.code,
      out: text(out.stdout),
      err: text(out.stderr),
      log: await Deno.readTextFile(log),
    };
  } finally {
    await Deno.remove(log);
  }
}

const retain =
  `const dc = d.acquireContext(0); console.log(JSON.stringify(d.contextSchedule(0))); d.releaseContext(dc);`;

Deno.test("nvdec settings: SLUICE_CUDA_SCHED sets the primary context's waits; the default leaves the driver's", async () => {
  await useDouble();
  const driver = {
    SLUICE_LIBCUDA: Deno.env.get("SLUICE_LIBCUDA")!,
    SLUICE_LIBNVCUVID: Deno.env.get("SLUICE_LIBNVCUVID")!,
  };
  const blocking = await child(retain, { ...driver, SLUICE_CUDA_SCHED: "blocking" });
  assert.equal(blocking.code, 0, blocking.err);
  assert.match(blocking.log, /^cuDevicePrimaryCtxSetFlags_v2 rc=0 h=dev0 flags=4$/m); // CU_CTX_SCHED_BLOCKING_SYNC
  assert.deepEqual(JSON.parse(blocking.out), { flags: 4, active: true, schedule: "blocking" });
  const auto = await child(retain, driver);
  assert.equal(auto.code, 0, auto.err);
  assert.doesNotMatch(auto.log, /cuDevicePrimaryCtxSetFlags_v2/);
  assert.equal(JSON.parse(auto.out).schedule, "auto");
  const wrong = await child(retain, { ...driver, SLUICE_CUDA_SCHED: "blocked" });
  assert.notEqual(wrong.code, 0);
  assert.match(wrong.err, /SLUICE_CUDA_SCHED=blocked: expected one of auto, spin, yield, blocking/);
});
