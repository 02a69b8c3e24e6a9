/**
 * The public surface, checked as CI sees it: every entry point in deno.json's `exports` is documented
 * (`deno doc --lint` clean, module docs with an `@example`), every TypeScript block in the README, the docs
 * and the JSDoc of `mod.ts`, `src/` and `ffi/` type-checks (`deno check --doc-only`), and the examples and the
 * README import only public paths (`@sluice/sluice`, its subpaths, or files beside them).
 */
import assert from "node:assert/strict";

const ROOT = new URL("../", import.meta.url);
const root = (p: string) => new URL(p, ROOT).pathname;

interface DenoJson {
  name: string;
  exports: Record<string, string>;
}
const denoJson: DenoJson = JSON.parse(Deno.readTextFileSync(root("deno.json")));
const ENTRY_POINTS = Object.entries(denoJson.exports);

async function deno(args: string[]): Promise<{ code: number; out: string }> {
  const r = await new Deno.Command(Deno.execPath(), {
    args,
    cwd: root("."),
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: r.code, out: dec.decode(r.stdout) + dec.decode(r.stderr) };
}

/** The markdown files whose TypeScript blocks users copy. */
function markdownFiles(): string[] {
  const docs = [...Deno.readDirSync(root("docs"))].filter((e) => e.name.endsWith(".md")).map((e) =>
    `docs/${e.name}`
  );
  return ["README.md", ...docs.sort()];
}

/** The TypeScript blocks of a markdown file, with their first line number. */
function tsBlocks(markdown: string): { line: number; code: string }[] {
  const blocks: { line: number; code: string }[] = [];
  const re = /^```(ts|typescript|js|javascript|tsx)\s*\n([\s\S]*?)^```/gm;
  for (const m of markdown.matchAll(re)) {
    blocks.push({ line: markdown.slice(0, m.index).split("\n").length, code: m[2] });
  }
  return blocks;
}

/** Module specifiers of static and dynamic imports and `import.meta.resolve` calls in `code`. */
function specifiers(code: string): string[] {
  const re = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|import\.meta\.resolve\(\s*)["']([^"']+)["']/g;
  return [...code.matchAll(re)].map((m) => m[1]);
}

/** Whether a user's code may import `spec`: the package, its subpaths, Deno's built-ins, or its own files. */
function isPublic(spec: string): boolean {
  if (spec === denoJson.name || spec.startsWith(`${denoJson.name}/`)) {
    return ENTRY_POINTS.some(([sub]) => spec === denoJson.name + sub.slice(1));
  }
  if (spec.startsWith("node:") || spec.startsWith("npm:")) return true;
  // a file of one's own beside the script (a Worker module, a backend module): not sluice's internals
  return spec.startsWith("./") && !/(^|\/)(src|ffi|mod\.ts)(\/|$)/.test(spec.slice(2));
}

/** The names each entry point exports (`deno doc --json`), by entry file. */
const exportsOf = (() => {
  let names: Promise<Map<string, string[]>> | undefined;
  return () =>
    names ??= (async () => {
      const out = new Map<string, string[]>();
      for (const [, file] of ENTRY_POINTS) {
        const r = await deno(["doc", "--json", file]);
        assert.equal(r.code, 0, r.out);
        const nodes = JSON.parse(r.out).nodes as Record<string, { symbols: { name: string }[] }>;
        out.set(file, Object.values(nodes).flatMap((n) => n.symbols.map((s) => s.name)));
      }
      return out;
    })();
})();

/**
 * The problems of `deno doc --lint` output, each as its first line, less the references to a type that another
 * entry point exports: the package documents that type there (JSR documents the entry points together), so an
 * entry need not export every type its signatures mention, and each name has one home.
 */
export function lintProblems(out: string, exportedElsewhere: ReadonlySet<string>): string[] {
  const problems: string[] = [];
  for (const block of out.split(/\n(?=error)/)) {
    const first = block.split("\n")[0];
    if (!first.startsWith("error") || /^error: Found \d+ documentation lint errors?\.$/.test(first)) continue;
    const ref = first.match(/^error\[private-type-ref\]: .* references private type '([^']+)'$/);
    if (ref !== null && exportedElsewhere.has(ref[1])) continue;
    problems.push(`${first} (${block.match(/--> (\S+)/)?.[1] ?? "?"})`);
  }
  return problems;
}

