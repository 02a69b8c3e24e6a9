/**
 * The floor plan, checked: `src/` is a stack of rooms, one concept each, and imports run downward only (a room
 * imports the rooms below it, never one above); no module takes part in an import cycle except through type-only
 * imports. `ffi/` sits between the root modules of `src/` (errors) and the rooms. Side-effect imports, re-exports,
 * Worker modules named with `new URL("…", import.meta.url)` or `import.meta.resolve("…")` and dynamic
 * `import("…")` count as imports; a module importing one outside `src/` and `ffi/` (`mod.ts`, `scripts/`) imports
 * above every room. The rooms are declared once, in `scripts/architecture_map.ts`, which also writes
 * docs/architecture.md (checked current here).
 *
 * Below that, the rules read from the syntax (tests/architecture_rules.ts, a lint plugin run in the test): no
 * function, method or closure over 80 lines and no class over 300 in src/ without a `// long: <why>` above it;
 * no cycle even through type-only imports; options checked and defaulted only at their doors; NVDEC imported
 * only by src/nvdec/ and the decode seam's registration; one decode export in the clip Worker module. Each has an
 * allowlist of today's offenders that may only shrink (`-- --print` re-measures them).
 */
import assert from "node:assert/strict";
import { expectedPage, ROOMS as FLOOR_PLAN } from "../scripts/architecture_map.ts";
import { scanModule } from "./architecture_rules.ts";

const ROOT = new URL("../", import.meta.url).pathname;

const ROOMS = FLOOR_PLAN.map((r) => r.dir);

interface Edge {
  from: string;
  to: string;
  typeOnly: boolean;
}

function walk(dir: string): string[] {
  const out: string[] = [];
  for (const e of Deno.readDirSync(ROOT + dir)) {
    const p = `${dir}/${e.name}`;
    if (e.isDirectory) out.push(...walk(p));
    else if (e.name.endsWith(".ts")) out.push(p);
  }
  return out;
}

function normalize(path: string): string {
  const parts: string[] = [];
  for (const p of path.split("/")) {
    if (p === "..") parts.pop();
    else if (p !== "." && p !== "") parts.push(p);
  }
  return parts.join("/");
}

const STATIC = /(?:^|\n)\s*(import|export)\s+(type\s+)?([^;]*?)\s+from\s+["'](\.{1,2}\/[^"']+)["']/g;
const SIDE_EFFECT = /(?:^|\n)\s*import\s+["'](\.{1,2}\/[^"']+)["']/g;
const DYNAMIC = /(?:import\(|new URL\(|import\.meta\.resolve\()\s*["'](\.{1,2}\/[^"']+\.ts)["']/g;

/** The relative imports of `file` (a path from the repository root), read from `code`. */
function importsOf(file: string, code = Deno.readTextFileSync(ROOT + file)): Edge[] {
  const dir = file.includes("/") ? file.slice(0, file.lastIndexOf("/")) : ".";
  const edges: Edge[] = [];
  for (const m of code.matchAll(STATIC)) {
    const named = m[3].match(/^\{([^}]*)\}$/);
    const allTypes = named !== null &&
      named[1].split(",").map((s) => s.trim()).filter(Boolean).every((s) => s.startsWith("type "));
    edges.push({ from: file, to: normalize(`${dir}/${m[4]}`), typeOnly: m[2] !== undefined || allTypes });
  }
  for (const m of [...code.matchAll(SIDE_EFFECT), ...code.matchAll(DYNAMIC)]) {
    edges.push({ from: file, to: normalize(`${dir}/${m[1]}`), typeOnly: false });
  }
  return edges;
}

/** The room of a module: the deepest entry of {@link ROOMS} its path starts with. */
function roomOf(file: string): string | undefined {
  if (/^src\/[^/]+\.ts$/.test(file)) return "src";
  return ROOMS.filter((r) => r !== "src" && file.startsWith(r + "/")).sort((a, b) => b.length - a.length)[0];
}

const FILES = [...walk("src"), ...walk("ffi")].sort();
const EDGES = FILES.flatMap((f) => importsOf(f)).filter((e) => e.to.endsWith(".ts"));

Deno.test("architecture: every module of src/ and ffi/ lies in a room of the floor plan", () => {
  assert.deepEqual(FILES.filter((f) => roomOf(f) === undefined), []);
});

Deno.test("architecture: imports run downward only (a room never imports a room above it)", () => {
  const up = EDGES.flatMap((e) => {
    const a = ROOMS.indexOf(roomOf(e.from)!), b = ROOMS.indexOf(roomOf(e.to) ?? "");
    if (b < 0) return [`${e.from} → ${e.to} (${ROOMS[a]} imports a module above every room)`];
    return b > a ? [`${e.from} → ${e.to} (${ROOMS[a]} imports ${ROOMS[b]}, a room above it)`] : [];
  });
  assert.deepEqual(up, []);
});

/** The import cycles among `edges`: each strongly connected component of more than one module, sorted. */
function cyclesOf(edges: readonly Edge[]): string[][] {
  const next = new Map<string, string[]>();
  for (const e of edges) next.set(e.from, [...next.get(e.from) ?? [], e.to]);
  // Tarjan's strongly connected components: any component of more than one module is a cycle.
  let counter = 0;
  const index = new Map<string, number>(), low = new Map<string, number>(), stack: string[] = [];
  const onStack = new Set<string>(), cycles: string[][] = [];
  const visit = (v: string) => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const c: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        c.push(w);
      } while (w !== v);
      if (c.length > 1) cycles.push(c.sort());
    }
  };
  for (const f of [...next.keys()].sort()) if (!index.has(f)) visit(f);
  return cycles.sort((a, b) => a[0] < b[0] ? -1 : 1);
}

