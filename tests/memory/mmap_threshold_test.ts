import assert from "node:assert/strict";
import { fixMmapThreshold } from "../../src/memory/mmap_threshold.ts";

const PROBE = new URL("./fixtures/mmap_probe.ts", import.meta.url).pathname;
const linux = Deno.build.os === "linux";

/** Runs the probe in a fresh process (the threshold is process-wide) with glibc's own env setting removed. */
async function probe(pin: boolean): Promise<{ pinned: boolean; held: number; kept: number }> {
  const env = Deno.env.toObject();
  delete env.MALLOC_MMAP_THRESHOLD_;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", PROBE, ...(pin ? ["pin"] : [])],
    env,
    clearEnv: true,
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  return JSON.parse(new TextDecoder().decode(out.stdout));
}

Deno.test({
  name: "fixMmapThreshold: freed big buffers go back to the system (RSS), which glibc's default keeps",
  ignore: !linux,
  async fn() {
    const unpinned = await probe(false);
    const pinned = await probe(true);
    assert.equal(pinned.pinned, true);
    for (const r of [unpinned, pinned]) assert.ok(r.held > 60, `64 MiB touched, RSS grew ${r.held} MiB`);
    assert.ok(unpinned.kept > 48, `glibc default kept ${unpinned.kept} MiB of the freed 64 MiB`);
    assert.ok(pinned.kept < 16, `pinned threshold kept ${pinned.kept} MiB of the freed 64 MiB`);
  },
});

Deno.test({
  name: "fixMmapThreshold: idempotent in a process",
  ignore: !linux,
  fn() {
    const first = fixMmapThreshold();
    assert.equal(fixMmapThreshold(), first);
  },
});