for (const [sub, file] of ENTRY_POINTS) {
  Deno.test(`public API: ${denoJson.name}${sub.slice(1)} (${file}) passes deno doc --lint on its own (a subpath: types of other entries aside)`, async () => {
    const all = await exportsOf();
    // the root documents itself whole (`deno doc --lint mod.ts`, as the project's checks run it): no exception
    const elsewhere = sub === "."
      ? new Set<string>()
      : new Set([...all].filter(([f]) => f !== file).flatMap(([, names]) => names));
    const r = await deno(["doc", "--lint", file]);
    assert.deepEqual(lintProblems(r.out, elsewhere), [], r.out);
  });

  Deno.test(`public API: ${file} has module docs with a runnable @example that imports public paths`, () => {
    const text = Deno.readTextFileSync(root(file));
    const moduleDoc = text.slice(0, text.indexOf("@module"));
    assert.ok(text.startsWith("/**") && moduleDoc.length > 0, `${file}: no @module doc at the top`);
    assert.match(moduleDoc, /@example/, `${file}: module docs without an @example`);
    for (const block of moduleDoc.matchAll(/```ts\n([\s\S]*?)```/g)) {
      const code = block[1].replace(/^\s*\* ?/gm, "");
      for (const s of specifiers(code)) assert.ok(isPublic(s), `${file}: example imports "${s}"`);
      assert.ok(
        specifiers(code).some((s) => s.startsWith(denoJson.name)),
        `${file}: example imports nothing`,
      );
    }
  });
}

Deno.test("public API: @sluice/sluice/cli exports main only (the argument framework behind it is internal)", async () => {
  const file = denoJson.exports["./cli"];
  const r = await deno(["doc", "--json", file]);
  assert.equal(r.code, 0, r.out);
  const nodes = JSON.parse(r.out).nodes as Record<string, { symbols: { name: string }[] }>;
  const symbols = Object.values(nodes).flatMap((n) => n.symbols.map((s) => s.name));
  assert.deepEqual(symbols, ["main"]);
});

Deno.test("public API: the per-entry lint lets a type of another entry through, nothing else", () => {
  const out = [
    "error[private-type-ref]: public type 'A[\"b\"]' references private type 'Elsewhere'",
    "  --> /x/a.ts:1:1",
    "",
    "error[private-type-ref]: public type 'A[\"c\"]' references private type 'Nowhere'",
    "  --> /x/a.ts:2:1",
    "",
    "error[missing-jsdoc]: exported symbol is missing JSDoc documentation",
    "  --> /x/b.ts:3:1",
    "",
    "error: Found 3 documentation lint errors.",
  ].join("\n");
  assert.deepEqual(lintProblems(out, new Set(["Elsewhere"])), [
    "error[private-type-ref]: public type 'A[\"c\"]' references private type 'Nowhere' (/x/a.ts:2:1)",
    "error[missing-jsdoc]: exported symbol is missing JSDoc documentation (/x/b.ts:3:1)",
  ]);
});

Deno.test("public API: each name has one home: no name is exported by two entry points", async () => {
  const homes = new Map<string, string[]>();
  for (const [file, names] of await exportsOf()) {
    for (const n of new Set(names)) homes.set(n, [...homes.get(n) ?? [], file]);
  }
  const twice = [...homes].filter(([, files]) => files.length > 1).map(([n, files]) =>
    `${n}: ${files.join(", ")}`
  );
  assert.deepEqual(twice, []);
});

/** The line of mod.ts after which come the types the names above it reach (and only those). */
const REACHED_MARKER = "// Types the names above refer to";

/** `name → [module, whether type-only]` of the `export … from` statements in `text`. */
function reexports(text: string): Map<string, [string, boolean]> {
  const out = new Map<string, [string, boolean]>();
  for (const m of text.matchAll(/export (type )?\{([^}]*)\} from "([^"]+)";/g)) {
    for (const part of m[2].split(",").map((p) => p.trim()).filter(Boolean)) {
      const name = part.replace(/^type\s+/, "");
      out.set(name, [m[3], m[1] !== undefined || part.startsWith("type ")]);
    }
  }
  return out;
}

Deno.test("public API: the root keeps what a loader user needs: at most 70 names, and the types they reach", async () => {
  const text = Deno.readTextFileSync(root("mod.ts"));
  const at = text.indexOf(REACHED_MARKER);
  assert.ok(at > 0, "mod.ts has no block of the types its names reach");
  const reached = reexports(text.slice(at));
  const names = (await exportsOf()).get(denoJson.exports["."])!;
  const kept = names.filter((n) => !reached.has(n));
  assert.ok(kept.length <= 70, `mod.ts exports ${kept.length} names besides the types they reach`);
  for (const n of ["videoClassificationLoader", "Batch", "LoaderOptions", "openDataset", "SluiceError"]) {
    assert.ok(kept.includes(n), n);
  }
  // The block is exactly the closure: the root without it, given each private type deno doc reports, until
  // none is left, has exported every name of the block and nothing else.
  const file = root(`.mod_reached_${Deno.pid}.ts`);
  let core = text.slice(0, at);
  const added = new Set<string>();
  try {
    for (let round = 0; round < 10; round++) {
      Deno.writeTextFileSync(file, core);
      const r = await deno(["doc", "--lint", file]);
      const missing = new Set(
        [...r.out.matchAll(/references private type '([^']+)'/g)].map((m) => m[1]).filter((n) =>
          !added.has(n)
        ),
      );
      if (missing.size === 0) break;
      for (const n of missing) {
        const from = reached.get(n);
        assert.ok(from !== undefined, `${n} is reached by the root's names but not exported by mod.ts`);
        core += `\nexport ${from[1] ? "type " : ""}{ ${n} } from "${from[0]}";`;
        added.add(n);
      }
    }
  } finally {
    Deno.removeSync(file);
  }
  assert.deepEqual(
    [...reached.keys()].filter((n) => !added.has(n)),
    [],
    "in the block but reached by no name",
  );
});