Deno.test("architecture: no import cycle between modules except through type-only imports", () => {
  assert.deepEqual(cyclesOf(EDGES.filter((e) => !e.typeOnly)), []);
});

Deno.test("architecture: the checks see real edges (a room above importing one below is found)", () => {
  // Guards the parser: if it stopped finding imports, the two checks above would pass on nothing.
  assert.ok(EDGES.some((e) => e.from === "src/loader/video_loader.ts" && e.to === "src/dataset/dataset.ts"));
  assert.ok(EDGES.some((e) => e.typeOnly));
  assert.ok(EDGES.filter((e) => !e.typeOnly).length > 300);
});

Deno.test("architecture: every way a module names another is an edge", () => {
  const code = [
    `import "./a.ts";`,
    `export * from "./b.ts";`,
    `export { c } from "./c.ts";`,
    `export type { D } from "./d.ts";`,
    `const e = await import("../e.ts");`,
    `const f = new URL("./f.ts", import.meta.url);`,
    `const g = import.meta.resolve("./g.ts");`,
    `import { type H, h } from "./h.ts";`,
  ].join("\n");
  assert.deepEqual(importsOf("src/x/y.ts", code).map((e) => `${e.to}${e.typeOnly ? " (type)" : ""}`).sort(), [
    "src/e.ts",
    "src/x/a.ts",
    "src/x/b.ts",
    "src/x/c.ts",
    "src/x/d.ts (type)",
    "src/x/f.ts",
    "src/x/g.ts",
    "src/x/h.ts",
  ]);
});

Deno.test("architecture: docs/architecture.md is the map the modules' own docs make (deno task architecture)", async () => {
  const page = Deno.readTextFileSync(ROOT + "docs/architecture.md");
  assert.ok(page === await expectedPage(), "docs/architecture.md is stale: run `deno task architecture`");
});

// ---------------------------------------------------------------------------------------------------------------
// The rules a restructuring (issue 33) brings the house to. Each allowlist below holds today's offenders, one per
// line, sorted; the test fails when an offender appears that is not listed, or a listed one no longer offends, so
// the lists can only shrink. To re-measure them (after a merge), run
//   deno test -A tests/architecture_test.ts -- --print
// which prints every list as measured; paste what changed, and say why in the commit.

/** Functions, methods and closures over 80 lines, classes over 300, in src/ (`file name lines`: at most). */
const KNOWN_LONG: readonly string[] = [];

/** Import cycles counting type-only imports (each: its modules, sorted). */
const KNOWN_CYCLES: readonly string[] = [];

