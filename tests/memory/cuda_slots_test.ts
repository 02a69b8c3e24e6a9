/**
 * GPU slots against the libcuda/libnvcuvid test double: one device allocation exported with cuIpcGetMemHandle;
 * another process (the Python client's ctypes code) opens the handle and reads what this process wrote.
 */
import assert from "node:assert/strict";
import { CudaSlots } from "../../src/memory/cuda_slots.ts";
import { SlotRing } from "../../src/memory/slot_ring.ts";
import { unbalanced } from "../nvdec/double/build.ts";
import { useDouble } from "../nvdec/nvdec_helpers.ts";

const PYTHON_DIR = new URL("../../python", import.meta.url).pathname;

Deno.test("CUDA slots: written here, read by another process through the IPC handle; freed on dispose", async () => {
  const dbl = await useDouble();
  dbl.configure();
  const ring = new SlotRing(2, 5000, (size) => new CudaSlots(size, 0));
  const d = ring.memory.describe();
  assert.equal(d.kind, "cuda");
  if (d.kind !== "cuda") return;
  assert.equal(d.size, 2 * 8192);
  assert.match(d.handle, /^[0-9a-f]{128}$/);
  const payload = new Uint8Array(300).map((_, i) => (i * 7) & 0xff);
  ring.memory.write(ring.offset(1) + 5, payload);
  assert.deepEqual(ring.memory.read(ring.offset(1) + 5, 300), payload);
  assert.throws(() => ring.memory.write(d.size - 1, payload), /runs past the end/);
  const out = new Deno.Command("/usr/bin/python3", {
    args: [
      "-c",
      `import sys; sys.path.insert(0, ${JSON.stringify(PYTHON_DIR)})
from sluice._cuda import CudaMapping
m = CudaMapping(${JSON.stringify(d.handle)}, ${d.size}, 0)
print(list(m.read(${ring.offset(1) + 5}, 300)) == [(i * 7) & 255 for i in range(300)])
m.close()`,
    ],
    env: { SLUICE_LIBCUDA: dbl.path },
    stderr: "piped",
  }).outputSync();
  assert.equal(
    new TextDecoder().decode(out.stdout).trim(),
    "True",
    new TextDecoder().decode(out.stderr),
  );
  ring.close();
  assert.equal(dbl.liveAllocations(), 0);
  const log = dbl.log();
  assert.deepEqual(unbalanced(log), {});
  assert.ok(log.some((l) => l.startsWith("cuIpcGetMemHandle rc=0")));
});
