import assert from "node:assert/strict";
import { datasetFromDirectory, datasetFromManifest, openDataset } from "../../src/dataset/dataset.ts";
import { DatasetError } from "../../src/errors.ts";
import { serveDir } from "../helpers/http_server.ts";

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

Deno.test("CSV manifest by column name: a header without label reads start/end as times; other columns go to fields", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sluice-ds-" });
  try {
    // Before: the second column was always the label ("1.5" became a class) and a header was only skipped.
    await Deno.writeTextFile(`${dir}/times.csv`, "path,start,end\na.mp4,1.5,3\nb.mp4,0,2\n");
    const times = await openDataset(`${dir}/times.csv`);
    assert.deepEqual(times.classes, []);
    assert.deepEqual(times.items, [
      { path: `${dir}/a.mp4`, label: -1, start: 1.5, end: 3 },
      { path: `${dir}/b.mp4`, label: -1, start: 0, end: 2 },
    ]);
    await Deno.writeTextFile(
      `${dir}/fields.csv`,
      'Caption,path,target,label,tags\n"a dog, running",a.mp4,0.25,dog,3;7\nempty,b.mp4,,cat,12\n',
    );
    const f = await openDataset(`${dir}/fields.csv`);
    assert.deepEqual(f.classes, ["cat", "dog"]);
    assert.deepEqual(f.items, [
      { path: `${dir}/a.mp4`, label: 1, fields: { Caption: "a dog, running", target: 0.25, tags: "3;7" } },
      { path: `${dir}/b.mp4`, label: 0, fields: { Caption: "empty", target: null, tags: "12" } },
    ]);
    // Before: "file,label" was a data row, "label" a phantom class.
    await Deno.writeTextFile(`${dir}/file.csv`, "file,label\na.mp4,1\n");
    await assert.rejects(
      () => openDataset(`${dir}/file.csv`),
      /file\.csv:1: the header \(file, label\) has no "path" column/,
    );
    await Deno.writeTextFile(`${dir}/wide.csv`, "path,label\na.mp4,1,extra\n");
    await assert.rejects(
      () => openDataset(`${dir}/wide.csv`),
      /wide\.csv:2: 3 fields, but the header names 2/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("labels: integers keep their values; a non-integer among integers is an error naming its line", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sluice-ds-" });
  try {
    await Deno.writeTextFile(`${dir}/ints.csv`, "path,label\na.mp4,7\nb.mp4,3\nc.mp4,7\n");
    const ints = await openDataset(`${dir}/ints.csv`);
    assert.deepEqual(ints.items.map((i) => i.label), [7, 3, 7]);
    assert.equal(ints.classes.length, 8);
    // Before: "1O" made every label a name, renumbering 10 → 1, 2 → 2, 1O → 0 ... silently.
    await Deno.writeTextFile(`${dir}/typo.csv`, "path,label\na.mp4,10\nb.mp4,2\nc.mp4,1O\nd.mp4,4\n");
    await assert.rejects(
      () => openDataset(`${dir}/typo.csv`),
      (e: Error) => e instanceof DatasetError && /typo\.csv:4: label "1O" is not an integer/.test(e.message),
    );
    await Deno.writeTextFile(
      `${dir}/names.jsonl`,
      '{"path":"a.mp4","label":"dog"}\n{"path":"b.mp4","label":"cat"}\n{"path":"c.mp4","label":5}\n',
    );
    await assert.rejects(() => openDataset(`${dir}/names.jsonl`), /names\.jsonl:3: label "5" is an integer/);
    await Deno.writeTextFile(`${dir}/half.jsonl`, '{"path":"a.mp4","label":1}\n{"path":"b.mp4"}\n');
    await assert.rejects(() => openDataset(`${dir}/half.jsonl`), /half\.jsonl:2: no label, but 1 other row/);
    await Deno.writeTextFile(
      `${dir}/extra.jsonl`,
      '{"path":"a.mp4","label":1,"labels":[1,4],"caption":"x","score":0.5}\n',
    );
    const extra = await openDataset(`${dir}/extra.jsonl`);
    assert.deepEqual(extra.items[0].fields, { labels: [1, 4], caption: "x", score: 0.5 });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("labels: a number that is no class id (-1, -3, 1.5, 1.0) is an error naming its own line, file and value", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sluice-ds-" });
  try {
    const rejects = async (name: string, text: string, want: RegExp) => {
      await Deno.writeTextFile(`${dir}/${name}`, text);
      await assert.rejects(
        () => openDataset(`${dir}/${name}`),
        (e: Error) => e instanceof DatasetError && want.test(e.message),
        `${name}: ${want}`,
      );
    };
    // Before: '-1 is "not an integer"'; 0,-3,1.5 blamed the valid row 0 ("is an integer, but 1 row(s)...").
    await rejects(
      "neg.csv",
      "path,label\na.mp4,0\nb.mp4,1\nc.mp4,-1\n",
      /neg\.csv:4: label -1 is negative: .*>= 0/,
    );
    await rejects(
      "mix.csv",
      "path,label\na.mp4,0\nb.mp4,-3\nc.mp4,1.5\n",
      /mix\.csv:3: label -3 is negative/,
    );
    await rejects(
      "float.csv",
      "path,label\na.mp4,0\nb.mp4,1.5\n",
      /float\.csv:3: label 1\.5 is not an integer/,
    );
    await rejects(
      "one.csv",
      "path,label\na.mp4,1.0\nb.mp4,2.0\n",
      /one\.csv:2: label 1\.0 is not written as an integer/,
    );
    await rejects(
      "names.csv",
      "path,label\na.mp4,dog\nb.mp4,cat\nc.mp4,-1\n",
      /names\.csv:4: label -1 is negative/,
    );
    await rejects(
      "neg.jsonl",
      '{"path":"a.mp4","label":2}\n{"path":"b.mp4","label":-1}\n',
      /neg\.jsonl:2: label -1 is negative/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("directory tree: nested folders and symbolic links are followed; skipped files are listed with the reason", async () => {
  const root = await Deno.makeTempDir({ prefix: "sluice-ds-" });
  const outside = await Deno.makeTempDir({ prefix: "sluice-ds-out-" });
  try {
    await Deno.mkdir(`${root}/dog/day1/cam2`, { recursive: true });
    await Deno.mkdir(`${root}/cat`);
    await Deno.writeTextFile(`${root}/dog/a.mp4`, "");
    await Deno.writeTextFile(`${root}/dog/day1/cam2/b.MKV`, "");
    await Deno.writeTextFile(`${root}/dog/day1/notes.txt`, "");
    await Deno.writeTextFile(`${root}/readme.md`, "");
    await Deno.writeTextFile(`${outside}/c.webm`, "");
    await Deno.symlink(outside, `${root}/cat/linked`); // a linked folder
    await Deno.symlink(`${outside}/c.webm`, `${root}/cat/d.webm`); // a linked file
    await Deno.symlink(`${root}/dog`, `${root}/dog/day1/loop`); // back up the path
    await Deno.symlink(`${outside}/gone.mp4`, `${root}/cat/gone.mp4`);
    const ds = await openDataset(root);
    assert.deepEqual(ds.classes, ["cat", "dog"]);
    assert.deepEqual(ds.items, [
      { path: `${root}/cat/d.webm`, label: 0 },
      { path: `${root}/cat/linked/c.webm`, label: 0 },
      { path: `${root}/dog/a.mp4`, label: 1 },
      { path: `${root}/dog/day1/cam2/b.MKV`, label: 1 },
    ]);
    assert.deepEqual(ds.skipped!.map((s) => [s.path.slice(root.length), s.reason.split(" (")[0]]), [
      ["/cat/gone.mp4", "broken symbolic link"],
      ["/dog/day1/loop", "symbolic link loop"],
      ["/dog/day1/notes.txt", "not a video file extension"],
      ["/readme.md", "not inside a label directory"],
    ]);
  } finally {
    await Deno.remove(root, { recursive: true });
    await Deno.remove(outside, { recursive: true });
  }
});

Deno.test("a video file or a binary file given as a dataset says so", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sluice-ds-" });
  try {
    await Deno.writeFile(`${dir}/clip.mp4`, new Uint8Array([0, 0, 0, 0x20, 0x66, 0x74, 0x79, 0x70]));
    await assert.rejects(
      () => openDataset(`${dir}/clip.mp4`),
      /clip\.mp4: open dataset failed: this is a video file, not a dataset/,
    );
    await Deno.writeFile(`${dir}/clip.bin`, new Uint8Array([0xff, 0xfe, 0x00, 0x80, 0x81]));
    await assert.rejects(
      () => openDataset(`${dir}/clip.bin`),
      /clip\.bin: read manifest failed: not a text file/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