/**
 * Where options are checked and defaulted: each door (`file function`) and the option calls it may make
 * (`new ClipSampler` may also be called anywhere in src/dataset/sampler.ts, and anything anywhere in
 * src/options.ts, whose internals these are). Every other call is a late check.
 */
const CHECKERS = ["checkOptions", "checkOption", "withDefaults", "defaultsOf", "resolveTable"];
const DOORS: Record<string, readonly string[]> = {
  "src/cli/load.ts runLoad": ["resolveLoaderOptions"],
  "src/dataset/fetch.ts FETCH_DEFAULTS": ["defaultsOf"],
  "src/dataset/fetch.ts fetchOnClock": ["resolveFetchOptions"],
  "src/dataset/fetch.ts resolveFetchOptions": CHECKERS,
  "src/dataset/sampler.ts ClipSampler.constructor": ["resolveSamplerOptions"],
  "src/dataset/sampler.ts resolveSamplerOptions": CHECKERS,
  "src/dataset/video_index.ts indexDataset": ["resolveFetchOptions"],
  "src/loader/loader.ts videoClassificationLoader": ["resolveLoaderOptions"],
  "src/loader/loader_options.ts resolveLoaderOptions": ["resolveTable"],
  "src/pipeline/builder.ts PipelineBuilder.pipe": ["resolvePipeOptions"],
  "src/pipeline/builder.ts SinkBuilder.build": ["resolveBuildOptions"],
  "src/pipeline/builder.ts resolveBuildOptions": CHECKERS,
  "src/pipeline/builder.ts resolvePipeOptions": CHECKERS,
  "src/serve/main.ts runServer": ["resolveServerConfig"],
  "src/serve/options.ts resolveServerConfig": ["resolveTable", "resolveLoaderOptions"],
  "src/serve/server.ts serveLoader": ["checkOption"],
};
const OWN_MODULE: Record<string, string> = { "new ClipSampler": "src/dataset/sampler.ts" };

/** Option calls outside the doors (`file function: callee`, once per call). */
const KNOWN_LATE_CHECKS: readonly string[] = [];

/** Imports of src/nvdec/ from outside it and the decode seam's registration (`importer → module`). */
const KNOWN_NVDEC_IMPORTS: readonly string[] = [];

/** The clip Worker module's decode exports beyond the one it should have. */
const KNOWN_DECODE_EXPORTS: readonly string[] = [];

/** Where NVDEC may be imported from: its own room and the decode seam's registration. */
const NVDEC_IMPORTERS = /^src\/nvdec\/|^src\/loader\/decode\/devices\.ts$/;

const FINDINGS = walk("src").sort().flatMap((file) =>
  scanModule(file, Deno.readTextFileSync(ROOT + file)).map((f) => ({ file, ...f }))
);

/** The long ones, as listed in {@link KNOWN_LONG} (a closure twice in one function numbered `(2)`). */
function measuredLong(findings = FINDINGS): { key: string; lines: number; at: string }[] {
  const seen = new Map<string, number>();
  return findings.flatMap((f) => {
    if (f.rule !== "long") return [];
    let key = `${f.file} ${f.name}`;
    const n = (seen.get(key) ?? 0) + 1;
    seen.set(key, n);
    if (n > 1) key += ` (${n})`;
    return [{ key, lines: f.lines, at: `${f.file}:${f.line}` }];
  });
}

/** The option calls outside the doors, as listed in {@link KNOWN_LATE_CHECKS}. */
function measuredLateChecks(findings = FINDINGS): { entry: string; at: string }[] {
  return findings.flatMap((f) => {
    if (f.rule !== "option-call" || f.file === "src/options.ts" || OWN_MODULE[f.callee] === f.file) return [];
    const doors = f.top === null ? f.within : [f.top];
    if (doors.some((d) => DOORS[`${f.file} ${d}`]?.includes(f.callee))) return [];
    return [{
      entry: `${f.file} ${f.within[0] ?? f.top ?? "(module)"}: ${f.callee}`,
      at: `${f.file}:${f.line}`,
    }];
  });
}

/** The imports of src/nvdec/ from elsewhere (mod.ts included), as listed in {@link KNOWN_NVDEC_IMPORTS}. */
function measuredNvdecImports(): string[] {
  const edges = [...EDGES, ...importsOf("mod.ts")];
  return [
    ...new Set(
      edges.filter((e) => e.to.startsWith("src/nvdec/") && !NVDEC_IMPORTERS.test(e.from))
        .map((e) => `${e.from} → ${e.to}`),
    ),
  ].sort();
}

