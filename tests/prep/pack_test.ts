import assert from "node:assert/strict";
import { packShards, parseByteSize, sampleKey } from "../../src/prep/pack.ts";
import { openShards, readSampleVideo } from "../../src/dataset/shards/reader.ts";
import { hasFfmpegCliSync } from "../helpers/media.ts";
import { makePacked } from "../dataset/shards/shard_fixture.ts";
import { InvalidArgumentError } from "../../src/errors.ts";
import { withTempDir } from "../helpers/temp_dir.ts";

const noCli = !hasFfmpegCliSync();
if (noCli) console.log("pack_test: ffmpeg CLI not found (test clips are made with it): pack tests skipped");

const withDir = <T>(fn: (dir: string) => Promise<T>) => withTempDir("sluice-pack-", fn);

Deno.test({
  name: "pack: shards up to the size asked, every video read back byte-identical to its source",
  ignore: noCli,
  fn: () =>
    withDir(async (dir) => {
      const p = await makePacked(dir, 6, 64 * 1024);
      assert.ok(p.summary.shards.length >= 2, `${p.summary.shards.length} shard(s)`);
      for (const s of p.summary.shards) {
        const size = (await Deno.stat(`${p.out}/${s.tar}`)).size;
        assert.equal(size, s.size);
        assert.ok(size <= 64 * 1024 || s.samples === 1, `${s.tar}: ${size} bytes`);
      }
      const set = await openShards(p.out);
      assert.deepEqual(set.classes, ["run", "walk"]);
      const samples = set.shards.flatMap((shard) => shard.index.samples.map((sample) => ({ shard, sample })));
      assert.equal(samples.length, 6);
      for (const [i, { shard, sample }] of samples.entries()) {
        const bytes = await readSampleVideo(shard, sample);
        assert.deepEqual(bytes, await Deno.readFile(p.videos[i]), `video ${i}`);
        assert.equal(sample.label, i % 2 ? 0 : 1);
      }
    }),
});

Deno.test({
  name:
    "pack: WebDataset layout read by Python's tarfile: <key>.mp4 then <key>.json with label and extra columns",
  ignore: noCli,
  fn: () =>
    withDir(async (dir) => {
      const p = await makePacked(dir, 4, 1 << 30);
      const py = await new Deno.Command("/usr/bin/python3", {
        args: [
          "-c",
          `import tarfile, json, sys, hashlib
out = []
for m in tarfile.open(sys.argv[1]):
    data = tarfile.open(sys.argv[1]).extractfile(m).read()
    base = m.name.rsplit("/", 1)[-1]
    key = m.name[: len(m.name) - len(base)] + base.split(".", 1)[0]   # webdataset's key rule
    ext = base.split(".", 1)[1]
    out.append([key, ext, json.loads(data) if ext == "json" else hashlib.sha256(data).hexdigest()])
print(json.dumps(out))`,
          `${p.out}/shard-000000.tar`,
        ],
      }).output();
      assert.ok(py.success, new TextDecoder().decode(py.stderr));
      const members = JSON.parse(new TextDecoder().decode(py.stdout));
      const sha = async (path: string) =>
        [...new Uint8Array(await crypto.subtle.digest("SHA-256", await Deno.readFile(path)))]
          .map((b) => b.toString(16).padStart(2, "0")).join("");
      const expected = [];
      for (let i = 0; i < 4; i++) {
        const cls = i % 2 ? "run" : "walk";
        const key = `${cls}/v_${i}`;
        expected.push([key, "mp4", await sha(p.videos[i])]);
        expected.push([key, "json", {
          path: `${cls}/v.${i}.mp4`,
          label: i % 2 ? 0 : 1,
          class: cls,
          caption: `clip ${i}`,
        }]);
      }
      assert.deepEqual(members, expected);
    }),
});

Deno.test({
  name: "pack: an unreadable video is listed and left out; the rest is packed",
  ignore: noCli,
  fn: () =>
    withDir(async (dir) => {
      const p = await makePacked(dir, 2);
      await Deno.writeTextFile(`${dir}/data/walk/bad.mp4`, "garbage");
      const m = `${dir}/data/manifest.jsonl`;
      await Deno.writeTextFile(
        m,
        (await Deno.readTextFile(m)) + JSON.stringify({ path: "walk/bad.mp4", label: "walk" }) + "\n",
      );
      const s = await packShards({ manifest: m, outDir: `${dir}/again` });
      assert.equal(s.failures.length, 1);
      assert.ok(s.failures[0].path.endsWith("walk/bad.mp4"));
      assert.equal(s.shards.reduce((n, x) => n + x.samples, 0), 2);
      assert.equal(p.summary.failures.length, 0);
    }),
});

Deno.test("parseByteSize and sampleKey", () => {
  assert.equal(parseByteSize("1GiB"), 1024 ** 3);
  assert.equal(parseByteSize("1G"), 1024 ** 3);
  assert.equal(parseByteSize("500MB"), 500e6);
  assert.equal(parseByteSize("64k"), 65536);
  assert.equal(parseByteSize("4096"), 4096);
  assert.throws(() => parseByteSize("1 lots"), InvalidArgumentError);
  assert.deepEqual(sampleKey("a.b/c.d.MP4"), { key: "a.b/c_d", ext: "mp4" });
  assert.deepEqual(sampleKey("plain"), { key: "plain", ext: "mp4" });
});
