/**
 * bench/RESULTS.md is written by bench/compare.ts, a CPU benchmark; its GPU sections come from the GPU kit's
 * reports (scripts/gpu) and must survive a rerun of the CPU benchmark, which cannot measure them again.
 */
import assert from "node:assert/strict";
import { keepGpuSections } from "../../bench/compare.ts";

Deno.test("compare: a rerun keeps the GPU sections of the previous RESULTS.md, and only those", () => {
  const previous = "# sluice side by side\n\nold run\n\n## Summary over the shapes\n\nold table\n\n" +
    "## GPU (NVDEC): first run\n\nH100 figures\n\n### speed\n\nrows\n\n## GPU (NVDEC): H200\n\nmore\n";
  const fresh = "# sluice side by side\n\nnew run\n\n## Summary over the shapes\n\nnew table\n";
  assert.equal(
    keepGpuSections(fresh, previous),
    fresh +
      "\n## GPU (NVDEC): first run\n\nH100 figures\n\n### speed\n\nrows\n\n## GPU (NVDEC): H200\n\nmore\n",
  );
  assert.equal(keepGpuSections(fresh, "# sluice side by side\n\n## Summary over the shapes\n"), fresh);
  assert.equal(keepGpuSections(fresh, ""), fresh);
});