/** The clip Worker module: the one module of the loader called clip_worker.ts. */
function clipWorkerModule(): string {
  const found = FILES.filter((f) => f.startsWith("src/loader/") && f.endsWith("/clip_worker.ts"));
  assert.equal(found.length, 1, `one clip Worker module under src/loader/, found: ${found.join(", ")}`);
  return found[0];
}

/** The clip Worker module's exports named `decode…`. */
function decodeExports(): string[] {
  const worker = clipWorkerModule();
  return FINDINGS.flatMap((f) =>
    f.rule === "export" && f.file === worker && /^decode/.test(f.name) ? [f.name] : []
  )
    .sort();
}

/** Fails naming what is new and what is gone between a measured list and its allowlist (both multisets). */
function mustShrink(
  list: string,
  measured: readonly string[],
  known: readonly string[],
  at = (_: string) => "",
) {
  assert.deepEqual(known, [...known].sort(), `${list} is kept sorted, one entry per line`);
  const left = [...known], fresh: string[] = [];
  for (const m of measured) {
    const i = left.indexOf(m);
    if (i >= 0) left.splice(i, 1);
    else fresh.push(m);
  }
  const problems = [
    ...fresh.map((m) => `new: ${m}${at(m)}`),
    ...left.map((k) => `no longer found: ${k} (remove it from ${list})`),
  ];
  assert.deepEqual(
    problems,
    [],
    `${list} can only shrink; re-measure with \`-- --print\` (see above ${list})`,
  );
}

Deno.test("architecture rules: long functions, methods, closures and classes are found unless a reason stands above", () => {
  const stmts = (n: number, line = (i: number) => `  x += ${i};`) =>
    Array.from({ length: n }, (_, i) => line(i));
  const fn = (head: string, lines: number) => [`${head} {`, ...stmts(lines - 2), "}"]; // `lines` lines in all
  const code = [
    "let x = 0;",
    ...fn("function long81()", 81),
    ...fn("function fine80()", 80),
    "// long: a linear reader of one format",
    ...fn("export function excused()", 90),
    "// long: a linear reader of one format",
    "/**",
    " * Its docs.",
    " */",
    ...fn("function excusedAboveItsDocs()", 90),
    "// long: because",
    ...fn("function reasonTooShort()", 90),
    "// long: a reason for nothing long",
    ...fn("function stale()", 10),
    "class Big {",
    ...fn("  method()", 81),
    ...fn("  #hidden()", 81),
    ...fn("  field = () =>", 81),
    ...stmts(60, (i) => `  f${i} = ${i};`),
    "}",
    ...fn("const closure = () =>", 81),
    "function outer() {",
    ...fn("  [1].forEach(() =>", 81).map((l, i, all) => i === all.length - 1 ? "  });" : l),
    "}",
  ].join("\n");
  const found = scanModule("src/x/y.ts", code).flatMap((f) =>
    f.rule === "long" || f.rule === "stale-long" ? [`${f.rule} ${f.kind} ${f.name} ${f.lines}`] : []
  );
  assert.deepEqual(found.sort(), [
    "long class Big 305",
    "long function (anonymous in outer) 81",
    "long function Big.#hidden 81",
    "long function Big.field 81",
    "long function Big.method 81",
    "long function closure 81",
    "long function long81 81",
    "long function outer 83",
    "long function reasonTooShort 90",
    "stale-long function stale 10",
  ]);
  assert.equal(scanModule("src/x/y.ts", code)[0].line, 2);
  // Two anonymous closures in one function are told apart by a number.
  const twice = {
    file: "src/x.ts",
    rule: "long" as const,
    kind: "function" as const,
    name: "(anonymous in g)",
  };
  assert.deepEqual(measuredLong([{ ...twice, lines: 90, line: 3 }, { ...twice, lines: 85, line: 99 }]), [
    { key: "src/x.ts (anonymous in g)", lines: 90, at: "src/x.ts:3" },
    { key: "src/x.ts (anonymous in g) (2)", lines: 85, at: "src/x.ts:99" },
  ]);
});

