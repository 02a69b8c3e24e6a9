/**
 * Writes what Python is told of `sluice.Loader`'s keywords, made from the options' tables (`pythonOptionList`,
 * what `src/serve/main.ts --options` prints): the table of keywords in python/README.md (between the
 * `options-table` markers), and python/sluice/_signature.py, the keywords typed and documented (a `TypedDict`
 * per group, `Literal`s for enums, defaults) in a stub `__init__` that type checkers read and `inspect.signature`
 * shows. With `--check`, writes nothing and exits 1 when either is not what the tables make (the Python tests
 * run this).
 *
 *     deno run -A scripts/python_options_table.ts [--check]
 * @module
 */

import { pythonOptionList } from "../src/serve/options.ts";
import { PYTHON_WORDS } from "../src/python_options.ts";
import { defaultText, type OptionSpec } from "../src/options.ts";

const README = new URL("../python/README.md", import.meta.url);
const SIGNATURE = new URL("../python/sluice/_signature.py", import.meta.url);
const LOADER = new URL("../python/sluice/_loader.py", import.meta.url);
const STUB_START = "# typed-init: made by scripts/python_options_table.ts from the options' tables";
const STUB_END = "# typed-init end";
const START = "<!-- options-table: made by scripts/python_options_table.ts from the options' tables -->";
const END = "<!-- options-table end -->";

/** A default as Python writes it. */
function pythonDefault(spec: OptionSpec): string {
  if (spec.required) return "required";
  if (spec.defaultText !== undefined || spec.default === undefined) return defaultText(spec) ?? "not set";
  return `\`${PYTHON_WORDS.show(spec.default)}\``;
}

/** The markdown table: one row per keyword. */
export function pythonOptionsTable(): string {
  const cell = (s: string) => s.replaceAll("|", "\\|");
  const rows = pythonOptionList().map(({ keyword, accepts, spec }) => {
    const s = spec as unknown as OptionSpec;
    return `| \`${keyword}\` | ${cell(accepts)} | ${cell(pythonDefault(s))} | ${cell(s.doc)} |`;
  });
  return ["| keyword | value | default | what it is |", "| --- | --- | --- | --- |", ...rows].join("\n");
}

/** `markdown` as `deno fmt` leaves it (so the check and the formatter agree). */
async function formatted(markdown: string): Promise<string> {
  const fmt = new Deno.Command(Deno.execPath(), {
    args: ["fmt", "--ext=md", "-"],
    cwd: new URL("..", import.meta.url),
    stdin: "piped",
    stdout: "piped",
  }).spawn();
  const writer = fmt.stdin.getWriter();
  await writer.write(new TextEncoder().encode(markdown));
  await writer.close();
  const out = await fmt.output();
  if (!out.success) throw new Error("deno fmt failed on python/README.md");
  return new TextDecoder().decode(out.stdout);
}

/**
 * The types of the client's own keywords, checked in Python; their defaults and docs are python/README.md's
 * `client-keywords` table, which python/tests/test_options.py holds to the real `__init__`.
 */
const CLIENT_TYPES: Record<string, string> = {
  dataset: "Optional[Union[str, os.PathLike[str]]]",
  socket: "Optional[str]",
  copy: "bool",
  pin_memory: "bool",
  device: "Optional[int]",
  timeout: "Optional[float]",
  node: "bool",
};

