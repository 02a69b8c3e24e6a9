import assert from "node:assert/strict";
import {
  END_OF_ARCHIVE,
  memberHeader,
  padding,
  parseHeader,
  type TarEntry,
  walkTar,
} from "../../../src/dataset/shards/tar.ts";
import { ShardError } from "../../../src/errors.ts";

const enc = new TextEncoder();

/** An archive of `members` built with memberHeader, as pack writes it. */
function archive(members: [string, Uint8Array][]): Uint8Array {
  const parts: Uint8Array[] = [];
  for (const [name, data] of members) {
    parts.push(memberHeader(name, data.length), data, new Uint8Array(padding(data.length)));
  }
  parts.push(END_OF_ARCHIVE);
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

const memory = (bytes: Uint8Array) => ({
  size: bytes.length,
  read: (o: number, n: number) => bytes.subarray(o, Math.min(bytes.length, o + n)),
});

const MEMBERS: [string, Uint8Array][] = [
  ["a/clip0.mp4", enc.encode("x".repeat(700))],
  ["a/clip0.json", enc.encode('{"label":1}')],
  ["deep/".repeat(30) + "clip1.mp4", enc.encode("y".repeat(512))], // 155-byte prefix split
  ["n".repeat(120) + ".mp4", enc.encode("z")], // no slash to split at: PAX path
  ["ü/ñ.json", new Uint8Array(0)],
];

Deno.test("tar: Python's tarfile and GNU tar read what memberHeader writes (names, sizes, contents)", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/t.tar`;
    await Deno.writeFile(path, archive(MEMBERS));
    const py = await new Deno.Command("/usr/bin/python3", {
      args: [
        "-c",
        `import tarfile,json,sys
t = tarfile.open(sys.argv[1])
print(json.dumps([[m.name, m.size, t.extractfile(m).read().decode()] for m in t.getmembers()]))`,
        path,
      ],
    }).output();
    assert.ok(py.success, new TextDecoder().decode(py.stderr));
    const dec = new TextDecoder();
    assert.deepEqual(
      JSON.parse(dec.decode(py.stdout)),
      MEMBERS.map(([n, d]) => [n, d.length, dec.decode(d)]),
    );
    const tar = await new Deno.Command("tar", { args: ["tf", path] }).output();
    assert.deepEqual(dec.decode(tar.stdout).trim().split("\n"), MEMBERS.map(([n]) => n));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("tar: walkTar finds every member where it lies", () => {
  const bytes = archive(MEMBERS);
  const entries = walkTar(memory(bytes), "t.tar");
  assert.deepEqual(entries.map((e) => e.name), MEMBERS.map(([n]) => n));
  for (const [i, e] of entries.entries()) {
    assert.deepEqual(bytes.subarray(e.offset, e.offset + e.size), MEMBERS[i][1]);
  }
  assert.equal(entries[3].offset - entries[3].header, 3 * 512); // PAX header, its record, then the ustar header
});

Deno.test("tar: a flipped header byte fails the header checksum, naming the shard and the offset", () => {
  const bytes = archive(MEMBERS);
  bytes[1536 + 5] ^= 1; // inside the second member's header (the first: a header and 700 bytes in 2 blocks)
  assert.throws(() => parseHeader(bytes.subarray(1536, 2048), "t.tar", 1536), ShardError);
  const entries: TarEntry[] = [];
  assert.throws(
    () => walkTar(memory(bytes), "t.tar", entries),
    (e) => e instanceof ShardError && e.shard === "t.tar" && /checksum/.test(e.message),
  );
});

Deno.test("tar: a truncated archive names the member it cuts; entries before it are kept", () => {
  const bytes = archive(MEMBERS);
  const entries: TarEntry[] = [];
  const cut = bytes.subarray(0, 3072 + 300); // inside deep/.../clip1.mp4's data (3072..3584)
  assert.throws(
    () => walkTar(memory(cut), "t.tar", entries),
    (e) => e instanceof ShardError && e.member === MEMBERS[2][0] && /truncated/.test(e.message),
  );
  assert.deepEqual(entries.map((e) => e.name), ["a/clip0.mp4", "a/clip0.json"]);
});

Deno.test("tar: refuses member names it cannot store", () => {
  assert.throws(() => memberHeader("", 1), RangeError);
  assert.throws(() => memberHeader("a\0b", 1), RangeError);
  assert.throws(() => memberHeader("a", -1), RangeError);
});
