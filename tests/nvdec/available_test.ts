import assert from "node:assert/strict";

Deno.test("nvdec: without a driver, nvdecAvailable() returns { ok: false, reason } in one line", async () => {
  const code =
    `import { nvdecAvailable } from "${new URL("../../src/nvdec/available.ts", import.meta.url).href}";` +
    `console.log(JSON.stringify(nvdecAvailable()));`;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--quiet", code],
    env: { SLUICE_LIBCUDA: "/nonexistent/libcuda.so.1", NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  const r = JSON.parse(new TextDecoder().decode(out.stdout));
  assert.equal(r.ok, false);
  assert.match(r.reason, /SLUICE_LIBCUDA=\/nonexistent\/libcuda\.so\.1 does not name a file/);
  assert.ok(!r.reason.includes("\n"));
});
