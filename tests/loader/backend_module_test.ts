import assert from "node:assert/strict";
import { PipelineBuilder } from "../../src/pipeline/builder.ts";
import { releasingSpent } from "../../src/loader/front/backend_module.ts";
import { makeSyntheticDataset } from "../helpers/synthetic.ts";
import type { ClipItem, ClipPackets } from "../../src/loader/clip/life.ts";

function packets(x: ClipItem): NonNullable<ClipPackets["packets"]> {
  assert.ok("packets" in x && x.packets !== undefined, "a clip with packets");
  return x.packets;
}

function items(n: number): ClipPackets[] {
  return Array.from(
    { length: n },
    (_, i) => ({ meta: { position: i }, packets: { data: new Uint8Array(1000 + i) } }),
  )
    .map((x) => x as unknown as ClipPackets);
}

Deno.test("releasingSpent: asking for the next item frees the previous one's packets; the end frees the last", async () => {
  const src = items(3);
  const served = releasingSpent(new PipelineBuilder().addSource(src).addSink({ bufferSize: 1 }).build());
  try {
    const it = served[Symbol.asyncIterator]();
    const first = await it.next();
    assert.equal(first.done, false);
    assert.equal(packets(first.value).data.length, 1000, "the item being served is intact");
    await it.next();
    assert.equal(src[0].packets!.data.length, 0, "item 0 was freed when item 1 was asked for");
    assert.equal(src[1].packets!.data.length, 1001);
    await it.next();
    assert.equal((await it.next()).done, true);
    assert.deepEqual(src.map((x) => x.packets!.data.length), [0, 0, 0]);
    assert.equal(served.stats().consumed, 3);
  } finally {
    await served.stop();
  }
});

Deno.test("releasingSpent: leaving early frees the item in hand", async () => {
  const src = items(4);
  const served = releasingSpent(
    new PipelineBuilder().addSource(src, { continuous: true }).addSink({ bufferSize: 1 }).build(),
  );
  try {
    for await (const x of served) {
      assert.equal(packets(x).data.length, 1000);
      break;
    }
    assert.equal(src[0].packets!.data.length, 0);
  } finally {
    await served.stop();
  }
});

Deno.test("the subprocess backend's child ignores a deno.json or package.json around an installed sluice", async () => {
  // An installed sluice (e.g. the Python wheel's copy of src/ in a venv) sits inside someone else's project: a
  // broken (or merely different) deno.json or package.json above it must not reach the loader's child process.
  const dir = await Deno.makeTempDir({ prefix: "sluice-isolated-" });
  try {
    makeSyntheticDataset(`${dir}/data`, {
      videos: 2,
      classes: 2,
      durationSec: 1,
      fps: 25,
      width: 64,
      height: 48,
    });
    Deno.writeTextFileSync(`${dir}/deno.json`, "{ this is not json");
    Deno.writeTextFileSync(`${dir}/package.json`, "{ nor is this");
    const root = new URL("../../", import.meta.url).pathname;
    for (const d of ["src", "ffi"]) await copyTree(`${root}${d}`, `${dir}/venv/sluice/${d}`);
    const script = `
      import { videoClassificationLoader } from "./venv/sluice/src/loader/loader.ts";
      await using loader = await videoClassificationLoader({
        dataset: "${dir}/data", batchSize: 2, clip: { numFrames: 2, width: 32, height: 32 },
        backend: "subprocess", log: () => {},
      });
      let clips = 0;
      for await (using b of loader) clips += b.shape[0];
      console.log(clips);`;
    Deno.writeTextFileSync(`${dir}/main.ts`, script);
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--no-config", "--no-lock", "--no-npm", "main.ts"],
      cwd: dir,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const err = new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 0, err);
    assert.equal(new TextDecoder().decode(out.stdout).trim(), "2", err);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

async function copyTree(from: string, to: string): Promise<void> {
  await Deno.mkdir(to, { recursive: true });
  for await (const e of Deno.readDir(from)) {
    if (e.isDirectory) await copyTree(`${from}/${e.name}`, `${to}/${e.name}`);
    else if (e.isFile) await Deno.copyFile(`${from}/${e.name}`, `${to}/${e.name}`);
  }
}
