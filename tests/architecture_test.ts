/**
 * The floor plan, checked: `src/` is a stack of rooms, one concept each, and imports run downward only (a room
 * imports the rooms below it, never one above); no module takes part in an import cycle except through type-only
 * imports. `ffi/` sits between the root modules of `src/` (errors) and the rooms. Side-effect imports, re-exports,
 * Worker modules named with `new URL("…", import.meta.url)` or `import.meta.resolve("…")` and dynamic
 * `import("…")` count as imports; a module importing one outside `src/` and `ffi/` (`mod.ts`, `scripts/`) imports
 * above every room. The rooms are declared once, in `scripts/architecture_map.ts`, which also writes
 * docs/architecture.md (checked current here).
 */
import assert from "node:assert/strict";
import { expectedPage, ROOMS as FLOOR_PLAN } from "../scripts/architecture_map.ts";

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
  const dir = file.slice(0, file.lastIndexOf("/"));
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

Deno.test("architecture: no import cycle between modules except through type-only imports", () => {
  const next = new Map<string, string[]>();
  for (const e of EDGES) if (!e.typeOnly) next.set(e.from, [...next.get(e.from) ?? [], e.to]);
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
  for (const f of FILES) if (!index.has(f)) visit(f);
  assert.deepEqual(cycles, []);
});

Deno.test("architecture: the checks see real edges (a room above importing one below is found)", () => {
  // Guards the parser: if it stopped finding imports, the two checks above would pass on nothing.
  assert.ok(EDGES.some((e) => e.from === "src/loader/loader.ts" && e.to === "src/dataset/dataset.ts"));
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

Deno.test("architecture: files stay small: no module of src/ over 600 lines but the symbol and layout tables", () => {
  // Tables (a library's symbols, struct layouts) are long because the library is; behaviour is not.
  const tables = /^ffi\/|\/(symbols|layouts)\.ts$/;
  const long = walk("src").filter((f) => !tables.test(f))
    .map((f) => [f, Deno.readTextFileSync(ROOT + f).split("\n").length - 1] as const)
    .filter(([, n]) => n > 600);
  assert.deepEqual(long, [], "split these by concept");
});