Deno.test("architecture rules: each option call is found with the functions it is written in", () => {
  const code = [
    "const D = defaultsOf(T);",
    "export function door(o) { const inner = () => withDefaults(T, o); return inner(); }",
    "function late(o) { checkOptions(T, o, v); }",
    "class C { constructor() { this.s = new ClipSampler([], {}); } m() { return x.checkOption(a, b, c, d); } }",
    "withDefaults(T, {});",
    "notAChecker(T); new Other();",
  ].join("\n");
  const calls = scanModule("src/x/y.ts", code).flatMap((f) => f.rule === "option-call" ? [f] : []);
  assert.deepEqual(calls.map(({ callee, within, top, line }) => ({ callee, within, top, line })), [
    { callee: "defaultsOf", within: [], top: "D", line: 1 },
    { callee: "withDefaults", within: ["inner", "door"], top: null, line: 2 },
    { callee: "checkOptions", within: ["late"], top: null, line: 3 },
    { callee: "new ClipSampler", within: ["C.constructor"], top: null, line: 4 },
    { callee: "checkOption", within: ["C.m"], top: null, line: 4 },
    { callee: "withDefaults", within: [], top: null, line: 5 },
  ]);
  // Inside a door (or a closure in it) and calling what that door may: not late; anywhere else: late.
  const at = (file: string, callee: string, within: string[], top: string | null = null) => ({
    file,
    rule: "option-call" as const,
    line: 1,
    callee,
    within,
    top,
  });
  assert.deepEqual(
    measuredLateChecks([
      at("src/serve/options.ts", "resolveTable", ["resolveServerConfig"]),
      at("src/serve/options.ts", "checkOptions", ["resolveServerConfig"]),
      at("src/dataset/fetch.ts", "withDefaults", ["fix", "resolveFetchOptions"]),
      at("src/dataset/fetch.ts", "defaultsOf", [], "FETCH_DEFAULTS"),
      at("src/dataset/fetch.ts", "defaultsOf", [], "OTHER"),
      at("src/options.ts", "checkOption", ["checkOptions"]),
      at("src/dataset/sampler.ts", "new ClipSampler", ["ClipSampler.fromResolved"]),
      at("src/loader/front/front.ts", "new ClipSampler", ["buildFront"]),
      at("src/loader/plan.ts", "resolveLoaderOptions", ["planLoader"]),
      at("src/loader/loader.ts", "resolveLoaderOptions", ["videoClassificationLoader"]),
    ]).map((m) => m.entry),
    [
      "src/serve/options.ts resolveServerConfig: checkOptions",
      "src/dataset/fetch.ts OTHER: defaultsOf",
      "src/loader/front/front.ts buildFront: new ClipSampler",
      "src/loader/plan.ts planLoader: resolveLoaderOptions",
    ],
  );
});

Deno.test("architecture rules: the values a module exports by name are found, types left out", () => {
  const code = [
    "export function decodeA() {}",
    "export const decodeB = () => 1, other = 2;",
    "function decodeC() {}",
    "export { decodeC, decodeC as decodeD };",
    "export type { T } from './t.ts';",
    "export class K {}",
    "export interface I {}",
    "export type U = number;",
  ].join("\n");
  const names = scanModule("src/x/y.ts", code).flatMap((f) => f.rule === "export" ? [f.name] : []);
  assert.deepEqual(names.sort(), ["K", "decodeA", "decodeB", "decodeC", "decodeD", "other"]);
});

Deno.test("architecture rules: an allowlist fails on a new entry, a gone entry, and disorder; cycles count type-only edges", () => {
  mustShrink("L", ["a", "b", "b"], ["a", "b", "b"]);
  assert.throws(() => mustShrink("L", ["a", "b"], ["a"]), /new: b/);
  assert.throws(() => mustShrink("L", ["a", "a"], ["a"]), /new: a/);
  assert.throws(() => mustShrink("L", ["a"], ["a", "b"]), /no longer found: b/);
  assert.throws(() => mustShrink("L", ["a", "b"], ["b", "a"]), /sorted/);
  const edges = [
    { from: "src/a.ts", to: "src/b.ts", typeOnly: true },
    { from: "src/b.ts", to: "src/a.ts", typeOnly: false },
    { from: "src/b.ts", to: "src/c.ts", typeOnly: false },
  ];
  assert.deepEqual(cyclesOf(edges), [["src/a.ts", "src/b.ts"]]);
  assert.deepEqual(cyclesOf(edges.filter((e) => !e.typeOnly)), []);
});