/** The client's own keywords from the README's table: name, annotation, default, doc. */
function clientKeywords(readme: string): [string, string, string, string][] {
  const table = readme.slice(
    readme.indexOf("<!-- client-keywords"),
    readme.indexOf("<!-- client-keywords end -->"),
  );
  return [...table.matchAll(/^\|\s*`(\w+)`\s*\|\s*`([^`]+)`\s*\|\s*(.*?)\s*\|$/gm)].map(
    ([, name, dflt, doc]) => {
      const type = CLIENT_TYPES[name];
      if (type === undefined) throw new Error(`python/README.md: client keyword ${name} has no type here`);
      return [name, type, dflt, doc.replaceAll("\\|", "|")];
    },
  );
}

/** The Python annotation of an option's values; `groups` names the `TypedDict` of each group keyword. */
function pythonType(spec: OptionSpec, keyword: string): string {
  switch (spec.kind) {
    case "integer":
      return spec.words === undefined
        ? "int"
        : `Union[int, ${spec.words.map((w) => `Literal[${JSON.stringify(w)}]`).join(", ")}]`;
    case "number":
      return "float";
    case "boolean":
      return "bool";
    case "enum":
      return `Literal[${spec.values.map((v) => JSON.stringify(v)).join(", ")}]`;
    case "numbers":
      return "Sequence[float]";
    case "either":
      return `Union[${spec.of.map((o) => pythonType(o as OptionSpec, keyword)).join(", ")}]`;
    case "group":
      return typedDictName(keyword);
    default:
      return "str";
  }
}

/** The `TypedDict` of a group keyword: `clip` → `ClipKeywords`, `max_failures` → `MaxFailuresKeywords`. */
function typedDictName(keyword: string): string {
  return keyword.split("_").map((w) => w[0].toUpperCase() + w.slice(1)).join("") + "Keywords";
}

/** A doc line with the default said in words where there is no constant one. */
function pythonDoc(spec: OptionSpec, inGroup = false): string {
  const d = spec.required ? (inGroup ? "required" : "required with a dataset") : spec.defaultText;
  return d === undefined ? spec.doc : `${spec.doc} (default: ${d})`;
}

/** python/sluice/_signature.py: the keywords, typed and documented, as Python reads them. */
export function pythonSignature(readme: string): { module: string; stub: string[] } {
  const rows = pythonOptionList().filter((r) => r.keyword !== "dataset");
  const groups = new Map<string, { key: string; spec: OptionSpec }[]>();
  const top: { keyword: string; spec: OptionSpec }[] = [];
  for (const r of rows) {
    const m = /^([a-z_]+)\["([a-z_]+)"\]$/.exec(r.keyword);
    const spec = r.spec as unknown as OptionSpec;
    if (m === null) top.push({ keyword: r.keyword, spec });
    else groups.set(m[1], [...groups.get(m[1]) ?? [], { key: m[2], spec }]);
  }
  // a group's options that are keywords of their own too (num_frames) may also go in its dict (clip={...})
  for (const [group, keys] of groups) {
    const own = rows.filter((r) => r.path.startsWith(`${group}.`) && !r.keyword.includes("["))
      .map((r) => ({ key: r.keyword, spec: r.spec as unknown as OptionSpec }));
    groups.set(group, [...own, ...keys]);
  }
  const out = [
    '"""The keywords of ``sluice.Loader``, typed and documented: made by scripts/python_options_table.ts from the',
    "options' tables and python/README.md's client keywords (do not edit; ``deno task python-options`` writes it",
    "again, with the same ``__init__`` for type checkers in _loader.py, where a misspelled keyword is an error).",
    "``inspect.signature(sluice.Loader)`` shows :func:`typed_init`; at run time the server checks every keyword",
    'once, and names a wrong one as it was written."""',
    "from __future__ import annotations",
    "",
    "import os",
    "from typing import Literal, Optional, Sequence, TypedDict, Union",
  ];
  for (const [group, keys] of groups) {
    const hasTop = top.some((t) => t.keyword === group);
    out.push("", "", `class ${typedDictName(group)}(TypedDict, total=False):`);
    out.push(`    """The keys of \`\`${group}=\`\`${hasTop ? " as a dict" : ""}."""`, "");
    for (const { key, spec } of keys) {
      out.push(`    ${key}: ${pythonType(spec, key)}`, `    """${pythonDoc(spec, true)}"""`, "");
    }
    out.pop();
    // a group with no keyword of its own (clip, audio, ...) is one as a whole
    if (!hasTop) {
      top.push({ keyword: group, spec: { kind: "group", doc: `see ${typedDictName(group)}` } as never });
    }
  }
  const [dataset, ...client] = clientKeywords(readme);
  const params: string[] = [
    "self",
    `${dataset[0]}: ${dataset[1]} = ${dataset[2]}`,
    "*",
    ...client.map(([n, t, d]) => `${n}: ${t} = ${d}`),
  ];
  const docs: string[] = [dataset, ...client].map(([n, , , doc]) => `${n}: ${doc}`);
  for (const { keyword, spec } of top) {
    const type = pythonType(spec, keyword);
    const constant = !spec.required && spec.default !== undefined && spec.kind !== "group";
    params.push(
      constant
        ? `${keyword}: ${type} = ${PYTHON_WORDS.show(spec.default)}`
        : `${keyword}: Optional[${type}] = None`,
    );
    docs.push(`${keyword}: ${spec.kind === "group" && !("default" in spec) ? spec.doc : pythonDoc(spec)}`);
  }
  out.push("", "");
  out.push("def typed_init(", ...params.map((p) => `    ${p},`), ") -> None:");
  out.push(
    '    """Starts a server for ``dataset`` (or connects to ``socket``) and loads batches; see ``sluice.Loader``.',
    "",
  );
  out.push("    Keywords:", "", ...docs.map((d) => `    - ${d}`), '    """');
  // Loader.__init__ for type checkers (an assigned function would make the class Any to mypy)
  const stub = [
    STUB_START,
    "def __init__(",
    ...params.map((p) => `    ${p.replace(/\b(\w+Keywords)\b/g, "_signature.$1")},`),
    ") -> None: ...",
    STUB_END,
  ].map((l) => `        ${l}`);
  return { module: out.join("\n") + "\n", stub };
}

/** `loader` (python/sluice/_loader.py) with the typed `__init__` between its markers. */
function withStub(loader: string, stub: string[]): string {
  const lines = loader.split("\n");
  const a = lines.findIndex((l) => l.trim() === STUB_START),
    b = lines.findIndex((l) => l.trim() === STUB_END);
  if (a < 0 || b < a) {
    throw new Error(`python/sluice/_loader.py lacks the markers ${STUB_START} … ${STUB_END}`);
  }
  return [...lines.slice(0, a), ...stub, ...lines.slice(b + 1)].join("\n");
}

if (import.meta.main) {
  const text = Deno.readTextFileSync(README);
  const a = text.indexOf(START), b = text.indexOf(END);
  if (a < 0 || b < a) {
    console.error(`python/README.md lacks the markers ${START} … ${END}`);
    Deno.exit(1);
  }
  const fresh = await formatted(
    `${text.slice(0, a + START.length)}\n\n${pythonOptionsTable()}\n\n${text.slice(b)}`,
  );
  const sig = pythonSignature(text);
  if (Deno.args.includes("--check")) {
    if (fresh !== text) {
      console.error(
        "python/README.md's keyword table is stale: run deno run -A scripts/python_options_table.ts",
      );
      Deno.exit(1);
    }
    const loader = Deno.readTextFileSync(LOADER);
    if (Deno.readTextFileSync(SIGNATURE) !== sig.module || withStub(loader, sig.stub) !== loader) {
      console.error(
        "python/sluice/_signature.py or the typed __init__ of _loader.py is stale: run deno run -A " +
          "scripts/python_options_table.ts",
      );
      Deno.exit(1);
    }
  } else {
    Deno.writeTextFileSync(README, fresh);
    Deno.writeTextFileSync(SIGNATURE, sig.module);
    Deno.writeTextFileSync(LOADER, withStub(Deno.readTextFileSync(LOADER), sig.stub));
  }
}
