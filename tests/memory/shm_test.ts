import assert from "node:assert/strict";
import { pageAlign, SharedMemory } from "../../src/memory/shm.ts";
import { WorkerPool } from "../../src/pipeline/worker_pool.ts";
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

Deno.test("a Worker writes into the mapping by address: the bytes another process reads are the Worker's", async () => {
  using m = new SharedMemory("sluice-test-workers", 3 * 4096);
  await using pool = new WorkerPool(new URL("./fixtures/slot_writer.ts", import.meta.url), { size: 2 });
  // two Workers fill two slots; nothing is posted back but the byte count
  const wrote = await Promise.all([
    pool.call<number>("fill", [m.address + 4096n, 4096, 1]),
    pool.call<number>("fill", [m.address + 8192n, 100, 2]),
  ]);
  assert.deepEqual(wrote, [4096, 100]);
  const out = new Deno.Command("/usr/bin/python3", {
    args: [
      "-c",
      `import mmap; f = open('/proc/${Deno.pid}/fd/${m.fd}', 'rb'); mm = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
print(all(mm[4096 + i] == (i * 31 + 1) & 255 for i in range(4096)), all(mm[8192 + i] == (i * 31 + 2) & 255 for i in range(100)), mm[8192 + 100], mm[0])`,
    ],
  }).outputSync();
  assert.equal(new TextDecoder().decode(out.stdout).trim(), "True True 0 0");
});

Deno.test("a write after close (a Worker still inside an FFI call, a stale view) lands in private memory, never crashes", () => {
  // In a child: without the guard the process dies of SIGSEGV.
  const code = `
    import { SharedMemory, viewAt } from "${new URL("../../src/memory/shm.ts", import.meta.url).href}";
    const m = new SharedMemory("sluice-test-late", 3 * 4096);
    const address = m.address, fd = m.fd;
    m.bytes.fill(9);
    m.close();
    const late = viewAt(address, 3 * 4096);
    console.log(late[0], late[12287]); // the memfd's pages are gone from here: zero pages
    late.fill(7); // a late writer
    let open = true;
    try { Deno.readLinkSync("/proc/self/fd/" + fd); } catch { open = false; }
    const maps = Deno.readTextFileSync("/proc/self/maps").includes("sluice-test-late");
    console.log("survived", late[5], open, maps);
  `;
  const out = new Deno.Command(Deno.execPath(), { args: ["eval", "--no-check", code] }).outputSync();
  const text = new TextDecoder().decode(out.stdout).trim();
  assert.equal(out.code, 0, `${text}\n${new TextDecoder().decode(out.stderr)}`);
  assert.equal(text, "0 0\nsurvived 7 false false"); // the memfd: neither mapped nor open here any more
});
