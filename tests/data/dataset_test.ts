import assert from "node:assert/strict";
import { datasetFromDirectory, datasetFromManifest, openDataset } from "../../src/data/dataset.ts";
import { DatasetError } from "../../src/errors.ts";
import { serveDir } from "./http_server.ts";

async function tree(): Promise<string> {
  const root = await Deno.makeTempDir({ prefix: "sluice-ds-" });
  for (
    const [label, files] of [["dog", ["b.mp4", "a.mkv", "notes.txt"]], ["cat", ["x.mov"]], [".hidden", [
      "h.mp4",
    ]]]
  ) {
    await Deno.mkdir(`${root}/${label}`);
    for (const f of files as string[]) await Deno.writeTextFile(`${root}/${label}/${f}`, "");
  }
  return root;
}

Deno.test("directory tree: sorted labels, sorted videos, non-videos and hidden dirs skipped", async () => {
  const root = await tree();
  try {
    const ds = await openDataset(root);
    assert.deepEqual(ds.classes, ["cat", "dog"]);
    assert.deepEqual(ds.items, [
      { path: `${root}/cat/x.mov`, label: 0 },
      { path: `${root}/dog/a.mkv`, label: 1 },
      { path: `${root}/dog/b.mp4`, label: 1 },
    ]);
    await Deno.mkdir(`${root}/empty/none`, { recursive: true });
    await assert.rejects(() => datasetFromDirectory(`${root}/empty`), DatasetError);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("CSV manifest: header, quotes, ranges, relative paths, named labels", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sluice-ds-" });
  try {
    await Deno.writeTextFile(
      `${dir}/m.csv`,
      'path,label,start,end\nclips/a.mp4,walk,1.5,3\n"/abs/b, c.mp4",run\nhttp://h/x.mp4,walk,,2\n',
    );
    const ds = await openDataset(`${dir}/m.csv`);
    assert.deepEqual(ds.classes, ["run", "walk"]);
    assert.deepEqual(ds.items, [
      { path: `${dir}/clips/a.mp4`, label: 1, start: 1.5, end: 3 },
      { path: "/abs/b, c.mp4", label: 0 },
      { path: "http://h/x.mp4", label: 1, end: 2 },
    ]);
    await Deno.writeTextFile(`${dir}/bad.csv`, "a.mp4,1,5,2\n");
    await assert.rejects(
      () => datasetFromManifest(`${dir}/bad.csv`),
      /bad\.csv:1: end 2 is not after start 5/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("JSONL manifest over HTTP: integer labels kept, paths relative to the manifest URL", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sluice-ds-" });
  try {
    await Deno.writeTextFile(
      `${dir}/m.jsonl`,
      '{"path":"v/a.mp4","label":2}\n\n{"path":"b.mp4","label":0,"start":0,"end":1}\n',
    );
    await using srv = serveDir(dir);
    const ds = await openDataset(`${srv.base}m.jsonl`);
    assert.deepEqual(ds.classes, ["0", "1", "2"]);
    assert.deepEqual(ds.items, [
      { path: `${srv.base}v/a.mp4`, label: 2 },
      { path: `${srv.base}b.mp4`, label: 0, start: 0, end: 1 },
    ]);
    await assert.rejects(() => openDataset(`${srv.base}missing.jsonl`), /missing\.jsonl.*HTTP 404/);
    await Deno.writeTextFile(`${dir}/bad.jsonl`, '{"label":1}\n');
    await assert.rejects(() => openDataset(`${dir}/bad.jsonl`), /bad\.jsonl:1: expected/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
