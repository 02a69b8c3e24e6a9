import assert from "node:assert/strict";
import { canDropPageCache, dropFromPageCache } from "../../src/prep/page_cache.ts";
import { SluiceError } from "../../src/errors.ts";

/** Resident bytes of `path` according to util-linux's `fincore` (an independent oracle), or null without it. */
async function fincoreBytes(path: string): Promise<number | null> {
  try {
    const out = await new Deno.Command("fincore", {
      args: ["--bytes", "--noheadings", "--output", "RES", path],
    })
      .output();
    if (!out.success) return null;
    return Number(new TextDecoder().decode(out.stdout).trim());
  } catch {
    return null;
  }
}

const hasFincore = (() => {
  try {
    return new Deno.Command("fincore", { args: ["--version"] }).outputSync().success;
  } catch {
    return false;
  }
})();

const skipReason = !canDropPageCache()
  ? "needs Linux and --allow-ffi"
  : !hasFincore
  ? "needs util-linux's fincore as the oracle"
  : "";
if (skipReason) console.log(`page_cache_test: skipping the eviction test: ${skipReason}`);

Deno.test({
  name: "dropFromPageCache evicts a file that was just written and read (fincore says so)",
  ignore: skipReason !== "",
  fn: async () => {
    const dir = await Deno.makeTempDir();
    try {
      const path = `${dir}/data.bin`;
      const bytes = new Uint8Array(8 << 20).map((_, i) => i * 7);
      await Deno.writeFile(path, bytes);
      await Deno.readFile(path);
      const before = await fincoreBytes(path);
      assert(before !== null && before > 0, `expected the fresh file to be cached, fincore says ${before}`);
      dropFromPageCache([path]);
      assert.equal(await fincoreBytes(path), 0);
      // Reading it again brings it back: the data are intact.
      assert.equal((await Deno.readFile(path)).length, bytes.length);
      assert((await fincoreBytes(path))! > 0);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("dropFromPageCache names a missing file", () => {
  assert.throws(
    () => dropFromPageCache(["/nonexistent/sluice-file"]),
    (e) => e instanceof SluiceError && e.message.includes("/nonexistent/sluice-file"),
  );
});
