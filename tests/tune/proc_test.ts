// The one /proc memory reader (procRss) and the tree sums built on it, against ps(1) as the oracle.
import assert from "node:assert/strict";
import { processTree, procRss, treePeakRss, treeRss } from "../../src/tune/proc.ts";

/** Resident set size of `pid` in bytes, as ps(1) reports it. */
function psRss(pid: number): number {
  const out = new Deno.Command("ps", { args: ["-o", "rss=", "-p", String(pid)] }).outputSync();
  return Number(new TextDecoder().decode(out.stdout).trim()) * 1024;
}

/** Waits until `pid` has `n` processes in its tree (a shell has started its children). */
async function treeOf(pid: number, n: number): Promise<number[]> {
  for (let i = 0; i < 200; i++) {
    const tree = processTree(pid);
    if (tree.length >= n) return tree;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`the tree of ${pid} never reached ${n} processes`);
}

Deno.test({
  name: "proc: procRss reads what ps reports; the tree sums add it up over children",
  ignore: Deno.build.os !== "linux",
  fn: async () => {
    // A shell with two sleeping children: their memory holds still while it is read twice.
    const child = new Deno.Command("sh", { args: ["-c", "sleep 30 & sleep 30 & wait"] }).spawn();
    try {
      const tree = await treeOf(child.pid, 3);
      assert.equal(tree.length, 3);
      for (const p of tree) assert.equal(procRss(p, "VmRSS"), psRss(p), `pid ${p}`);
      assert.equal(treeRss(child.pid), tree.reduce((sum, p) => sum + psRss(p), 0));
      const peak = treePeakRss(child.pid)!;
      assert.equal(peak, tree.reduce((sum, p) => sum + procRss(p, "VmHWM")!, 0));
      assert.ok(peak >= treeRss(child.pid)!, "a peak is never below the resident size");
      assert.ok(procRss("self", "VmHWM")! >= procRss("self", "VmRSS")! && procRss("self", "VmRSS")! > 0);
    } finally {
      child.kill("SIGKILL");
      await child.status;
    }
  },
});

Deno.test("proc: an unknown or ended process reads as null, not 0", async () => {
  assert.equal(procRss(undefined, "VmRSS"), null);
  const child = new Deno.Command("true").spawn();
  await child.status;
  assert.equal(procRss(child.pid, "VmRSS"), null);
  assert.equal(treeRss(child.pid), null);
  assert.equal(treePeakRss(child.pid), null);
});
