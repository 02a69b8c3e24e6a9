import assert from "node:assert/strict";
import { pageAlign, SharedMemory } from "../../src/serve/shm.ts";
import { InvalidArgumentError } from "../../src/errors.ts";

function shmListing(): string[] {
  return [...Deno.readDirSync("/dev/shm")].map((e) => e.name).sort();
}

Deno.test("a memfd is shared with another process through /proc/<pid>/fd and never appears in /dev/shm", () => {
  const before = shmListing();
  const m = new SharedMemory("sluice-test-shm", 10_000);
  try {
    assert.equal(m.size, 12_288);
    assert.equal(Deno.readLinkSync(`/proc/self/fd/${m.fd}`), "/memfd:sluice-test-shm (deleted)");
    m.bytes.set([1, 2, 3], 100);
    // Another process maps the same pages: it sees our bytes and we see its write.
    const out = new Deno.Command("/usr/bin/python3", {
      args: [
        "-c",
        `import mmap; f = open('/proc/${Deno.pid}/fd/${m.fd}', 'r+b'); mm = mmap.mmap(f.fileno(), 0); ` +
        `print(len(mm), list(mm[100:103])); mm[5000] = 77`,
      ],
    }).outputSync();
    assert.equal(new TextDecoder().decode(out.stdout).trim(), "12288 [1, 2, 3]");
    assert.equal(m.bytes[5000], 77);
    assert.deepEqual(shmListing(), before);
  } finally {
    m.close();
  }
  assert.ok(m.closed);
  assert.throws(() => m.bytes, /closed/);
  m.close(); // idempotent
});

Deno.test("the descriptor is close-on-exec: a child process does not inherit it", () => {
  using m = new SharedMemory("sluice-test-cloexec", 4096);
  const out = new Deno.Command("ls", { args: ["-l", "/proc/self/fd"] }).outputSync();
  assert.ok(!new TextDecoder().decode(out.stdout).includes("sluice-test-cloexec"));
  assert.equal(m.size, 4096);
});

Deno.test("sizes are checked and rounded to pages", () => {
  assert.throws(() => new SharedMemory("x", 0), InvalidArgumentError);
  assert.throws(() => new SharedMemory("x", 1.5), InvalidArgumentError);
  assert.equal(pageAlign(1), 4096);
  assert.equal(pageAlign(8192), 8192);
});