Deno.test("architecture: no function over 80 lines and no class over 300 in src/ without a `// long:` reason", () => {
  const measured = measuredLong();
  const known = new Map(
    KNOWN_LONG.map((k) => [k.slice(0, k.lastIndexOf(" ")), Number(k.slice(k.lastIndexOf(" ") + 1))]),
  );
  const grew = measured.filter((m) => known.has(m.key) && m.lines > known.get(m.key)!)
    .map((m) => `${m.at} ${m.key} grew to ${m.lines} lines (listed at ${known.get(m.key)})`);
  assert.deepEqual(grew, [], "a listed long function or class may shrink, never grow: split it");
  mustShrink("KNOWN_LONG", measured.map((m) => m.key), [...known.keys()], (k) => {
    const m = measured.find((x) => x.key === k);
    return m === undefined
      ? ""
      : ` at ${m.at}, ${m.lines} lines: split it, or say why above it (// long: ...)`;
  });
});

Deno.test("architecture: no `// long:` reason above a function or class that is not long", () => {
  const stale = FINDINGS.flatMap((f) =>
    f.rule === "stale-long" ? [`${f.file}:${f.line} ${f.name} (${f.lines} lines)`] : []
  );
  assert.deepEqual(stale, [], "remove the stale `// long:` comments");
});

Deno.test("architecture: no import cycle, type-only imports included", () => {
  mustShrink("KNOWN_CYCLES", cyclesOf(EDGES).map((c) => c.join(", ")), KNOWN_CYCLES);
});

Deno.test("architecture: options are checked and defaulted only at their doors", () => {
  const measured = measuredLateChecks();
  mustShrink("KNOWN_LATE_CHECKS", measured.map((m) => m.entry), KNOWN_LATE_CHECKS, (e) => {
    const at = measured.filter((m) => m.entry === e).map((m) => m.at);
    return ` (${at.join(", ")}): resolve it at the door (DOORS) and pass the resolved value down`;
  });
});

Deno.test("architecture: only src/nvdec/ and the decode seam's registration import src/nvdec/", () => {
  mustShrink("KNOWN_NVDEC_IMPORTS", measuredNvdecImports(), KNOWN_NVDEC_IMPORTS);
});

Deno.test("architecture: the clip Worker module exports one decode function", () => {
  const all = decodeExports();
  mustShrink(
    "KNOWN_DECODE_EXPORTS",
    all.filter((n) => KNOWN_DECODE_EXPORTS.includes(n)),
    KNOWN_DECODE_EXPORTS,
  );
  assert.equal(
    all.length - KNOWN_DECODE_EXPORTS.length,
    1,
    `${clipWorkerModule()} exports ${
      all.join(", ")
    }: one decode function (+ KNOWN_DECODE_EXPORTS), taking its ` +
      "decoder from the clip's spec",
  );
});

// `-- --print`: every allowlist as measured now, ready to paste over the lists above.
if (Deno.args.includes("--print")) {
  const list = (name: string, entries: readonly string[]) =>
    console.log(
      `const ${name}: readonly string[] = [\n${entries.map((e) => `  ${JSON.stringify(e)},\n`).join("")}];`,
    );
  list("KNOWN_LONG", measuredLong().sort((x, y) => x.key < y.key ? -1 : 1).map((m) => `${m.key} ${m.lines}`));
  list("KNOWN_CYCLES", cyclesOf(EDGES).map((c) => c.join(", ")).sort());
  list("KNOWN_LATE_CHECKS", measuredLateChecks().map((m) => m.entry).sort());
  list("KNOWN_NVDEC_IMPORTS", measuredNvdecImports());
  const all = decodeExports();
  list("KNOWN_DECODE_EXPORTS", all.filter((n) => n !== (all.includes("decodeClip") ? "decodeClip" : all[0])));
}