Deno.test("public API: the entry points together pass deno doc --lint (the package as JSR documents it)", async () => {
  const r = await deno(["doc", "--lint", ...ENTRY_POINTS.map(([, f]) => f)]);
  assert.equal(r.code, 0, r.out);
});

Deno.test("public API: every TypeScript block in the README, docs/ and JSDoc (mod.ts, src/, ffi/) type-checks", async () => {
  const md = markdownFiles();
  // Guards the block finder: if it stopped finding blocks, the check below would pass on nothing.
  const blocks = md.reduce((n, f) => n + tsBlocks(Deno.readTextFileSync(root(f))).length, 0);
  assert.ok(blocks >= 9, `only ${blocks} TypeScript blocks found in README.md and docs/`);
  const r = await deno(["check", "--doc-only", ...md, "mod.ts", "src/", "ffi/"]);
  assert.equal(r.code, 0, r.out);
});

Deno.test("public API: the README fits on a screen (at most 300 lines; the guides are in docs/)", () => {
  const lines = Deno.readTextFileSync(root("README.md")).split("\n").length;
  assert.ok(lines <= 300, `README.md has ${lines} lines: move detail into a docs/ guide`);
});

Deno.test("public API: the README says what happens to a pixel with NVDEC and names the GPU a committed kit report ran it on", () => {
  const readme = Deno.readTextFileSync(root("README.md")).replace(/\s+/g, " ");
  assert.match(readme, /decode="nvdec"` no pixel touches the host/);
  // The README's GPU claim stands on a report the kit brought back from real hardware (no driver double), with
  // every check passed: a claim without one, or naming another GPU, fails here.
  const reports = [...Deno.readDirSync(root("bench/gpu"))].filter((e) => e.name.endsWith(".json"));
  const real = reports.map((e) => JSON.parse(Deno.readTextFileSync(root(`bench/gpu/${e.name}`)))).filter((
    r,
  ) => Object.values(r.driverOverrides ?? {}).every((v) => v === null) && r.totals.checks.fail === 0);
  const devices = real.flatMap((r) =>
    r.phases.flatMap((p: { checks: { figures?: { devices?: string[] } }[] }) =>
      p.checks.flatMap((c) => c.figures?.devices ?? [])
    )
  );
  assert.ok(devices.length > 0, "no passing report from a real GPU in bench/gpu/");
  const named = readme.match(/has run on one real GPU \(an ([^)]+)\)/);
  assert.ok(named, "the README does not say which real GPU its NVDEC path ran on");
  assert.ok(
    devices.includes(named[1]),
    `the README names ${named[1]}; the reports name ${devices.join(", ")}`,
  );
});

Deno.test("public API: README snippets and examples import only public paths and need no ../shared", () => {
  const bad: string[] = [];
  for (const f of markdownFiles()) {
    for (const b of tsBlocks(Deno.readTextFileSync(root(f)))) {
      for (const s of specifiers(b.code)) if (!isPublic(s)) bad.push(`${f}:${b.line}: imports "${s}"`);
      if (b.code.includes("shared/")) bad.push(`${f}:${b.line}: refers to the test media (../shared)`);
    }
  }
  for (const e of Deno.readDirSync(root("examples"))) {
    if (!e.name.endsWith(".ts")) continue;
    const code = Deno.readTextFileSync(root(`examples/${e.name}`));
    for (const s of specifiers(code)) if (!isPublic(s)) bad.push(`examples/${e.name}: imports "${s}"`);
  }
  assert.deepEqual(bad, []);
});

Deno.test("public API: isPublic accepts the package's entry points and rejects internals", () => {
  assert.ok(isPublic(denoJson.name));
  for (const [sub] of ENTRY_POINTS) assert.ok(isPublic(denoJson.name + sub.slice(1)), sub);
  assert.ok(isPublic("./my_worker.ts"));
  assert.ok(isPublic("node:util"));
  for (
    const s of [
      `${denoJson.name}/src/loader/loader.ts`,
      `${denoJson.name}/nope`,
      "../src/errors.ts",
      "./mod.ts",
    ]
  ) {
    assert.ok(!isPublic(s), s);
  }
  assert.deepEqual(
    specifiers(
      `import { a } from "x";\nimport type { B } from 'y';\nimport "z";\nawait import("w");\n` +
        `import.meta.resolve("./v.ts");\nexport { c } from "u";`,
    ),
    ["x", "y", "z", "w", "./v.ts", "u"],
  );
});
