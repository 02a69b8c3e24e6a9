/**
 * Docs on the symbol: every function and public method an entry point exports says what each parameter is
 * (`@param`), what it returns (`@returns`, unless nothing), what it throws when its prose says it throws
 * (`@throws`), and does not send the reader to the module docs instead; every function and class of the root
 * (`mod.ts`) has an `@example`. The root has no gaps; the subpaths' gaps are listed in `KNOWN_UNDOCUMENTED`,
 * which may only shrink (`deno test -A tests/public_docs_test.ts -- --print` prints it as measured).
 */
import assert from "node:assert/strict";

const ROOT = new URL("../", import.meta.url);
const denoJson = JSON.parse(Deno.readTextFileSync(new URL("deno.json", ROOT))) as {
  exports: Record<string, string>;
};

interface Tag {
  kind: string;
  name?: string;
}
interface JsDoc {
  doc?: string;
  tags?: Tag[];
}
interface TsType {
  repr: string;
  value?: { typeParams?: TsType[] };
}
interface FnDef {
  params: unknown[];
  returnType?: TsType;
}

/** A return type as written: `Promise<void>`, not `Promise`. */
function typeText(t: TsType | undefined): string | undefined {
  if (t === undefined) return undefined;
  const params = typeof t.value === "object" && t.value !== null ? t.value.typeParams : undefined;
  return params === undefined ? t.repr : `${t.repr}<${params.map(typeText).join(", ")}>`;
}
interface Declaration {
  kind: string;
  jsDoc?: JsDoc;
  def?: {
    params?: unknown[];
    returnType?: TsType;
    constructors?: { jsDoc?: JsDoc; params: unknown[]; accessibility?: string }[];
    methods?: { name: string; kind: string; jsDoc?: JsDoc; accessibility?: string; functionDef: FnDef }[];
  };
}

/** A function's (or method's) gaps: the tags its signature and prose call for that it lacks. */
export function gapsOf(doc: JsDoc | undefined, params: number, returns: string | undefined): string[] {
  const text = doc?.doc ?? "";
  const tags = (doc?.tags ?? []).map((t) => t.kind);
  const gaps: string[] = [];
  if (text.trim() === "") return ["no doc"];
  const documented = tags.filter((k) => k === "param").length;
  if (documented < params) gaps.push(`@param ${documented}/${params}`);
  const nothing = returns === undefined || /^(void|Promise<void>|undefined|never)$/.test(returns);
  if (!nothing && !tags.includes("return")) gaps.push("@returns");
  if (/\bthrows?\b/i.test(text) && !tags.includes("throws")) gaps.push("@throws");
  if (/\b(see|in) the module docs?\b/i.test(text)) gaps.push("refers to the module docs");
  return gaps;
}

/** Every gap of the symbols `file` exports, as `name: gap, gap` (methods as `Class.method`). */
async function gapsOfEntry(file: string, needExamples: boolean): Promise<string[]> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["doc", "--json", file],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  const nodes = JSON.parse(new TextDecoder().decode(out.stdout)).nodes as Record<
    string,
    { symbols: { name: string; declarations: Declaration[] }[] }
  >;
  const found: string[] = [];
  const note = (name: string, gaps: string[]) => {
    if (gaps.length > 0) found.push(`${name}: ${gaps.join(", ")}`);
  };
  for (const { symbols } of Object.values(nodes)) {
    for (const { name, declarations } of symbols) {
      for (const d of declarations) {
        const example = needExamples && !(d.jsDoc?.tags ?? []).some((t) => t.kind === "example");
        if (d.kind === "function") {
          note(name, [
            ...gapsOf(d.jsDoc, d.def!.params!.length, typeText(d.def!.returnType)),
            ...(example ? ["@example"] : []),
          ]);
        }
        if (d.kind !== "class") continue;
        // An error class's example is its root's (SluiceError): how to tell the classes apart.
        const isError = /Error$|^PipelineFailure$/.test(name) && name !== "SluiceError";
        if (example && !isError) note(name, ["@example"]);
        for (const c of d.def!.constructors ?? []) {
          if (c.accessibility === "private" || /^Use \{@link /.test(c.jsDoc?.doc ?? "")) continue;
          note(`${name}.constructor`, gapsOf(c.jsDoc, c.params.length, undefined));
        }
        for (const m of d.def!.methods ?? []) {
          if (m.accessibility === "private" || m.kind !== "method") continue;
          const returns = typeText(m.functionDef.returnType);
          note(`${name}.${m.name}`, gapsOf(m.jsDoc, m.functionDef.params.length, returns));
        }
      }
    }
  }
  return [...new Set(found)].sort();
}

/** The gaps of the subpath entry points today, `entry symbol: gaps`; may only shrink. */
const KNOWN_UNDOCUMENTED: readonly string[] = [];

const measured = (async () => {
  const all: string[] = [];
  for (const [sub, file] of Object.entries(denoJson.exports)) {
    const gaps = await gapsOfEntry(file, sub === ".");
    all.push(...gaps.map((g) => `${sub} ${g}`));
  }
  return all.sort();
})();

if (Deno.args.includes("--print")) {
  console.log(
    `const KNOWN_UNDOCUMENTED: readonly string[] = [\n${
      (await measured).filter((g) => !g.startsWith(". ")).map((g) => `  ${JSON.stringify(g)},\n`).join("")
    }];`,
  );
}

Deno.test("public docs: gapsOf asks for the tags a signature and its prose call for", () => {
  assert.deepEqual(gapsOf(undefined, 0, "void"), ["no doc"]);
  assert.deepEqual(gapsOf({ doc: "Does it." }, 0, "void"), []);
  assert.deepEqual(gapsOf({ doc: "Does it; see the module docs.", tags: [] }, 2, "number"), [
    "@param 0/2",
    "@returns",
    "refers to the module docs",
  ]);
  assert.deepEqual(
    gapsOf({ doc: "Throws when bad.", tags: [{ kind: "param" }, { kind: "return" }] }, 1, "Promise<X>"),
    ["@throws"],
  );
  assert.deepEqual(gapsOf({ doc: "x", tags: [{ kind: "return" }] }, 0, "Promise<void>"), []);
});

Deno.test("public docs: every function, method and class of the root is documented on the symbol", async () => {
  assert.deepEqual((await measured).filter((g) => g.startsWith(". ")), []);
});

Deno.test("public docs: the subpaths' gaps are the known ones, fewer or as many (KNOWN_UNDOCUMENTED)", async () => {
  const now = (await measured).filter((g) => !g.startsWith(". "));
  assert.deepEqual([...KNOWN_UNDOCUMENTED].sort(), [...KNOWN_UNDOCUMENTED], "KNOWN_UNDOCUMENTED is sorted");
  const known = new Set(KNOWN_UNDOCUMENTED);
  assert.deepEqual(now.filter((g) => !known.has(g)), [], "new gaps: document them");
  const still = new Set(now);
  assert.deepEqual(
    KNOWN_UNDOCUMENTED.filter((g) => !still.has(g)),
    [],
    "documented since: remove them from KNOWN_UNDOCUMENTED (-- --print)",
  );
});
